# SPDX-License-Identifier: BSD-3-Clause
# device= as the array API's habits name devices (docs/python.md, "Devices as
# arguments"): an hdal.Device, "cpu", or a DLPack (device_type, device_id)
# pair, for hdal.from_dlpack and Buffer.to_device; and numpy's np.asarray of a
# buffer: zero-copy in host memory, a TypeError naming to_device elsewhere.
import numpy as np
import pytest

import hdal
from conftest import assert_clean_run, require_pocl


def addr(a):
    return a.__array_interface__["data"][0]


def test_device_cpu_and_pair_name_the_default_cpu_device():
    cpu = hdal.default_context().device(0)
    assert cpu.platform == "cpu"
    a = np.arange(6, dtype=np.float32)
    for device in ("cpu", (1, 0), (hdal.kDLCPU, 0), cpu):
        b = hdal.from_dlpack(a, device=device)
        assert b.device == cpu and b.is_view, device
        assert addr(np.asarray(b)) == addr(a)  # zero-copy whichever way the device was named
    assert hdal.from_dlpack(a, device="cpu", copy=True).is_view is False


def test_to_device_takes_the_same_names():
    cpu = hdal.default_context().device(0)
    b = hdal.from_dlpack(np.arange(4, dtype=np.int64))
    for device in ("cpu", (1, 0), cpu):
        c = b.to_device(device)
        assert c.device == cpu and not c.is_view and np.asarray(c).tolist() == [0, 1, 2, 3]


def test_device_refusals_say_what_is_taken():
    a = np.arange(3, dtype=np.float32)
    with pytest.raises(ValueError) as e:
        hdal.from_dlpack(a, device="cuda:0")
    assert str(e.value) == ("from_dlpack(): unknown device 'cuda:0': say \"cpu\", an hdal.Device or a DLPack "
                            "(device_type, device_id) pair")
    with pytest.raises(TypeError) as e:
        hdal.from_dlpack(a, device=1)
    assert str(e.value) == ("from_dlpack(): device must be an hdal.Device, \"cpu\" or a DLPack "
                            "(device_type, device_id) pair, got int")
    with pytest.raises(TypeError) as e:
        hdal.from_dlpack(a).to_device([1, 0])
    assert str(e.value).startswith("to_device(): device must be an hdal.Device")
    with pytest.raises(TypeError) as e:
        hdal.from_dlpack(a, device=(1,))
    assert str(e.value) == "device must be a tuple of two ints, got tuple"
    with pytest.raises(OverflowError):
        hdal.from_dlpack(a, device=(1, 2**40))
    # A pair no backend serves: the library's words, and the source untouched.
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(a, device=(hdal.kDLROCM, 0))
    assert e.value.code == "INVALID_ARGUMENT" and "kDLROCM" in str(e.value)
    assert a.tolist() == [0.0, 1.0, 2.0]


def test_asarray_of_a_host_buffer_stays_zero_copy():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = hdal.from_dlpack(a)
    assert addr(np.asarray(b)) == addr(a)
    assert np.asarray(b, dtype=np.float64).shape == (3, 4)
    c = np.asarray(b, dtype=np.float32)  # a cast: a copy, by numpy
    assert c.dtype == np.float32 and c.tolist() == a.tolist()
    assert addr(b.__array__()) == addr(a)  # __array__ itself (a dtype without a buffer format takes it)
    d = b.__array__(copy=True)
    assert addr(d) != addr(a) and d.tolist() == a.tolist()


def test_asarray_of_a_device_buffer_names_to_device():
    require_pocl()
    assert_clean_run("""
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,opencl")
ocl = [d for d in ctx.devices() if d.platform == "opencl"][0]
a = np.arange(5, dtype=np.float32)
g = hdal.from_dlpack(a, device=ocl)
want = ("hdal.Buffer: the buffer is on device %d (opencl), not in host memory, and numpy reads host memory "
        "only: copy it there first, np.asarray(buf.to_device(\\"cpu\\"))" % ocl.id)
for f in (np.asarray, np.array):
    try:
        f(g)
        raise SystemExit("%s of an OpenCL buffer gave an array" % f.__name__)
    except TypeError as e:
        assert str(e) == want, str(e)
assert np.asarray(g.to_device("cpu")).tolist() == a.tolist()
print("ok")
""", expect_out="ok\n")
