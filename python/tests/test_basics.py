# SPDX-License-Identifier: BSD-3-Clause
# The package, its errors, contexts and devices; python3 -m hdal.
import os
import subprocess
import sys

import pytest

import hdal
from conftest import assert_clean_run


def test_version_and_names():
    assert isinstance(hdal.__version__, str) and hdal.__version__.count(".") == 2
    for name in ("Error", "Context", "Device", "Buffer", "from_dlpack", "devices"):
        assert name in hdal.__all__
    for t in (hdal.Error, hdal.Context, hdal.Device, hdal.Buffer):
        assert t.__module__ == "hdal"
    assert issubclass(hdal.Error, RuntimeError)
    assert hdal.Error("x").code is None


def test_docstrings():
    for f in (hdal.from_dlpack, hdal.devices, hdal.Context, hdal.Buffer, hdal.Buffer.__dlpack__,
              hdal.Buffer.to_device, hdal.Error, hdal.Device):
        assert f.__doc__ and len(f.__doc__) > 40, f
    assert "from_dlpack(x, /, *, device=None, copy=None, stream=None)" in hdal.from_dlpack.__doc__
    stubs = os.path.join(os.path.dirname(hdal.__file__), "__init__.pyi")
    assert os.path.exists(stubs) and os.path.exists(os.path.join(os.path.dirname(hdal.__file__), "py.typed"))


def test_default_context_devices():
    devs = hdal.devices()
    assert devs and devs[0].platform == "cpu"
    assert [d.id for d in devs] == list(range(len(devs)))
    assert hdal.default_context() is hdal.default_context()
    assert devs == hdal.devices()  # equal devices, made on demand


def test_context_and_device_fields(cpu_ctx):
    d = cpu_ctx.devices()[0]
    assert (d.id, d.platform, d.local_hardware_id, d.process_index) == (0, "cpu", 0, 0)
    assert d.runtime_vendor == 0  # the CPU backend drives no one vendor's devices
    assert d.is_addressable is True
    assert d.runtime_class == "pjrt" and d.runtime_class_reason is None
    assert d.dlpack_device == (1, 0) and hdal.kDLCPU == 1
    assert isinstance(d.kind, str) and isinstance(d.memory_bytes, int) and isinstance(d.numa_node, int)
    attrs = d.attributes
    assert isinstance(attrs, dict) and {"cpuset", "cores", "pus"} <= set(attrs)
    assert d.context is cpu_ctx and cpu_ctx.device(0) == d and hash(cpu_ctx.device(0)) == hash(d)
    assert cpu_ctx.backends() == [("cpu", "ok: 1 device")] or cpu_ctx.backends()[0][0] == "cpu"
    assert (cpu_ctx.process_index, cpu_ctx.process_count) == (0, 1)
    with pytest.raises(IndexError):
        cpu_ctx.device(len(cpu_ctx.devices()))


def test_synthetic_topology_two_numa_nodes():
    out = assert_clean_run("""
        import hdal
        c = hdal.Context(backends="cpu")
        print([(d.id, d.numa_node, d.attributes["pus"]) for d in c.devices()])
        """, env={"HWLOC_SYNTHETIC": "pack:1 numa:2 core:2 pu:1"})
    assert out == "[(0, 0, '2'), (1, 1, '2')]\n"


def test_ifrt_device(ifrt_device):
    assert ifrt_device.runtime_class == "ifrt-native"
    assert isinstance(ifrt_device.runtime_class_reason, str) and ifrt_device.runtime_class_reason


def test_missing_backend_is_a_status():
    ctx = hdal.Context(backends="cpu,cuda", backend_path="/nonexistent")
    names = dict(ctx.backends())
    assert names["cpu"] == "ok: 1 device" or names["cpu"].startswith("ok")
    assert names["cuda"].startswith("unavailable")


@pytest.fixture
def module_dir(tmp_path):
    """A module directory holding the suite's test modules `names` as hdal_<name>.so."""
    mods = os.environ.get("HDAL_TEST_MODULES")

    def link(*names):
        for n in names:
            src = os.path.join(mods or "", "mod_%s.so" % n)
            if not mods or not os.path.exists(src):
                pytest.skip("no test module %s (HDAL_TEST_MODULES=%s)" % (n, mods))
            os.symlink(src, str(tmp_path / ("hdal_%s.so" % n)))
        return str(tmp_path)
    return link


def test_backend_states_as_data(module_dir):
    path = module_dir("oddities", "failing")
    ctx = hdal.Context(backends="cpu,oddities,failing,vulkan", backend_path=path)
    states = ctx.backend_states()
    assert [s.name for s in states] == [n for n, _ in ctx.backends()]
    by_name = {s.name: s for s in states}
    cpu = by_name["cpu"]
    assert cpu == ("cpu", "ok", len([d for d in ctx.devices() if d.platform == "cpu"]), 0, None)
    assert isinstance(cpu, hdal.BackendState) and cpu.state == "ok" and cpu.reason is None
    assert by_name["cuda"] == hdal.BackendState(("cuda", "disabled", 0, 0, None))
    odd = by_name["oddities"]
    assert (odd.state, odd.device_count, odd.refused_count, odd.reason) == \
        ("ok", 5, 4, "negative local hardware id -1")
    assert (by_name["failing"].state, by_name["failing"].device_count, by_name["failing"].reason) == \
        ("unavailable", 0, "failing: no hardware of this kind here")
    assert by_name["vulkan"][1:] == ("unavailable", 0, 0, "module hdal_vulkan.so not found (searched %s)" % path)
    # The text is made from the same data.
    status = dict(ctx.backends())
    assert status["oddities"] == "ok: 5 devices; 4 refused: negative local hardware id -1 (and 3 more)"
    for s in states:
        if s.state == "unavailable":
            assert status[s.name] == "unavailable: " + s.reason
    assert hdal.BackendState.__module__ == "hdal" and "BackendState" in hdal.__all__


def test_backend_failed_as_data(module_dir, monkeypatch):
    # A loaded backend whose runtime broke (HDAL_INTERNAL) failed; its text says unavailable.
    path = module_dir("failing")
    monkeypatch.setenv("HDAL_TEST_FAILING_INTERNAL", "1")
    ctx = hdal.Context(backends="failing", backend_path=path)
    failing = {s.name: s for s in ctx.backend_states()}["failing"]
    assert failing[1:] == ("failed", 0, 0, "failing: the runtime broke")
    assert dict(ctx.backends())["failing"] == "unavailable: failing: the runtime broke"


def test_typed_attributes(module_dir):
    ctx = hdal.Context(backends="cpu,typedls", backend_path=module_dir("typedls"))
    cpu, typed = ctx.devices()[0], ctx.devices()[-1]
    t = cpu.typed_attributes
    assert type(t["cores"]) is int and t["cores"] == int(cpu.attributes["cores"])
    assert t["cpuset"] == cpu.attributes["cpuset"]
    assert list(t) == list(cpu.attributes)  # the same keys, in the same order
    t = typed.typed_attributes
    want = {"widgets": 42, "largest": 2**64 - 1, "shiny": True, "dull": False, "label": "42",
            "too_large": "18446744073709551616", "leading_zero": "007", "negative": "-1", "maybe": "maybe",
            "unknown_type": "7"}
    assert {k: t[k] for k in want} == want
    assert type(t["shiny"]) is bool and type(t["dull"]) is bool and type(t["widgets"]) is int
    # attributes stays a dict of str, as the library's strings.
    assert typed.attributes["shiny"] == "yes" and typed.attributes["widgets"] == "42"


def test_unknown_backend_name_raises_error():
    # Case-sensitive; no module on this path, so the known names are hdal's own, as a context lists them
    # (the C suite checks that order against backends/registry).
    own = [name for name, _ in hdal.Context(backends="cpu", backend_path="/nonexistent").backends()]
    assert own[0] == "cpu" and "opencl" in own
    with pytest.raises(hdal.Error) as e:
        hdal.Context(backends="cpu,openCL", backend_path="/nonexistent")
    assert e.value.code == "INVALID_ARGUMENT"
    assert str(e.value) == ("hdal_context_options: backends: unknown backend 'openCL' (did you mean 'opencl'?); "
                            "known: " + ", ".join(own))


def test_bad_backend_list_raises_error():
    with pytest.raises(hdal.Error) as e:
        hdal.Context(backends="cpu;opencl")
    assert e.value.code == "INVALID_ARGUMENT"
    assert str(e.value) == ('invalid backend list "cpu;opencl": expected names separated by commas, '
                            'each optionally preceded by \'-\' (e.g. "cpu,opencl" or "-cuda")')
    with pytest.raises(TypeError):
        hdal.Context(backends=3)


def test_main_prints_the_table_of_hdal_ls():
    ls = os.environ.get("HDAL_LS")
    if not ls or not os.path.exists(ls):
        pytest.skip("no hdal-ls")
    # A synthetic machine: memory figures that cannot move between the two runs.
    env = dict(os.environ, HDAL_BACKENDS="cpu,ifrttest", HWLOC_SYNTHETIC="pack:1 numa:2(memory=3GB) core:2 pu:1")
    want = subprocess.run([ls], capture_output=True, text=True, env=env)
    got = subprocess.run([sys.executable, "-m", "hdal"], capture_output=True, text=True, env=env)
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert "Backends:" in got.stdout and "2.8 GiB" in got.stdout and "ifrt-native" in got.stdout
    # Byte for byte: one table, hdal-ls's own code (tools/ls_table.c) built into the extension.
    for args, backends in (([], "cpu"), (["--platform", "cpu"], "cpu,ifrttest"), (["-p", "cpu"], "cpu")):
        env["HDAL_BACKENDS"] = backends
        got = subprocess.run([sys.executable, "-m", "hdal"] + args, capture_output=True, env=env)
        want = subprocess.run([ls] + args, capture_output=True, env=env)
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr


def test_memory_stats_and_trim():
    np = pytest.importorskip("numpy")
    ctx = hdal.Context(backends="cpu")
    d = ctx.devices()[0]
    keys = {"bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "bytes_limit", "num_allocs", "num_pool_hits"}
    before = d.memory_stats()
    assert set(before) == keys and before["bytes_in_use"] == 0 and before["num_allocs"] == 0
    a = np.arange(4096, dtype=np.float32)
    b = hdal.from_dlpack(a, device=d, copy=True)  # a copy: hdal allocates on the device
    s = d.memory_stats()
    assert s["bytes_in_use"] == a.nbytes and s["num_allocs"] == 1 and s["num_pool_hits"] == 0
    del b
    s = d.memory_stats()
    assert s["bytes_in_use"] == 0 and s["peak_bytes_in_use"] == a.nbytes
    c = hdal.from_dlpack(a, device=d, copy=True)  # served from the pool
    s = d.memory_stats()
    assert s["num_allocs"] == 2 and s["num_pool_hits"] == 1
    del c
    d.trim()
    s = d.memory_stats()
    assert s["bytes_reserved"] == s["bytes_in_use"] == 0


def test_selector_keeps_devices_and_renumbers(monkeypatch):
    monkeypatch.setenv("HWLOC_SYNTHETIC", "numa:3 core:1 pu:1")
    ctx = hdal.Context(backends="cpu", selector="cpu:*;!cpu:1")
    devs = ctx.devices()
    assert [(d.id, d.local_hardware_id) for d in devs] == [(0, 0), (1, 2)]
    assert dict(ctx.backends())["cpu"] == "ok: 2 of 3 devices selected by hdal_context_options: device_selector"
    with pytest.raises(hdal.Error) as e:
        hdal.Context(backends="cpu", selector="cpu:x")
    assert str(e.value).endswith("hdal_context_options: device_selector: term 1 (\"cpu:x\", at character 1): "
                                 "not a device: *, an ordinal, cpu, gpu, accelerator, uuid=PREFIX or pci=BUS_ID")


def test_dlpack_device_type_names_from_the_library():
    assert hdal.dlpack_device_type_name(1) == "kDLCPU"
    assert hdal.dlpack_device_type_name(hdal.kDLROCM) == "kDLROCM"
    assert hdal.kDLOneAPI == 14 and hdal.dlpack_device_type_name(hdal.kDLOneAPI) == "kDLOneAPI"
    # The module's constants are DLPack's values, with the library's names.
    consts = {n: getattr(hdal, n) for n in dir(hdal) if n.startswith("kDL")}
    assert consts == {"kDLCPU": 1, "kDLCUDA": 2, "kDLCUDAHost": 3, "kDLOpenCL": 4, "kDLVulkan": 7, "kDLROCM": 10,
                      "kDLROCMHost": 11, "kDLCUDAManaged": 13, "kDLOneAPI": 14}
    assert all(hdal.dlpack_device_type_name(v) == n for n, v in consts.items())
    assert set(consts) <= set(hdal.__all__)
    stubs = open(os.path.join(os.path.dirname(hdal.__file__), "__init__.pyi")).read()
    assert all("\n%s: int\n" % n in stubs for n in consts)
    assert hdal.dlpack_device_type_name(18) == "kDLTrn"
    # Reserved after DLPack 1.3 (JAX 0.12 exports TPU host memory as 20).
    assert [hdal.dlpack_device_type_name(t) for t in (19, 20, 21)] == ["kDLTPU", "kDLTPUHost", "kDLAscend"]
    for t in (0, 5, 6, 22, -1, 2**31, 2**70):
        assert hdal.dlpack_device_type_name(t) is None
    with pytest.raises(TypeError):
        hdal.dlpack_device_type_name("kDLCPU")
