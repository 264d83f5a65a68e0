# SPDX-License-Identifier: BSD-3-Clause
# What the C API says of hosts and hardware, and the wait, from Python
# (docs/python.md, API table): Device.host, host_index, hardware_index,
# same_hardware, Context.host_count, hardware_count, Device.synchronize().
# PoCL's CPU devices are the same hardware as the CPU device of the host.
import socket

import numpy as np
import pytest

import hdal
from conftest import assert_clean_run, require_pocl


def test_one_host_one_piece_of_hardware_on_the_cpu():
    ctx = hdal.Context(backends="cpu")
    devices = ctx.devices()
    assert ctx.host_count == 1 and ctx.process_count == 1
    for d in devices:
        assert d.host == socket.gethostname() and d.host_index == 0
    # one device per NUMA node: as many pieces of hardware as devices, none the same as another
    assert ctx.hardware_count == len(devices)
    assert [d.hardware_index for d in devices] == list(range(len(devices)))
    assert all(d.same_hardware == () for d in devices)


def test_synchronize_on_the_cpu_returns_and_refuses_what_hdal_does_not_serve():
    cpu = hdal.Context(backends="cpu").device(0)
    assert cpu.synchronize() is None
    ifrt = [d for d in hdal.Context(backends="cpu,ifrttest").devices() if d.runtime_class == "ifrt-native"]
    if not ifrt:
        pytest.skip("no ifrttest module on the module path")
    with pytest.raises(hdal.Error) as e:
        ifrt[0].synchronize()
    assert e.value.code == "FAILED_PRECONDITION"


def test_pocl_devices_are_the_cpu_hardware():
    require_pocl()
    assert_clean_run("""
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,opencl")
cpu = ctx.devices()[0]
ocl = [d for d in ctx.devices() if d.platform == "opencl"]
assert cpu.platform == "cpu" and len(ocl) == 2
assert ctx.hardware_count == 1, ctx.hardware_count
assert {d.hardware_index for d in ctx.devices()} == {0}
assert cpu.same_hardware == tuple(d.id for d in ocl), cpu.same_hardware
assert ocl[0].same_hardware == (cpu.id, ocl[1].id), ocl[0].same_hardware
g = hdal.from_dlpack(np.arange(8, dtype=np.float32), device=ocl[0])
assert ocl[0].synchronize() is None
assert np.asarray(g.to_device(cpu)).tolist() == list(range(8))
print("ok")
""", expect_out="ok\n")
