# SPDX-License-Identifier: BSD-3-Clause
# host -> OpenCL (PoCL, two CPU devices) -> host, and an OpenCL buffer
# exported to the CPU on request.  OpenCL runs in child interpreters, as the
# C suites keep it out of their runner: each also checks a clean exit with
# PoCL's threads still around.
from conftest import assert_clean_run, require_pocl

PRELUDE = """
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,opencl")
cpu = ctx.devices()[0]
ocl = [d for d in ctx.devices() if d.platform == "opencl"]
assert cpu.platform == "cpu" and len(ocl) == 2, ctx.backends()
assert all(d.runtime_class == "pjrt" and d.dlpack_device == (4, i) for i, d in enumerate(ocl))

class Capsule:
    def __init__(self, cap): self.cap = cap
    def __dlpack__(self, stream=None): return self.cap
    def __dlpack_device__(self): return (1, 0)
"""


def test_host_opencl_host_round_trip():
    require_pocl()
    assert_clean_run(PRELUDE + """
a = np.arange(24, dtype=np.float32).reshape(4, 6)
g = hdal.from_dlpack(a, device=ocl[0])          # host -> OpenCL: a copy
assert g.device == ocl[0] and not g.is_view and g.shape == (4, 6) and g.__dlpack_device__() == (4, 0)
a[0, 0] = 1000                                  # the device copy is its own
h = g.to_device(cpu)                            # OpenCL -> host
assert h.device == cpu and np.asarray(h)[0, 0] == 0
assert np.array_equal(np.asarray(h)[1:], a[1:])
g1 = g.to_device(ocl[1])                        # device to device
assert np.array_equal(np.asarray(g1.to_device(cpu)), np.asarray(h))
t = hdal.from_dlpack(a.T, device=ocl[0])        # a transposed source, compacted on the way
assert t.strides == (4, 1) and np.array_equal(np.asarray(t.to_device(cpu)), a.T)
try:
    memoryview(g)
    raise SystemExit("an OpenCL buffer exported the buffer protocol")
except BufferError:
    pass
try:
    hdal.from_dlpack(a, device=ocl[0], copy=False)
    raise SystemExit("copy=False imported host memory onto OpenCL")
except hdal.Error as e:
    assert e.code == "INVALID_ARGUMENT" and "cop" in str(e), (e.code, str(e))
print("ok")
""", expect_out="ok\n")


def test_opencl_buffer_exported_to_cpu_on_request():
    require_pocl()
    assert_clean_run(PRELUDE + """
a = np.arange(10, dtype=np.int32)
g = hdal.from_dlpack(a, device=ocl[1])
cap = g.__dlpack__(dl_device=(1, 0))            # legacy, on the CPU: a copy
n = np.from_dlpack(Capsule(cap))
assert np.array_equal(n, a) and n.__array_interface__["data"][0] != a.__array_interface__["data"][0]
v = hdal.from_dlpack(g.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))
assert v.device.platform == "cpu" and np.array_equal(np.asarray(v), a)
same = hdal.from_dlpack(g.__dlpack__(max_version=(1, 0)), device=ocl[1])  # its own cl_mem: zero-copy
assert same.device == ocl[1] and same.is_view
try:
    g.__dlpack__(dl_device=(1, 0), copy=False)
    raise SystemExit("copy=False exported OpenCL memory to the CPU")
except hdal.Error as e:
    assert e.code == "INVALID_ARGUMENT", (e.code, str(e))
try:
    np.from_dlpack(g)                           # numpy cannot read OpenCL memory
    raise SystemExit("numpy took an OpenCL tensor")
except (RuntimeError, BufferError, TypeError):
    pass
unconsumed = g.__dlpack__(max_version=(1, 0))   # released at exit
print("ok")
""", expect_out="ok\n")
