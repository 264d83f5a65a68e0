# SPDX-License-Identifier: BSD-3-Clause
"""hdal's view of a real GPU machine's topology against nvidia-smi's (issue 48,
on a lent machine; tests/gpu/device-run.sh runs it as its "topo" step):

  python3 topology-real.py HDAL_LS

  * each CUDA GPU's locality (hdal-ls --json) against `nvidia-smi topo -m`'s
    CPU Affinity and NUMA Affinity columns, matched by PCI bus id
    (`nvidia-smi --query-gpu=index,pci.bus_id`).  nvidia-smi says the
    hardware's CPUs; hdal this process's (docs/reference.md, "Locality"), so
    hdal's must be nvidia-smi's within the CPUs this process may use (its
    cgroup's cpuset.cpus.effective, else its affinity);
  * each pair of GPUs: hdal-ls --topology's cell (NV#, PIX, PXB, PHB, NODE,
    SYS: the tool's own labels, read from its matrix) against nvidia-smi's
    (SOC read as SYS);
  * a thread bound near GPU 0 with the Python package (Device.bind, when
    `import hdal` works): its affinity afterwards, which must be GPU 0's
    locality within the allowed CPUs.
Prints both views, then one line per check; the last line is
"topology-real: PASS", "FAIL (n)" or "SKIP (why)".  Exit 0, 1, or 77.
NVIDIA_SMI names another nvidia-smi (a rehearsal's stand-in)."""
import json
import os
import subprocess
import sys
import threading


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()[-500:]))
    return r.stdout


def cpu_list(text):
    """"0-51,104-155" -> set; None for N/A."""
    text = text.strip()
    if not text or text.upper() == "N/A":
        return None
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def hwloc_bitmap(text):
    """hwloc_bitmap_snprintf's "0xffffffff,,0x0000000f": 32-bit words, the highest first, empty ones 0."""
    out, words = set(), text.split(",")
    for i, word in enumerate(reversed(words)):
        v = int(word, 16) if word else 0
        out.update(32 * i + b for b in range(32) if v >> b & 1)
    return out


def bus_id(text):
    """nvidia-smi's "00000000:1B:00.0" and hdal's "0000:1b:00.0" alike: (domain, bus, device, function)."""
    dom, bus, rest = text.strip().lower().split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def allowed_cpus():
    try:
        with open("/proc/self/cgroup") as f:
            path = next(line.split(":", 2)[2].strip() for line in f if line.startswith("0::"))
        with open("/sys/fs/cgroup" + path + "/cpuset.cpus.effective") as f:
            return cpu_list(f.read()), "cgroup cpuset.cpus.effective"
    except (OSError, StopIteration, ValueError):
        return set(os.sched_getaffinity(0)), "the process's affinity"


def nvidia_topo(smi):
    """{index: {"cells": {j: cell}, "cpus": set|None, "nodes": set|None}} from `nvidia-smi topo -m`."""
    lines = [line for line in run([smi, "topo", "-m"]).splitlines() if line.strip()]
    head = [c.strip() for c in lines[0].split("\t")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.split("\t")]
        if not cells[0].startswith("GPU") or not cells[0][3:].isdigit():
            continue
        named = dict(zip(head, cells))
        row = {"cells": {}, "cpus": cpu_list(named.get("CPU Affinity", "")),
               "nodes": cpu_list(named.get("NUMA Affinity", ""))}
        for name, cell in named.items():
            if name.startswith("GPU") and name[3:].isdigit():
                row["cells"][int(name[3:])] = "SYS" if cell == "SOC" else cell
        rows[int(cells[0][3:])] = row
    return rows


def hdal_matrix(text):
    """{(id a, id b): cell} from hdal-ls --topology's "Links:" matrix (rows and columns "D<id>")."""
    lines = text.splitlines()
    if "Links:" not in lines:
        return {}
    rows = lines[lines.index("Links:") + 1:]
    ids = [int(c[1:]) for c in rows[0].split() if c.startswith("D") and c[1:].isdigit()]
    cells = {}
    for row in rows[1:]:
        words = row.split()
        if not words or not words[0].startswith("D") or not words[0][1:].isdigit():
            break
        for b, cell in zip(ids, words[1:1 + len(ids)]):
            cells[(int(words[0][1:]), b)] = cell
    return cells


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    smi = os.environ.get("NVIDIA_SMI", "nvidia-smi")
    view = json.loads(run([argv[1], "-b", "cpu,cuda", "--json"]))
    gpus = {}
    for d in view["devices"]:
        bus = (d.get("attributes") or {}).get("pci_bus_id")
        if d["platform"] == "cuda" and bus:
            gpus[bus_id(bus)] = d
    if not gpus:
        print("topology-real: SKIP (hdal sees no CUDA GPU)")
        return 77
    try:
        index_bus = {int(i): bus_id(b) for i, b in
                     (line.split(",") for line in
                      run([smi, "--query-gpu=index,pci.bus_id", "--format=csv,noheader"]).splitlines() if line.strip())}
        topo = nvidia_topo(smi)
    except (OSError, RuntimeError) as e:
        print("topology-real: SKIP (no nvidia-smi answer: %s)" % e)
        return 77
    topology = run([argv[1], "-b", "cpu,cuda", "--topology"])
    print(topology)
    print(run([smi, "topo", "-m"]))
    allowed, whose = allowed_cpus()
    print("CPUs this process may use (%s): %d" % (whose, len(allowed)))
    fails = checks = 0

    def check(ok, what):
        nonlocal fails, checks
        checks += 1
        fails += not ok
        print("%s: %s" % ("ok" if ok else "MISMATCH", what))

    by_index = {i: gpus[b] for i, b in index_bus.items() if b in gpus}
    for i, d in sorted(by_index.items()):
        row, loc = topo.get(i), d.get("locality")
        if row is None:
            check(False, "GPU%d (device %d): no row in nvidia-smi topo -m" % (i, d["id"]))
            continue
        if loc is None:
            check(False, "GPU%d (device %d): hdal has no locality" % (i, d["id"]))
            continue
        mine = hwloc_bitmap(loc["cpuset"])
        if row["cpus"] is not None:
            want = row["cpus"] & allowed
            check(mine == want, "GPU%d (device %d): CPUs %d of nvidia-smi's %d within the allowed; hdal %d%s" %
                  (i, d["id"], len(want), len(row["cpus"]), len(mine),
                   "" if mine == want else " (hdal only: %s; nvidia-smi only: %s)" % (sorted(mine - want)[:8], sorted(want - mine)[:8])))
        if row["nodes"] is not None:
            check(set(loc["numa_nodes"]) == row["nodes"], "GPU%d: NUMA nodes hdal %s, nvidia-smi %s" %
                  (i, loc["numa_nodes"], sorted(row["nodes"])))
    mine = hdal_matrix(topology)
    for a, da in sorted(by_index.items()):
        for b, db in sorted(by_index.items()):
            if a < b:
                ours, theirs = mine.get((da["id"], db["id"])), topo.get(a, {}).get("cells", {}).get(b)
                check(ours == theirs, "GPU%d-GPU%d (devices %d, %d): hdal %s, nvidia-smi %s" %
                      (a, b, da["id"], db["id"], ours, theirs))
    try:
        import hdal
        hdal.devices  # an empty namespace of that name is not the package
    except (ImportError, AttributeError) as e:
        print("binding: hdal's Python package is not importable (%s): not checked" % e)
    else:
        first = min(by_index)
        dev = next(d for d in hdal.devices() if d.platform == "cuda" and
                   bus_id(d.attributes.get("pci_bus_id") or "ffff:ff:ff.f") == index_bus[first])
        got = {}

        def bound():
            try:
                dev.bind()
                got["cpus"] = set(os.sched_getaffinity(0))
            except Exception as e:  # hdal.Error: the check says it
                got["error"] = e

        t = threading.Thread(target=bound)
        t.start()
        t.join()
        want = hwloc_bitmap(dev.locality.cpuset) & allowed
        if "error" in got:
            check(False, "GPU%d: Device.bind() raised %s" % (first, got["error"]))
        else:
            check(got["cpus"] == want, "GPU%d: a thread bound near it runs on %d CPUs, its locality within the "
                  "allowed %d" % (first, len(got["cpus"]), len(want)))
    print("topology-real: %s (%d checks)" % ("PASS" if not fails else "FAIL (%d)" % fails, checks))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
