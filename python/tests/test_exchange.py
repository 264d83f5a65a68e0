# SPDX-License-Identifier: BSD-3-Clause
# DLPack's C exchange API (docs/python.md, "The C exchange API"): hdal.Buffer's
# table called from C by a tvm-ffi-like consumer (_exchange_probe, built for the
# tests), on the CPU and on PoCL; hdal.from_dlpack consuming producer types that
# have only the table, good and bad; leaks over 100,000 exchanges.
import ctypes
import gc
import importlib
import os
import sys
import tracemalloc

import numpy as np
import pytest

import hdal
from conftest import HandTensor, assert_clean_run, require_pocl


@pytest.fixture(scope="module")
def probe():
    path = os.environ.get("HDAL_EXCHANGE_PROBE")
    if not path:
        pytest.skip("HDAL_EXCHANGE_PROBE is not set (make check sets it)")
    sys.path.insert(0, path)
    try:
        return importlib.import_module("_exchange_probe")
    finally:
        sys.path.remove(path)


def test_the_type_carries_the_table(probe):
    cap = hdal.Buffer.__dlpack_c_exchange_api__
    assert type(cap).__name__ == "PyCapsule" and "dlpack_exchange_api" in repr(cap)
    assert hdal.Buffer.__c_dlpack_exchange_api__ is cap  # the earlier name, as cuda-python reads it
    assert probe.version(hdal.Buffer) == (1, 3, False)


def test_export_import_and_borrow_on_the_cpu(probe):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = hdal.from_dlpack(a)
    refs = sys.getrefcount(b)
    t = probe.export(b)
    assert t["data"] == a.ctypes.data and t["shape"] == (3, 4) and t["strides"] == (4, 1)
    assert t["device"] == (1, 0) and t["dtype"] == (2, 32, 1) and t["byte_offset"] == 0
    assert t["version"] == (1, 3) and t["flags"] == 0
    assert sys.getrefcount(b) == refs  # the tensor held the buffer, not the object, and is gone
    c = probe.roundtrip(b)  # from_py, then to_py stealing the tensor: a view of the same memory
    assert type(c) is hdal.Buffer and c.is_view and np.from_dlpack(c).ctypes.data == a.ctypes.data
    assert np.array_equal(np.from_dlpack(c), a)
    borrowed = probe.borrow(b)
    assert borrowed["data"] == a.ctypes.data and borrowed["strides"] == (4, 1) and borrowed["shape"] == (3, 4)
    # Read-only memory keeps its flag through the table.
    ro = hdal.from_dlpack(HandTensor([1.0, 2.0], versioned=True, flags=1).capsule)
    assert ro.read_only and probe.export(ro)["flags"] == 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    # A transposed view keeps its strides.
    assert probe.export(hdal.from_dlpack(a.T))["strides"] == (1, 4)


def b_in_use(device):
    gc.collect()
    return device.memory_stats()["bytes_in_use"]


def test_allocator_and_streams_on_the_cpu(probe):
    b = probe.allocate(hdal.Buffer, (1, 0), (2, 3), (2, 64, 1))
    assert type(b) is hdal.Buffer and b.shape == (2, 3) and b.strides == (3, 1) and b.dtype == "float64"
    assert b.device.platform == "cpu" and not b.read_only  # a view of the tensor it was handed, which owns it
    stats = b.device.memory_stats()
    assert stats["bytes_in_use"] >= 48  # from hdal's pool
    np.asarray(b)[...] = 7.5  # writable, through the buffer protocol
    assert np.all(np.from_dlpack(b) == 7.5)
    del b
    assert b_in_use(hdal.devices()[0]) == stats["bytes_in_use"] - 48
    empty = probe.allocate(hdal.Buffer, (1, 0), (0, 4), (1, 8, 1))
    assert empty.shape == (0, 4) and empty.dtype == "uint8"
    # Errors only through SetError, with hdal's words; no exception left behind (the probe checks).
    cases = [
        ((10, 0), (2,), (2, 32, 1), "ValueError: No hdal backend serves DLPack device type kDLROCM (10), device id 0"),
        ((1, 0), (-1,), (2, 32, 1), "ValueError: DLPack tensor has a negative dimension: shape[0] is -1"),
        ((1, 0), (2,), (2, 13, 1), "NotImplementedError: Invalid or unsupported DLPack float width: 13 bits"),
    ]
    for device, shape, dtype, message in cases:
        with pytest.raises(RuntimeError) as e:
            probe.allocate(hdal.Buffer, device, shape, dtype)
        assert str(e.value) == message
    assert probe.stream(hdal.Buffer, (1, 0)) == 0


def test_entries_refuse_other_objects(probe):
    # hdal's entries called with an object of another type (a consumer's mistake): TypeError, nothing else.
    cap = hdal.Buffer.__dlpack_c_exchange_api__
    with pytest.raises(AttributeError):
        probe.export(np.arange(3))  # numpy 1.24's type has no table at all
    fake = type("Fake", (), {"__dlpack_c_exchange_api__": cap})()
    with pytest.raises(TypeError) as e:
        probe.export(fake)
    # Types are named as PEP 737 names them (__module__.__qualname__), in the full and the limited build.
    assert str(e.value) == "managed_tensor_from_py_object_no_sync: expected an hdal.Buffer, got test_exchange.Fake"
    with pytest.raises(TypeError) as e:
        probe.borrow(fake)
    assert str(e.value) == "dltensor_from_py_object_no_sync: expected an hdal.Buffer, got test_exchange.Fake"


def test_from_dlpack_uses_a_producer_types_table(probe):
    x = probe.Good([1.0, 2.0, 3.0])
    assert not hasattr(x, "__dlpack__")
    made, deleted = probe.counts()
    b = hdal.from_dlpack(x)
    assert b.is_view and np.array_equal(np.from_dlpack(b), [1.0, 2.0, 3.0])
    assert probe.counts() == (made + 1, deleted)
    del b
    gc.collect()
    assert probe.counts() == (made + 1, deleted + 1)
    # copy=True and device= as with __dlpack__.
    c = hdal.from_dlpack(x, copy=True)
    assert not c.is_view and probe.counts()[1] == deleted + 2  # the copy let the tensor go at once
    # A table of a future major version that chains to a 1.x one: that one is used.
    assert np.array_equal(np.from_dlpack(hdal.from_dlpack(probe.FuturePrev([5.0]))), [5.0])


@pytest.mark.parametrize("kind, message", [
    ("Future", "from_dlpack(): _exchange_probe.Future has no __dlpack__, and its __dlpack_c_exchange_api__ has no "
               "table of major version 1 (hdal reads DLPack 1.x)"),
    ("NullEntry", "from_dlpack(): _exchange_probe.NullEntry has no __dlpack__, and its __dlpack_c_exchange_api__ "
                  "has a NULL entry that DLPack requires"),
])
def test_tables_hdal_cannot_use_are_refused(probe, kind, message):
    made = probe.counts()[0]
    with pytest.raises(TypeError) as e:
        hdal.from_dlpack(getattr(probe, kind)([1.0]))
    assert str(e.value) == message
    assert probe.counts()[0] == made  # never called


def test_a_tensor_of_another_major_version_is_refused_and_deleted_once(probe):
    made, deleted = probe.counts()
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(probe.TensorV2([1.0]))
    assert str(e.value) == "DLPack tensor version 2.0 is not supported: hdal consumes major version 1"
    assert probe.counts() == (made + 1, deleted + 1)


def test_a_failing_producer_and_a_refused_import_leave_nothing(probe):
    with pytest.raises(BufferError) as e:
        hdal.from_dlpack(probe.Fails([1.0]))
    assert str(e.value) == "this producer cannot export"
    made, deleted = probe.counts()
    # copy=False onto another CPU context's device is fine; onto an IFRT device it is refused, the tensor deleted.
    ctx = hdal.Context(backends="cpu,ifrttest")
    ifrt = [d for d in ctx.devices() if d.platform == "ifrttest"]
    if ifrt:
        with pytest.raises(hdal.Error) as e:
            hdal.from_dlpack(probe.Good([1.0]), device=ifrt[0])
        assert str(e.value) == "DLPack is supported for PjRt-compatible backends only."
        assert probe.counts() == (made + 1, deleted + 1)


def _spoil(h, how):
    t = h.m.dl_tensor
    if how == "ndim":
        t.ndim = -1
    elif how == "null shape":
        t.shape = None
    elif how == "dtype":
        t.dtype.bits = 13
    elif how == "NULL data":
        t.data = None


@pytest.mark.parametrize("how", ["major", "ndim", "null shape", "dtype", "NULL data"])
def test_hostile_tensors_through_the_table_get_the_capsule_checks(probe, how):
    # The same tensor through a capsule and through hdal's to_py: the same message.  The capsule
    # goes back untouched (but for a major version hdal does not read, whose deleter DLPack runs);
    # to_py steals the tensor: its deleter runs once, whatever the refusal.
    major = 3 if how == "major" else 1
    by_capsule, by_table = HandTensor([1.0, 2.0], versioned=True, major=major), HandTensor([1.0, 2.0], versioned=True,
                                                                                           major=major)
    _spoil(by_capsule, how)
    _spoil(by_table, how)
    with pytest.raises(hdal.Error) as e1:
        hdal.from_dlpack(by_capsule.capsule)
    with pytest.raises(hdal.Error) as e2:
        probe.to_py(hdal.Buffer, ctypes.addressof(by_table.m))
    assert str(e2.value) == str(e1.value) and e2.value.code == e1.value.code
    assert by_capsule.deleted == (1 if how == "major" else 0)
    assert by_table.deleted == 1


def test_timing_rows_run(probe):
    b = hdal.from_dlpack(np.arange(16, dtype=np.float32))
    assert probe.time_exchange(b, 1000) > 0 and probe.time_borrow(b, 1000) > 0


def test_no_leak_over_100000_exchanges(probe):
    a = np.arange(16, dtype=np.float32)
    b = hdal.from_dlpack(a)
    x = probe.Good([1.0, 2.0])

    def round_():
        probe.export(b)
        probe.roundtrip(b)
        probe.borrow(b)
        hdal.from_dlpack(x)
        probe.allocate(hdal.Buffer, (1, 0), (4,), (2, 32, 1))

    for _ in range(2000):
        round_()
    gc.collect()
    refs_b, refs_x = sys.getrefcount(b), sys.getrefcount(x)
    made, deleted = probe.counts()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(100_000 // 5):
        round_()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert sys.getrefcount(b) == refs_b and sys.getrefcount(x) == refs_x
    assert probe.counts()[0] - made == probe.counts()[1] - deleted == 20_000
    assert grown < 64 * 1024, "%d bytes of Python memory kept" % grown


def test_on_pocl():
    require_pocl()
    assert_clean_run("""
import os, sys, importlib, numpy as np, hdal
sys.path.insert(0, os.environ["HDAL_EXCHANGE_PROBE"])
probe = importlib.import_module("_exchange_probe")
ocl = [d for d in hdal.devices() if d.platform == "opencl"]
assert ocl, hdal.default_context().backends()
g = hdal.from_dlpack(np.arange(6, dtype=np.float32), device=ocl[0])
t = probe.export(g)
assert t["device"] == (4, 0) and t["shape"] == (6,) and t["strides"] == (1,) and t["data"] != 0
b = probe.borrow(g)
assert b["data"] == t["data"]  # the buffer's own cl_mem, both ways
c = probe.roundtrip(g)
assert type(c) is hdal.Buffer and c.device == ocl[0] and c.is_view
assert np.array_equal(np.asarray(c.to_device(hdal.devices()[0])), np.arange(6, dtype=np.float32))
a = probe.allocate(hdal.Buffer, (4, 1), (3, 2), (0, 32, 1))
assert a.device == ocl[1] and a.shape == (3, 2) and a.dtype == "int32"
assert ocl[1].memory_stats()["bytes_in_use"] == 24
q = probe.stream(hdal.Buffer, (4, 0))
assert q != 0 and q == probe.stream(hdal.Buffer, (4, 0))  # hdal's cl_command_queue, made once
""")


def test_exchange_counts_tell_the_path_taken():
    counts = hdal._hdal._exchange_counts
    before = counts()
    b = hdal.from_dlpack(np.arange(3.0))  # numpy has no table: a capsule
    after = counts()
    assert after["import_capsule"] == before["import_capsule"] + 1 and after["import_table"] == before["import_table"]
    c = hdal.from_dlpack(b)  # hdal.Buffer's own table, both sides of it
    last = counts()
    assert last["import_table"] == after["import_table"] + 1 and last["import_capsule"] == after["import_capsule"]
    assert last["export_table"] == after["export_table"] + 1
    assert c.is_view and np.array_equal(np.from_dlpack(c), [0.0, 1.0, 2.0])
    hdal.from_dlpack(b.__dlpack__())  # a capsule given
    assert counts()["import_capsule"] == last["import_capsule"] + 1
