# SPDX-License-Identifier: BSD-3-Clause
# DLPack import and export with numpy (Debian's 1.24): zero-copy round trips,
# layouts, copies, raw capsules, refusals that leave the source intact,
# versioned and legacy export, and the buffer protocol.
import ctypes

import numpy as np
import pytest

import hdal
from conftest import HandTensor, assert_clean_run, capsule_name

NOT_PJRT = "DLPack is supported for PjRt-compatible backends only."
NOT_COMPACT = ("Only DLPack tensors with trivial (compact) striding are supported; i.e., tensors whose striding "
               "represents a transposition of the underlying buffer but not broadcasting. "
               "Dimensions were: [%s], strides were [%s].")
CONSUMED = ('DLPack tensor must be a capsule with name "dltensor", got "%s". '
            "Note that a DLPack tensor may be consumed at most once.")


def addr(a):
    return a.__array_interface__["data"][0]


class Capsule:
    """A producer that hands out one given capsule (numpy 1.24 takes only objects with __dlpack__)."""

    def __init__(self, cap, device=(1, 0)):
        self.cap, self.device = cap, device

    def __dlpack__(self, stream=None):
        return self.cap

    def __dlpack_device__(self):
        return self.device


def test_numpy_hdal_numpy_zero_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = hdal.from_dlpack(a)
    assert (b.shape, b.strides, b.dtype, b.ndim, b.size) == ((3, 4), (4, 1), "float32", 2, 12)
    assert b.is_view and not b.read_only and b.device == hdal.devices()[0]
    assert b.__dlpack_device__() == (1, 0)
    c = np.from_dlpack(b)
    assert addr(c) == addr(a) and c.shape == (3, 4)
    a[1, 2] = 100  # the source's writes show in the export
    assert c[1, 2] == 100
    w = np.asarray(b)  # the buffer protocol: writable, the same memory
    assert addr(w) == addr(a) and w.flags.writeable
    w[0, 0] = -5
    assert a[0, 0] == -5 and c[0, 0] == -5


def test_numpy_hdal_torch_zero_copy():
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.int64)
    t = torch.from_dlpack(hdal.from_dlpack(a))
    assert t.data_ptr() == addr(a)
    t[3] = 42  # torch's writes show in numpy
    assert a[3] == 42
    a[0] = 7  # and numpy's in torch
    assert t[0].item() == 7


def test_dtypes_round_trip():
    # (numpy 1.24 exports no bool; torch's is tested in test_torch.py)
    for dt, name in [(np.int8, "int8"), (np.uint16, "uint16"), (np.int32, "int32"),
                     (np.uint64, "uint64"), (np.float16, "float16"), (np.float64, "float64"),
                     (np.complex64, "complex64"), (np.complex128, "complex128")]:
        a = (np.arange(5) % 2).astype(dt)
        b = hdal.from_dlpack(a)
        assert b.dtype == name
        assert np.array_equal(np.from_dlpack(b), a) and np.array_equal(np.asarray(b), a)
        assert memoryview(b).itemsize == a.itemsize


def test_transposed_view_is_zero_copy():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = hdal.from_dlpack(a.T, copy=False)
    assert b.is_view and b.shape == (4, 3) and b.strides == (1, 4)
    c = np.from_dlpack(b)
    assert addr(c) == addr(a) and c.strides == a.T.strides and np.array_equal(c, a.T)
    m = memoryview(b)
    assert m.strides == (8, 32) and not m.c_contiguous and m.f_contiguous


def test_non_compact_slice_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    s = a[:, ::2]
    b = hdal.from_dlpack(s)
    assert not b.is_view and b.strides == (2, 1)
    c = np.from_dlpack(b)
    assert np.array_equal(c, s) and addr(c) != addr(a)
    a[0, 0] = 99  # a copy: the source's later writes stay out
    assert c[0, 0] == 0


def test_non_compact_refused_under_copy_false_source_intact():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    cap = a[:, ::2].__dlpack__()
    # The array API's error for copy=False that needs a copy (BufferError; ValueError with device=).
    with pytest.raises(hdal.CopyError) as e:
        hdal.from_dlpack(cap, copy=False)
    assert isinstance(e.value, BufferError) and isinstance(e.value, ValueError) and isinstance(e.value, hdal.Error)
    assert e.value.code == "UNIMPLEMENTED"
    assert str(e.value) == NOT_COMPACT % ("3,2", "4,2")
    assert capsule_name(cap) == "dltensor"  # not consumed: it can still go elsewhere
    b = hdal.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor" and not b.is_view
    assert np.array_equal(np.from_dlpack(b), a[:, ::2])


def test_copy_true_always_copies():
    a = np.ones(4, dtype=np.float32)
    b = hdal.from_dlpack(a, copy=True)
    assert not b.is_view
    a[:] = 2
    assert np.from_dlpack(b).tolist() == [1, 1, 1, 1]
    # ValueError, as numpy's converter says of copy="never"; a number is no bool either.
    for bad in (1, 0, "never", "False"):
        with pytest.raises(ValueError, match="^copy must be None, True or False, got "):
            hdal.from_dlpack(a, copy=bad)
        with pytest.raises(ValueError, match="^copy must be None, True or False, got "):
            b.__dlpack__(copy=bad)


def test_exception_classes_are_the_array_apis():
    assert issubclass(hdal.BufferError, hdal.Error) and issubclass(hdal.BufferError, BufferError)
    assert issubclass(hdal.CopyError, hdal.BufferError) and issubclass(hdal.CopyError, ValueError)
    assert issubclass(hdal.Error, RuntimeError) and not issubclass(hdal.Error, BufferError)
    assert hdal.BufferError.__module__ == "hdal" and hdal.CopyError.__name__ == "CopyError"
    # `from hdal import *` must not hide the built-in BufferError.
    assert "BufferError" not in hdal.__all__ and "CopyError" in hdal.__all__
    ns = {}
    exec("from hdal import *", ns)
    assert "BufferError" not in ns


def test_from_dlpack_device_needing_a_copy_under_copy_false():
    cpu = [d for d in hdal.devices() if d.platform == "cpu"][0]
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(ValueError) as e:  # the array API's word for device= that needs a copy
        hdal.from_dlpack(a[:, ::2], device=cpu, copy=False)
    assert type(e.value) is hdal.CopyError and str(e.value) == NOT_COMPACT % ("3,2", "4,2")
    assert hdal.from_dlpack(a, device=cpu, copy=False).is_view


def test_export_refusals_are_buffer_errors():
    b = hdal.from_dlpack(np.arange(4, dtype=np.uint8))
    cases = [
        ({"dl_device": (99, 0)}, "INVALID_ARGUMENT", "No hdal backend serves DLPack device type unknown (99), device id 0"),
        ({"dl_device": (1, 5)}, "INVALID_ARGUMENT",
         "DLPack device (kDLCPU, 5) is out of range: the CPU backend's devices are all (kDLCPU, 0)"),
    ]
    for kwargs, code, message in cases:
        with pytest.raises(BufferError) as e:
            b.__dlpack__(**kwargs)
        assert type(e.value) is hdal.BufferError and e.value.code == code and str(e.value) == message
    # Only None is accepted as the stream of a tensor on the CPU, -1 ("no synchronisation") too; refused
    # as every other refusal of the protocol is, with hdal.BufferError (both a BufferError and an hdal.Error).
    for stream in (1, 0, -1, 2**40):
        for kwargs in ({}, {"dl_device": (1, 0), "max_version": (1, 0)}, {"copy": True}):
            with pytest.raises(BufferError) as e:
                b.__dlpack__(stream=stream, **kwargs)
            assert type(e.value) is hdal.BufferError and isinstance(e.value, hdal.Error)
            assert e.value.code == "INVALID_ARGUMENT"
            assert str(e.value) == \
                "stream must be None for a tensor on the CPU (kDLCPU has no streams), got %d" % stream
    assert capsule_name(b.__dlpack__(stream=None)) == "dltensor"


def test_raw_capsule_consumed_once():
    a = np.arange(3, dtype=np.int32)
    cap = a.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    b = hdal.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(cap)
    assert e.value.code == "INVALID_ARGUMENT" and str(e.value) == CONSUMED % "used_dltensor"
    assert np.array_equal(np.from_dlpack(b), a)
    with pytest.raises(hdal.Error) as e:  # numpy refuses a consumed capsule too
        hdal.from_dlpack(Capsule(cap))
    assert str(e.value) == CONSUMED % "used_dltensor"


def test_versioned_capsule_consumed_once():
    a = np.arange(3, dtype=np.int32)
    cap = hdal.from_dlpack(a).__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    b = hdal.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned" and b.is_view
    assert addr(np.asarray(b)) == addr(a)
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(cap)
    assert str(e.value) == CONSUMED % "used_dltensor_versioned"


def test_seed_refusal_is_an_error_and_the_source_stays_intact(ifrt_device):
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(a, device=ifrt_device)
    assert e.value.code == "FAILED_PRECONDITION" and str(e.value) == NOT_PJRT
    assert isinstance(e.value, RuntimeError) and e.value.args == (NOT_PJRT,)
    cap = a.__dlpack__()
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(cap, device=ifrt_device)
    assert str(e.value) == NOT_PJRT and capsule_name(cap) == "dltensor"
    a[0] = 5  # still the producer's, and still importable
    assert np.from_dlpack(hdal.from_dlpack(cap))[0] == 5


def test_failed_import_runs_no_deleter():
    t = HandTensor([1, 2, 3])
    ifrt = hdal.Context(backends="cpu,ifrttest")
    devs = [d for d in ifrt.devices() if d.platform == "ifrttest"]
    if devs:
        with pytest.raises(hdal.Error):
            hdal.from_dlpack(t.capsule, device=devs[0])
        assert t.deleted == 0 and capsule_name(t.capsule) == "dltensor"
    b = hdal.from_dlpack(t.capsule)
    assert t.deleted == 0 and capsule_name(t.capsule) == "used_dltensor"
    assert np.asarray(b).tolist() == [1, 2, 3]
    del b
    assert t.deleted == 1


def test_named_capsule_refused_untouched():
    t = HandTensor([1], name="other")
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(t.capsule)
    assert str(e.value) == CONSUMED % "other" and capsule_name(t.capsule) == "other" and t.deleted == 0


def test_versioned_other_major_is_consumed_per_dlpack():
    t = HandTensor([1, 2], versioned=True, major=2)
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(t.capsule)
    assert e.value.code == "INVALID_ARGUMENT"
    assert str(e.value) == "DLPack tensor version 2.0 is not supported: hdal consumes major version 1"
    assert t.deleted == 1 and capsule_name(t.capsule) == "used_dltensor_versioned"


def test_read_only_versioned_import():
    t = HandTensor([1, 2, 3], versioned=True, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    b = hdal.from_dlpack(t.capsule)
    assert b.read_only and b.is_view
    m = memoryview(b)
    assert m.readonly and m.tolist() == [1, 2, 3]
    assert not np.asarray(b).flags.writeable
    with pytest.raises((BufferError, TypeError)):
        ctypes.c_char.from_buffer(b)  # wants a writable buffer
    cap = b.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    with pytest.raises(BufferError) as e:  # a legacy consumer could write into it
        b.__dlpack__()
    assert type(e.value) is hdal.BufferError and e.value.code == "FAILED_PRECONDITION"
    c = hdal.from_dlpack(b.__dlpack__(copy=True))  # a copy goes out as legacy
    assert np.asarray(c).tolist() == [1, 2, 3] and not c.read_only
    del b, m, cap
    assert t.deleted == 1


def test_versioned_and_legacy_export():
    b = hdal.from_dlpack(np.arange(4, dtype=np.uint8))
    assert capsule_name(b.__dlpack__()) == "dltensor"
    assert capsule_name(b.__dlpack__(max_version=None)) == "dltensor"
    assert capsule_name(b.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(b.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(b.__dlpack__(max_version=(1, 3), stream=None, dl_device=(1, 0), copy=None)) == \
        "dltensor_versioned"
    with pytest.raises(TypeError):
        b.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        b.__dlpack__(bogus=1)
    with pytest.raises(TypeError):
        b.__dlpack__(None)


@pytest.mark.parametrize("kwargs, message", [
    # Past the C field, not cut to 32 bits: (4 + 2**32, 0) would be kDLOpenCL,
    # (1, 2**32) device 0, max_version (2**32, 0) a legacy capsule.
    ({"dl_device": (4 + 2**32, 0)}, "dl_device[0] is out of range (-2147483648 to 2147483647)"),
    ({"dl_device": (1, 2**32)}, "dl_device[1] is out of range (-2147483648 to 2147483647)"),
    ({"dl_device": (1, 2**64)}, "dl_device[1] is out of range (-2147483648 to 2147483647)"),
    ({"max_version": (2**32, 0)}, "max_version[0] is out of range (-9223372036854775808 to 4294967295)"),
    ({"max_version": (1, 2**32)}, "max_version[1] is out of range (-9223372036854775808 to 4294967295)"),
    ({"max_version": (2**64, 0)}, "max_version[0] is out of range (-9223372036854775808 to 4294967295)"),
])
def test_export_integers_out_of_range(kwargs, message):
    b = hdal.from_dlpack(np.arange(4, dtype=np.uint8))
    with pytest.raises(OverflowError) as e:
        b.__dlpack__(**kwargs)
    assert str(e.value) == message
    with pytest.raises(OverflowError):
        b.__dlpack__(stream=2**64)
    assert capsule_name(b.__dlpack__(max_version=(2**32 - 1, 0))) == "dltensor_versioned"


def test_export_copy_false_to_another_device_refused():
    b = hdal.from_dlpack(np.arange(4, dtype=np.uint8))
    opencl = [d for d in hdal.devices() if d.dlpack_device == (4, 0)]
    with pytest.raises(BufferError) as e:
        b.__dlpack__(dl_device=(4, 0), copy=False)
    if not opencl:  # no such device here: it cannot be reached at all
        assert type(e.value) is hdal.BufferError
        return
    assert type(e.value) is hdal.CopyError and e.value.code == "INVALID_ARGUMENT"
    assert str(e.value) == ("Can't export buffer of hdal device 0 (cpu) to DLPack device (4, 0) (hdal device %d) "
                            "without a copy, and copying is disabled (HDAL_COPY_NEVER)" % opencl[0].id)
    assert capsule_name(b.__dlpack__(dl_device=(4, 0))) == "dltensor"  # allowed to copy


def test_buffer_protocol():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = hdal.from_dlpack(a)
    m = memoryview(b)
    assert (m.format, m.itemsize, m.shape, m.strides, m.readonly, m.nbytes) == ("f", 4, (2, 3), (12, 4), False, 24)
    assert m.obj is b and m.c_contiguous
    assert bytes(m) == a.tobytes()
    m[1, 1] = 40.0
    assert a[1, 1] == 40
    m.release()
    bt = hdal.from_dlpack(a.T)
    with pytest.raises(BufferError):
        np.frombuffer(bt, dtype=np.float32)  # asks for a contiguous buffer
    assert bytes(bt) == a.T.tobytes()
    assert np.array_equal(np.asarray(bt), a.T)


def test_from_dlpack_argument_errors():
    with pytest.raises(TypeError):
        hdal.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError):
        hdal.from_dlpack(np.ones(1), device=1.0)  # "cpu" and (type, id) are taken: test_device_args.py
    with pytest.raises(TypeError):
        hdal.from_dlpack(np.ones(1), np.ones(1))
    with pytest.raises(TypeError):
        hdal.from_dlpack(np.ones(1), stream="x")

    class Broken:
        def __dlpack__(self, **kw):
            raise ValueError("producer says no")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(ValueError, match="producer says no"):
        hdal.from_dlpack(Broken())


def test_versioned_producer_gets_max_version():
    seen = []

    class Producer:
        def __init__(self):
            self.a = np.arange(3, dtype=np.float32)

        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            seen.append(max_version)
            return hdal.from_dlpack(self.a).__dlpack__(max_version=max_version)

        def __dlpack_device__(self):
            return (1, 0)

    p = Producer()
    b = hdal.from_dlpack(p)
    assert seen == [(1, 0)] and addr(np.asarray(b)) == addr(p.a)


def test_to_device_copies(cpu_ctx):
    a = np.arange(4, dtype=np.float32)
    b = hdal.from_dlpack(a)
    c = b.to_device(cpu_ctx.devices()[0])
    assert not c.is_view and c.device.context is cpu_ctx
    a[0] = 9
    assert np.asarray(c).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        b.to_device(0)


def test_clean_exit_after_round_trips():
    # Buffers, exported capsules and views still alive when the interpreter
    # ends: every deleter runs once, at exit, and nothing crashes.
    assert_clean_run("""
        import numpy as np, hdal
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        b = hdal.from_dlpack(a)
        c = np.from_dlpack(b)
        t = hdal.from_dlpack(a.T)
        s = hdal.from_dlpack(a[:, ::2])
        unconsumed = b.__dlpack__(max_version=(1, 0))
        legacy = b.__dlpack__()
        cap = a.__dlpack__()
        used = hdal.from_dlpack(cap)
        try:
            hdal.from_dlpack(cap)
        except hdal.Error:
            pass
        m = memoryview(b)
        """)


def test_clean_exit_after_refusals():
    assert_clean_run("""
        import numpy as np, hdal
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        cap = a[:, ::2].__dlpack__()
        for _ in range(3):
            try:
                hdal.from_dlpack(cap, copy=False)
            except hdal.Error:
                pass
        ctx = hdal.Context(backends="cpu,ifrttest")
        for d in ctx.devices():
            try:
                hdal.from_dlpack(a, device=d)
            except hdal.Error:
                pass
        del ctx
        a[0, 0] = 1
        print(np.from_dlpack(hdal.from_dlpack(cap))[0].tolist())
        """, expect_out="[1.0, 2.0]\n")


def test_unconsumed_export_runs_its_deleter_when_collected():
    t = HandTensor([1, 2])
    b = hdal.from_dlpack(t.capsule)
    versioned, legacy = b.__dlpack__(max_version=(1, 0)), b.__dlpack__()
    consumed = np.from_dlpack(Capsule(b.__dlpack__()))
    del b
    assert t.deleted == 0  # the exports keep the buffer, and so the source
    del versioned
    assert t.deleted == 0
    del legacy
    assert t.deleted == 0  # numpy's array still holds the third
    assert consumed.tolist() == [1, 2]
    del consumed
    assert t.deleted == 1


def test_legacy_producer_error_is_its_own():
    # numpy 1.24 refuses max_version (TypeError), then refuses the stream: the
    # error raised is the second, the producer's answer to the call that counts.
    with pytest.raises(Exception) as e:
        hdal.from_dlpack(np.ones(2), stream=1)
    assert "max_version" not in str(e.value)
    assert hdal.from_dlpack(np.ones(2)).shape == (2,)  # and the type is still served


def test_a_view_released_while_an_exception_is_raised_runs_a_python_deleter_cleanly():
    # len() refuses the buffer and drops it with its TypeError pending: the producer's deleter (Python code,
    # a ctypes callback) runs then, and must neither see that exception nor turn it into a SystemError
    # (the interop lab met it as np.from_dlpack(hdal.from_dlpack(x)) refusing a float4 tensor).
    t = HandTensor([1, 2, 3])
    with pytest.raises(TypeError) as e:
        len(hdal.from_dlpack(t.capsule))
    assert type(e.value) is TypeError and "hdal.Buffer" in str(e.value)
    assert t.deleted == 1
    v = HandTensor([4], versioned=True)
    with pytest.raises(TypeError):
        len(hdal.from_dlpack(v.capsule))
    assert v.deleted == 1


def test_keywords_remembered_per_call_site_stay_right():
    # Each call site keeps the last keyword tuple and max_version= tuple it saw
    # (python/args.c): other orders, other values and bad values after good
    # ones must each be read afresh.
    a = np.arange(6, dtype=np.float32)
    buf = hdal.from_dlpack(a)
    mv = (1, 0)
    for _ in range(3):
        assert capsule_name(buf.__dlpack__(max_version=mv, copy=False)) == "dltensor_versioned"
        assert capsule_name(buf.__dlpack__(copy=False, max_version=mv)) == "dltensor_versioned"
        assert capsule_name(buf.__dlpack__(max_version=None)) == "dltensor"
    kw = {"max_version": (0, 5)}  # a fresh, equal-named tuple each call
    assert capsule_name(buf.__dlpack__(**kw)) == "dltensor"
    with pytest.raises(ValueError, match="max_version must not be negative"):
        buf.__dlpack__(max_version=(-1, 0))
    with pytest.raises(OverflowError, match=r"max_version\[1\] is out of range"):
        buf.__dlpack__(max_version=(1, 1 << 40))
    with pytest.raises(TypeError, match="max_version must be a tuple of two ints, got list"):
        buf.__dlpack__(max_version=[1, 0])
    with pytest.raises(TypeError, match="__dlpack__\\(\\) got an unexpected keyword argument 'bogus'"):
        buf.__dlpack__(bogus=1)
    assert capsule_name(buf.__dlpack__(max_version=mv)) == "dltensor_versioned"
    # from_dlpack's own keywords, in both orders, then a bad one.
    for _ in range(3):
        assert hdal.from_dlpack(a, copy=False, device=None).is_view
        assert not hdal.from_dlpack(a, device=None, copy=True).is_view
    with pytest.raises(TypeError, match="from_dlpack\\(\\) got an unexpected keyword argument 'dev'"):
        hdal.from_dlpack(a, dev=None)


def test_host_import_with_the_gil_kept_and_released():
    # Host memory onto the CPU keeps the GIL up to a 1 MiB copy; a larger copy
    # releases it (python/import.c, import_is_quick): both give the same values.
    for n in (16, (1 << 20) // 4, (1 << 20) // 4 + 1):
        a = np.arange(n, dtype=np.float32)
        for copy in (None, True, False):
            b = hdal.from_dlpack(a, copy=copy)
            assert b.is_view == (copy is not True)
            out = np.from_dlpack(b)
            assert out[-1] == n - 1 and out.shape == (n,)
            assert (out.ctypes.data == a.ctypes.data) == (copy is not True)
