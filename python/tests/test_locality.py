# SPDX-License-Identifier: BSD-3-Clause
# Locality, links and binding from Python (docs/python.md, API table; docs/reference.md,
# "Locality", "Links", "Binding"): Device.locality, Device.link(), Device.bind(),
# Context.topology_source, checked against hdal-ls --json for the same devices.
# The GPUs are the fake CUDA driver's (tests/fakes/cuda/), placed in hwloc's own
# topologies of real machines (tests/topologies/) through HWLOC_XMLFILE; each
# scenario runs in a fresh interpreter, since the driver and hwloc read their
# variables once per process, and a binding is the process's.
import inspect
import json
import os
import subprocess
import sys

import pytest

import hdal

TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "topologies")
DGX2 = os.path.join(TOPOLOGIES, "nvidiaDGX2.xml")
# Four of its V100s: NVSwitches join any two, NV6 at 150000 MB/s.
DGX2_BUSES = "0000:34:00.0,0000:36:00.0,0000:39:00.0,0000:3b:00.0"
EM64T = os.path.join(TOPOLOGIES, "24em64t-2n6c2t-pci.xml")
# Its function-0 PCI devices, as tests/hdal-ls/hdal-ls-links.sh gives them to the fake driver:
# 04, 05, 06 and 01:03 under the host bridge of NUMA node 0, 14 and 11 under that of node 1.
EM64T_BUSES = "0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:01:03.0,0000:14:00.0,0000:11:00.0"
KINDS = {"same", "fabric", "pix", "pxb", "phb", "node", "sys"}

# What a scenario prints: every device's locality, every ordered pair's link, the topology source.
SCENARIO = """
import json, hdal
ctx = hdal.Context()
devs = ctx.devices()
def link(a, b):
    try:
        return list(a.link(b))
    except hdal.Error as e:
        return [e.code, str(e)]
def locality(d):
    loc = d.locality
    if loc is None:
        return None
    assert isinstance(loc, hdal.Locality) and isinstance(loc.numa_nodes, tuple)
    return {"cpuset": loc.cpuset, "numa_nodes": list(loc.numa_nodes), "pcie_root": loc.pcie_root}
print(json.dumps({
    "locality": [locality(d) for d in devs],
    "links": {"%d %d" % (a.id, b.id): link(a, b) for a in devs for b in devs if a != b},
    "topology_source": list(ctx.topology_source),
    "platforms": [d.platform for d in devs],
}))
"""

# Shared with the binding's interpreter.
HELPERS = '''
def list_cpus(text):
    """hwloc's list syntax ("0-3,8") as a set."""
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def bitmap_cpus(text):
    """hwloc_bitmap_snprintf's bitmap ("0x00000001,0x0"; a run of empty words left empty) as a set."""
    out = set()
    for i, w in enumerate(reversed(text.split(","))):
        v = int(w, 16) if w else 0
        out.update(32 * i + b for b in range(32) if v >> b & 1)
    return out
'''
exec(HELPERS)


def fake_cuda():
    lib = os.path.join(os.environ.get("HDAL_TEST_MODULES", ""), "fakecuda.so")
    if not os.path.exists(lib):
        pytest.skip("no fake CUDA driver (%s): a build without the CUDA backend" % lib)
    return lib


def hdal_ls():
    ls = os.environ.get("HDAL_LS")
    if not ls or not os.path.exists(ls):
        pytest.skip("no hdal-ls")
    return ls


def gpu_env(xml, buses, **more):
    if xml and not os.path.exists(xml):
        pytest.skip("no %s: hdal's source tree is not beside the tests" % xml)
    env = {"HDAL_BACKENDS": "cpu,cuda", "HDAL_CUDA_LIBRARY": fake_cuda(), "HWLOC_XMLFILE": xml,
           "FAKECUDA_DEVICES": str(len(buses.split(","))), "FAKECUDA_PCI_BUS_IDS": buses,
           "HDAL_DEVICE_SELECTOR": "", "HWLOC_SYNTHETIC": "", "HWLOC_THISSYSTEM": "", "HWLOC_FSROOT": "",
           "FAKECUDA_PEER": "", "FAKECUDA_UUIDS": "", "CUDA_VISIBLE_DEVICES": ""}
    env.update(more)
    return env


def environ(env):
    """os.environ with env's variables set (an empty value unsets one)."""
    e = {k: v for k, v in os.environ.items() if k not in env}
    e.update({k: v for k, v in env.items() if v})
    return e


def run(code, env):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ(env), timeout=300)
    assert p.returncode == 0 and p.stderr == "", "exit status %d\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


def scenario(env):
    """SCENARIO's JSON and hdal-ls --json's, both under env."""
    out = json.loads(run(SCENARIO, env))
    ls = subprocess.run([hdal_ls(), "--json"], capture_output=True, text=True, env=environ(env), timeout=300)
    assert ls.returncode == 0, ls.stderr
    return out, json.loads(ls.stdout)


def check_against_hdal_ls(out, ls):
    """Python's localities and links are hdal-ls --json's, device for device and pair for pair."""
    assert out["platforms"] == [d["platform"] for d in ls["devices"]]
    assert out["locality"] == [d["locality"] for d in ls["devices"]]
    assert ls["links"]
    for entry in ls["links"]:
        a, b = entry.pop("a"), entry.pop("b")
        kind, peer, fabric, bw, n = out["links"]["%d %d" % (a, b)]
        assert {"kind": kind, "peer_access": peer, "fabric": fabric, "bandwidth_mbps": bw, "fabric_links": n} == entry
        assert out["links"]["%d %d" % (b, a)] == out["links"]["%d %d" % (a, b)], (a, b)  # both ways alike
    assert out["topology_source"] == [ls["topology_source"]["type"], ls["topology_source"]["detail"]]


def gpu_pairs(out):
    gpus = [i for i, p in enumerate(out["platforms"]) if p == "cuda"]
    return gpus, {(a, b): out["links"]["%d %d" % (a, b)] for a in gpus for b in gpus if a != b}


# ---- Types, the CPU alone, errors ----

def test_named_tuples_and_signatures():
    assert hdal.Locality.n_fields == 3 and hdal.Link.n_fields == 5
    assert hdal.Locality.__match_args__ == ("cpuset", "numa_nodes", "pcie_root")
    assert hdal.Link.__match_args__ == ("kind", "peer_access", "fabric", "bandwidth_mbps", "fabric_links")
    assert hdal.Locality.__module__ == "hdal" and hdal.Link.__module__ == "hdal"
    assert {"Locality", "Link"} <= set(hdal.__all__)
    assert str(inspect.signature(hdal.Device.link)) == "(self, other, /)"
    assert str(inspect.signature(hdal.Device.bind)) == "(self, /, *, process=False, memory=True)"
    for doc in (hdal.Device.locality.__doc__, hdal.Context.topology_source.__doc__, hdal.Device.link.__doc__,
                hdal.Device.bind.__doc__):
        assert doc and len(doc) > 100


def test_cpu_locality_is_its_cpuset_and_numa_node(cpu_ctx):
    for d in cpu_ctx.devices():
        loc = d.locality
        assert isinstance(loc, hdal.Locality) and isinstance(loc, tuple)
        cpuset, nodes, root = loc
        assert (cpuset, nodes, root) == (loc.cpuset, loc.numa_nodes, loc.pcie_root)
        assert cpuset.startswith("0x") and root is None
        if "numa_os_index" in d.attributes:
            assert nodes == (int(d.attributes["numa_os_index"]),)
        assert bitmap_cpus(cpuset) == list_cpus(d.attributes["cpuset"])  # one set, two spellings
        assert d.locality == loc  # kept: the same answer again
    assert bitmap_cpus("0x00000001,0x0") == {32} and bitmap_cpus("0xffffffff,,0x0") == set(range(64, 96))
    assert list_cpus("0-2,5") == {0, 1, 2, 5}


def test_locality_of_this_system_is_hdal_ls_s():
    out = json.loads(run(SCENARIO, {"HDAL_BACKENDS": "cpu", "HWLOC_XMLFILE": "", "HWLOC_SYNTHETIC": "",
                                    "HWLOC_FSROOT": "", "HWLOC_THISSYSTEM": "", "HDAL_DEVICE_SELECTOR": ""}))
    assert out["topology_source"] == ["system", None]
    ls = subprocess.run([hdal_ls(), "-b", "cpu", "--json"], capture_output=True, text=True,
                        env=environ({"HWLOC_XMLFILE": "", "HWLOC_SYNTHETIC": "", "HWLOC_FSROOT": "",
                                     "HWLOC_THISSYSTEM": "", "HDAL_DEVICE_SELECTOR": ""}))
    assert ls.returncode == 0, ls.stderr
    assert out["locality"] == [d["locality"] for d in json.loads(ls.stdout)["devices"]]


def test_link_errors_are_hdal_s_messages():
    a, b = hdal.Context(backends="cpu"), hdal.Context(backends="cpu")
    d, e = a.device(0), b.device(0)
    with pytest.raises(hdal.Error) as err:
        d.link(d)
    assert (err.value.code, str(err.value)) == ("INVALID_ARGUMENT", "hdal_device_link: a and b are one device (0)")
    with pytest.raises(hdal.Error) as err:
        d.link(a.device(0))  # another Python object, the same device
    assert str(err.value) == "hdal_device_link: a and b are one device (0)"
    with pytest.raises(hdal.Error) as err:
        d.link(e)
    assert (err.value.code, str(err.value)) == ("INVALID_ARGUMENT",
                                                "hdal_device_link: devices 0 and 0 are of two contexts")
    for bad in (None, 0, "cpu", (1, 0)):
        with pytest.raises(TypeError, match=r"link\(\): other must be an hdal.Device, got "):
            d.link(bad)
    with pytest.raises(TypeError):
        d.link()
    with pytest.raises(TypeError):
        d.bind(True)  # keywords only: bind(process=True)
    with pytest.raises(TypeError):
        d.bind(thread=True)


def cpu_and_ifrttest():
    """A context of the CPU and the test module ifrttest, whose devices nothing places; the CPU alone without it."""
    try:
        return hdal.Context(backends="cpu,ifrttest")
    except hdal.Error:  # no ifrttest module on the module path: not a backend name
        return hdal.Context(backends="cpu")


def test_unplaced_devices_have_no_locality():
    ctx = cpu_and_ifrttest()
    ifrt = [d for d in ctx.devices() if d.platform == "ifrttest"]
    if not ifrt:
        pytest.skip("no ifrttest module on the module path")
    assert [d.locality for d in ifrt] == [None] * len(ifrt)  # neither a bus id nor a cpuset places them
    # Nothing nearer is known; two backends: no peer access.
    assert ifrt[0].link(ctx.device(0)) == ("sys", False, None, None, None)
    assert ifrt[0].link(ifrt[1]).kind == "sys"


# ---- GPUs in real machines' topologies ----

def test_dgx2_fabric_and_peer_groups():
    out, ls = scenario(gpu_env(DGX2, DGX2_BUSES, FAKECUDA_PEER="0-1,2-3"))
    check_against_hdal_ls(out, ls)
    gpus, pairs = gpu_pairs(out)
    assert len(gpus) == 4
    for (a, b), link in pairs.items():
        kind, peer, fabric, bw, n = link
        assert (kind, fabric, bw, n) == ("fabric", "nvlink", 150000, 6), (a, b, link)
        assert peer == ((a - gpus[0]) // 2 == (b - gpus[0]) // 2), (a, b, link)  # groups 0-1 and 2-3
    assert out["topology_source"] == ["xml", DGX2]
    for g in gpus:  # GPUs 34 to 3b hang off the first package's PCIe tree: NUMA node 0
        assert out["locality"][g]["numa_nodes"] == [0] and out["locality"][g]["pcie_root"].startswith("pci0000:")
    # A CPU device and a GPU: no fabric, no peer access (two backends).
    cpu_gpu = out["links"]["%d %d" % (0, gpus[0])]
    assert cpu_gpu[0] in KINDS and cpu_gpu[1:] == [False, None, None, None]


@pytest.mark.parametrize("peer", ["none", "fail"])
def test_dgx2_without_peer_access(peer):
    out, ls = scenario(gpu_env(DGX2, DGX2_BUSES, FAKECUDA_PEER=peer))
    check_against_hdal_ls(out, ls)
    _, pairs = gpu_pairs(out)
    assert {tuple(link) for link in pairs.values()} == {("fabric", False, "nvlink", 150000, 6)}


def test_pci_tree_kinds():
    out, ls = scenario(gpu_env(EM64T, EM64T_BUSES))
    check_against_hdal_ls(out, ls)
    gpus, pairs = gpu_pairs(out)
    assert len(gpus) == 6
    node0, node1 = gpus[:4], gpus[4:]
    for (a, b), link in pairs.items():
        one_bridge = (a in node0) == (b in node0)
        assert link == ["phb" if one_bridge else "sys", True, None, None, None], (a, b, link)
    roots = {out["locality"][g]["pcie_root"] for g in node0}, {out["locality"][g]["pcie_root"] for g in node1}
    assert roots == ({"pci0000:00"}, {"pci0000:10"})
    assert [out["locality"][g]["numa_nodes"] for g in gpus] == [[0]] * 4 + [[1]] * 2


def test_unknown_bus_id_and_synthetic_topology():
    out, ls = scenario(gpu_env(DGX2, "0000:34:00.0,0000:99:00.0"))
    check_against_hdal_ls(out, ls)
    gpus, pairs = gpu_pairs(out)
    assert out["locality"][gpus[0]] is not None and out["locality"][gpus[1]] is None
    assert pairs[(gpus[0], gpus[1])][0] == "sys"
    out, ls = scenario(gpu_env("", "0000:34:00.0,0000:36:00.0", HWLOC_SYNTHETIC="pack:2 core:2 pu:1"))
    check_against_hdal_ls(out, ls)
    gpus, pairs = gpu_pairs(out)
    assert [out["locality"][g] for g in gpus] == [None, None]
    assert {link[0] for link in pairs.values()} == {"sys"}
    assert out["topology_source"] == ["synthetic", "pack:2 core:2 pu:1"]


# ---- Binding ----

BIND = HELPERS + """
import os, threading, hdal
allowed = os.sched_getaffinity(0)
ctx = hdal.Context(backends="cpu")
done = 0
for d in ctx.devices():
    want = list_cpus(d.attributes["cpuset"]) & allowed
    assert bitmap_cpus(d.locality.cpuset) == list_cpus(d.attributes["cpuset"])
    if not want:
        continue  # PERMISSION_DENIED: none of its CPUs is this process's
    assert d.bind(memory=False) is None
    assert os.sched_getaffinity(0) == want, (d, os.sched_getaffinity(0), want)
    assert d.bind() is None  # memory too: the device's nodes (nothing to do on one node)
    assert os.sched_getaffinity(0) == want
    # process=True: every thread, one started before the call too.
    seen, go = [], threading.Event()
    def reader():
        go.wait()
        seen.append(os.sched_getaffinity(0))
    t = threading.Thread(target=reader)
    t.start()
    assert d.bind(process=True, memory=False) is None
    go.set()
    t.join()
    assert seen == [want] and os.sched_getaffinity(0) == want
    done += 1
assert done
print("ok")
"""


def test_bind_puts_the_thread_on_the_device_s_cpus():
    # This machine's topology: hwloc binds on the machine it runs on.
    out = run(BIND, {"HWLOC_XMLFILE": "", "HWLOC_SYNTHETIC": "", "HWLOC_FSROOT": "", "HWLOC_THISSYSTEM": "",
                     "HDAL_DEVICE_SELECTOR": ""})
    assert out == "ok\n"


BIND_REFUSALS = """
import json, hdal
try:
    ctx = hdal.Context(backends="cpu,cuda,ifrttest")
except hdal.Error:  # no ifrttest module on the module path
    ctx = hdal.Context(backends="cpu,cuda")
out = []
for d in ctx.devices():
    if d.platform != "cpu":
        try:
            d.bind(memory=False)
            out.append([d.id, d.platform, d.kind, "bound"])
        except hdal.Error as e:
            out.append([d.id, d.platform, d.kind, e.code, str(e)])
print(json.dumps(out))
"""


def test_bind_refusals_are_hdal_s_messages():
    env = gpu_env(DGX2, "0000:34:00.0,0000:99:00.0")
    gpu0 = json.loads(run(BIND_REFUSALS, env))[0]
    # Another machine's topology: refused before anything is bound.
    assert gpu0[1:4] == ["cuda", "Fake GPU 0", "FAILED_PRECONDITION"]
    assert gpu0[4] == ("hdal_device_bind: device %d (cuda, Fake GPU 0): hwloc's topology is not this machine's "
                       "(HWLOC_XMLFILE=%s): its CPUs are another machine's, and hwloc binds on this machine only "
                       "(HWLOC_THISSYSTEM=1 says the topology is this machine's)" % (gpu0[0], DGX2))
    # Said to be this machine's: what the topology cannot place is NOT_FOUND, in the locality's words.
    env["HWLOC_THISSYSTEM"] = "1"
    got = json.loads(run(BIND_REFUSALS, env))
    gpu1 = got[1]
    assert gpu1[1:4] == ["cuda", "Fake GPU 1", "NOT_FOUND"]
    assert gpu1[4] == ("hdal_device_bind: device %d (cuda, Fake GPU 1): hwloc's topology has no PCI object with "
                       "bus id 0000:99:00.0" % gpu1[0])
    for d in got[2:]:  # the ifrttest module's devices, where it is on the module path
        assert d[1] == "ifrttest" and d[3] == "NOT_FOUND"
        assert d[4] == ("hdal_device_bind: device %d (ifrttest, %s): neither a pci_bus_id nor a cpuset attribute "
                        "places it in the machine" % (d[0], d[2]))


def test_no_leak_of_answers_or_errors():
    import gc
    import tracemalloc
    ctx = cpu_and_ifrttest()
    devs = ctx.devices()

    def round_():
        for d in devs:
            d.locality
            try:
                d.link(d)
            except hdal.Error:
                pass
        if len(devs) > 1:
            devs[0].link(devs[-1])
        ctx.topology_source

    for _ in range(1000):
        round_()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(20000):
        round_()
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert grown < 64 * 1024, grown
