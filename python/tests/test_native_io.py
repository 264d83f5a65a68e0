# SPDX-License-Identifier: BSD-3-Clause
# What the C API gives of native handles and of bytes in and out, from Python
# (docs/python.md, "Native handles and bytes"): Device.native_handle(),
# Device.work_stream(), Buffer.write(), read() and read_into(), with the
# library's messages byte for byte.  OpenCL (PoCL) runs in child interpreters,
# as test_opencl.py does.
import ast
import gc
import os
import threading

import numpy as np
import pytest

import hdal
from conftest import HandTensor, assert_clean_run, require_pocl

# The stub's Literal of kinds: the names the runtime takes must be those.
with open(os.path.join(os.path.dirname(hdal.__file__), "__init__.pyi")) as f:
    _ALIAS = next(n for n in ast.parse(f.read()).body
                  if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "_NativeKind")
KINDS = [e.value for e in _ALIAS.value.slice.elts]
NUMBERS = {"opencl_platform": 1, "opencl_device": 2, "opencl_context": 3, "opencl_queue": 4, "cuda_device": 11,
           "cuda_context": 12, "cuda_stream": 13, "hip_device": 21, "hip_stream": 22, "level_zero_driver": 31,
           "level_zero_device": 32, "level_zero_context": 33}  # hdal.h's hdal_native_handle


@pytest.fixture(scope="module")
def cpu():
    return hdal.Context(backends="cpu").device(0)


def error(call, *args, **kwargs):
    with pytest.raises(hdal.Error) as e:
        call(*args, **kwargs)
    return e.value.code, str(e.value)


# ---- native handles ----

def test_kind_names_are_the_library_s_in_python_spelling(cpu):
    assert KINDS == list(NUMBERS)
    with pytest.raises(ValueError) as e:
        cpu.native_handle("OpenCL_Context")  # names are exact, as a dict key is
    assert str(e.value) == ("native_handle(): unknown native handle kind 'OpenCL_Context': one of "
                            + ", ".join(repr(k) for k in KINDS))
    with pytest.raises(ValueError):
        cpu.native_handle("opencl_context\0")


@pytest.mark.parametrize("kind", KINDS)
def test_the_cpu_has_no_native_handle(cpu, kind):
    want = "hdal_device_native_handle: device %d (cpu) has no HDAL_NATIVE_%s" % (cpu.id, kind.upper())
    assert error(cpu.native_handle, kind) == ("NOT_FOUND", want)
    assert error(cpu.native_handle, NUMBERS[kind]) == ("NOT_FOUND", want)  # the enum's number, the same kind


def test_native_handle_arguments(cpu):
    for k in (0, 5, 99, -1):
        assert error(cpu.native_handle, k) == (
            "INVALID_ARGUMENT", "hdal_device_native_handle: unknown native handle kind %d" % k)
    with pytest.raises(OverflowError, match=r"kind 1099511627776 is out of range \(-2147483648 to 2147483647\)"):
        cpu.native_handle(2**40)
    for bad in (3.0, True, None, b"opencl_queue"):
        with pytest.raises(TypeError) as e:
            cpu.native_handle(bad)
        assert str(e.value) == ('native_handle(): kind must be a str ("opencl_queue", ...) or an int, got %s'
                                % type(bad).__name__)
    with pytest.raises(TypeError):
        cpu.native_handle(kind="opencl_queue")  # positional only, as the stub says


def test_work_stream_of_the_cpu_is_0(cpu):
    assert cpu.work_stream() == 0 and type(cpu.work_stream()) is int


def test_native_handle_and_work_stream_refused_where_hdal_serves_no_buffers(ifrt_device):
    msg = "This operation is implemented for a PjRt-compatible backend only."
    assert error(ifrt_device.native_handle, "opencl_queue") == ("FAILED_PRECONDITION", msg)
    assert error(ifrt_device.work_stream) == ("FAILED_PRECONDITION", msg)


def test_opencl_handles_are_the_runtime_s_objects():
    """The handles as a user takes them: ints that OpenCL itself (ctypes, the
    ICD loader the package uses) says belong together; the queue is the work
    stream; the same objects each time."""
    require_pocl()
    assert_clean_run("""
import ctypes, hdal
cl = ctypes.CDLL("libOpenCL.so.1")
ctx = hdal.Context(backends="cpu,opencl")
for d in [d for d in ctx.devices() if d.platform == "opencl"]:
    h = {k: d.native_handle(k) for k in ("opencl_platform", "opencl_device", "opencl_context", "opencl_queue")}
    assert all(type(v) is int and v != 0 for v in h.values()), h
    assert d.native_handle(4) == h["opencl_queue"] == d.work_stream()
    assert {k: d.native_handle(k) for k in h} == h
    def info(fn, obj, param):
        out = ctypes.c_void_p()
        rc = fn(ctypes.c_void_p(obj), ctypes.c_uint(param), ctypes.c_size_t(ctypes.sizeof(out)),
                ctypes.byref(out), None)
        assert rc == 0, rc
        return out.value
    assert info(cl.clGetCommandQueueInfo, h["opencl_queue"], 0x1090) == h["opencl_context"]  # CL_QUEUE_CONTEXT
    assert info(cl.clGetCommandQueueInfo, h["opencl_queue"], 0x1091) == h["opencl_device"]   # CL_QUEUE_DEVICE
    assert info(cl.clGetDeviceInfo, h["opencl_device"], 0x1031) == h["opencl_platform"]      # CL_DEVICE_PLATFORM
    try:
        d.native_handle("cuda_stream")
        raise SystemExit("an OpenCL device gave a CUDA stream")
    except hdal.Error as e:
        assert e.code == "NOT_FOUND", e.code
        assert str(e) == "hdal_device_native_handle: device %d (opencl) has no HDAL_NATIVE_CUDA_STREAM" % d.id, str(e)
print("ok")
""", expect_out="ok\n")


# ---- bytes in and out ----

def fresh(cpu, n=16, dtype=np.float32):
    """A buffer of the library's own (a copy), n elements 0..n-1."""
    return hdal.from_dlpack(np.arange(n, dtype=dtype), device=cpu, copy=True)


def test_write_then_read_round_trips_bytes(cpu):
    b = fresh(cpu)
    assert b.read() == np.arange(16, dtype=np.float32).tobytes()
    data = bytes(range(256))[:64]
    assert b.write(data) is None
    assert b.read() == data and bytes(memoryview(b)) == data
    assert b.read(size=0) == b"" and b.read(64) == b"" and b.read(60, 4) == data[60:]
    for obj in (bytearray(b"\x01" * 8), memoryview(b"\x02" * 8), np.full(2, 7.5, np.float32),
                np.full((2, 2), 3, np.uint8)):
        b.write(obj, 12)
        assert b.read(12, len(bytes(obj))) == bytes(obj)
    out = np.empty(16, np.float32)
    b.write(np.linspace(0, 1, 16, dtype=np.float32))
    assert b.read_into(out) is None and np.array_equal(out, np.linspace(0, 1, 16, dtype=np.float32))


def test_offsets_and_sizes_count_bytes_not_elements(cpu):
    b = fresh(cpu, 4, np.int32)
    b.write(b"\xff", 1)                      # byte 1 of element 0, not element 1
    assert np.asarray(b).tolist() == [0xff00, 1, 2, 3]
    assert b.read(4, 4) == np.int32(1).tobytes()
    assert b.read(offset=8) == np.arange(2, 4, dtype=np.int32).tobytes()
    out = bytearray(3)
    b.read_into(out, 5)
    assert bytes(out) == b"\x00\x00\x00"
    b.read_into(memoryview(out)[1:], offset=np.int64(8))  # what has __index__ is an int
    assert out == b"\x00\x02\x00"
    b2 = hdal.from_dlpack(np.arange(6, dtype=np.int16).reshape(2, 3), device=cpu, copy=True)
    assert b2.read(6, 6) == np.arange(3, 6, dtype=np.int16).tobytes()  # row-major: row 1


def test_write_into_a_view_writes_the_producer_s_memory(cpu):
    a = np.zeros(4, np.float32)
    v = hdal.from_dlpack(a)
    assert v.is_view
    v.write(np.float32([1, 2]), 8)
    assert a.tolist() == [0, 0, 1, 2]
    a[0] = 9
    assert v.read(0, 4) == np.float32(9).tobytes()


def test_past_the_end_refused_with_the_library_s_message(cpu):
    b = fresh(cpu)
    before = b.read()
    assert error(b.write, b"abcd", 62) == (
        "OUT_OF_RANGE", "hdal_buffer_write: 4 bytes at offset 62 are past the end of the buffer (64 bytes)")
    assert error(b.write, b"", 65) == (
        "OUT_OF_RANGE", "hdal_buffer_write: 0 bytes at offset 65 are past the end of the buffer (64 bytes)")
    assert b.read() == before  # unchanged
    assert error(b.read, 60, 8) == (
        "OUT_OF_RANGE", "hdal_buffer_read: 8 bytes at offset 60 are past the end of the buffer (64 bytes)")
    assert error(b.read, 100) == (
        "OUT_OF_RANGE", "hdal_buffer_read: 0 bytes at offset 100 are past the end of the buffer (64 bytes)")
    # more than memory could hold: the library's refusal, not a MemoryError
    assert error(b.read, size=2**62) == (
        "OUT_OF_RANGE",
        "hdal_buffer_read: 4611686018427387904 bytes at offset 0 are past the end of the buffer (64 bytes)")
    assert error(b.read, 2**63, 2**63 + 5)[0] == "OUT_OF_RANGE"  # offset + size wraps
    out = bytearray(b"x" * 65)
    assert error(b.read_into, out) == (
        "OUT_OF_RANGE", "hdal_buffer_read: 65 bytes at offset 0 are past the end of the buffer (64 bytes)")
    assert out == b"x" * 65


def test_read_only_buffer_refuses_writes_as_the_library_does():
    t = HandTensor([1, 2, 3], versioned=True, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    b = hdal.from_dlpack(t.capsule)
    assert b.read_only
    assert error(b.write, b"\0\0\0\0") == (
        "FAILED_PRECONDITION",
        "hdal_buffer_write: the buffer is read-only (a view of a tensor flagged DLPACK_FLAG_BITMASK_READ_ONLY)")
    assert b.read() == np.float32([1, 2, 3]).tobytes()  # reading is fine
    out = bytearray(4)
    b.read_into(out, 8)
    assert bytes(out) == np.float32(3).tobytes()
    del b
    gc.collect()  # error()'s traceback held the bound method in a cycle
    assert t.deleted == 1


def test_a_transposed_view_has_no_byte_ranges():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = hdal.from_dlpack(a.T)
    assert v.is_view and v.strides == (1, 3)
    tail = ("the buffer is a view whose elements are not in row-major order in memory, so a byte range of it is no "
            "range of its memory; hdal_buffer_copy_to_host() reads it whole, and hdal_buffer_copy_to_device() makes "
            "a row-major copy")
    assert error(v.write, b"\0" * 4) == ("UNIMPLEMENTED", "hdal_buffer_write: " + tail)
    assert error(v.read) == ("UNIMPLEMENTED", "hdal_buffer_read: " + tail)
    assert v.to_device("cpu").read() == np.ascontiguousarray(a.T).tobytes()


def test_wrong_types(cpu):
    b = fresh(cpu)
    accepted = "a C-contiguous object of the buffer protocol (bytes, bytearray, memoryview, a numpy array, ...)"
    writable = "a writable, C-contiguous object of the buffer protocol (bytearray, memoryview, a numpy array, ...)"
    for bad in ("text", 3, None, [1, 2]):
        with pytest.raises(TypeError) as e:
            b.write(bad)
        assert str(e.value) == "write(): data must be %s, got %s" % (accepted, type(bad).__name__)
    with pytest.raises(TypeError) as e:  # not contiguous: as CPython's readinto() says it, the exporter's cause kept
        b.write(np.arange(8, dtype=np.float32)[::2])
    assert str(e.value).startswith("write(): data must be %s, got numpy.ndarray (" % accepted)
    assert e.value.__cause__ is not None
    for bad, got in ((b"abcd", "bytes"), (memoryview(b"abcd"), "memoryview"), ("text", "str"),
                     (np.zeros(4, np.uint8)[::2], "numpy.ndarray")):
        with pytest.raises(TypeError) as e:
            b.read_into(bad)
        assert str(e.value).startswith("read_into(): out must be %s, got %s" % (writable, got)), str(e.value)
    ro = np.zeros(4, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        b.read_into(ro)
    for call in (lambda o: b.write(b"", o), lambda o: b.read(o), lambda o: b.read_into(bytearray(), o)):
        with pytest.raises(TypeError, match=r"offset must be an int, got str"):
            call("4")
        with pytest.raises(ValueError, match=r"offset must be >= 0, got -1$"):
            call(-1)
        with pytest.raises(OverflowError, match=r"offset is out of range \(0 to 18446744073709551615\)"):
            call(2**64)
    with pytest.raises(ValueError, match=r"read\(\): size must be >= 0, got -2$"):
        b.read(0, -2)
    with pytest.raises(TypeError, match=r"read\(\): size must be an int, got float"):
        b.read(size=1.0)
    with pytest.raises(TypeError):
        b.write(data=b"")  # positional only


def test_overlapping_the_buffer_itself_is_a_move(cpu):
    """memoryview(buf) as the source or target of its own buffer: the library
    copies with memcpy, the package stages overlapping ranges."""
    b = fresh(cpu, 8, np.int32)
    b.write(memoryview(b).cast("B")[4:])           # shift left one element
    assert np.asarray(b).tolist() == [1, 2, 3, 4, 5, 6, 7, 7]
    b.read_into(memoryview(b).cast("B")[4:], 0)    # shift right one element
    assert np.asarray(b).tolist() == [1, 1, 2, 3, 4, 5, 6, 7]


def test_threads_write_and_read_disjoint_ranges(cpu):
    b = fresh(cpu, 1 << 16, np.uint8)
    errors = []

    def work(i):
        try:
            chunk = bytes([i]) * 8192
            for _ in range(50):
                b.write(chunk, i * 8192)
                assert b.read(i * 8192, 8192) == chunk
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert b.read() == b"".join(bytes([i]) * 8192 for i in range(8))


def test_opencl_write_read_round_trip():
    require_pocl()
    assert_clean_run("""
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,opencl")
cpu = ctx.devices()[0]
for d in [d for d in ctx.devices() if d.platform == "opencl"]:
    g = hdal.from_dlpack(np.zeros(1024, np.float32), device=d)
    assert g.device == d and not g.is_view
    data = np.random.default_rng(d.id).standard_normal(1024).astype(np.float32)
    assert g.write(data) is None
    assert g.read() == data.tobytes()                     # back, bit for bit
    assert np.array_equal(np.asarray(g.to_device(cpu)), data)
    g.write(b"\\xff" * 12, 4000)                           # a range at an offset
    assert g.read(3996, 20) == data.tobytes()[3996:4000] + b"\\xff" * 12 + data.tobytes()[4012:4016]
    out = np.empty(4, np.float32)
    g.read_into(out, 16)
    assert np.array_equal(out, data[4:8])
    try:
        g.write(b"abcd", 4094)
        raise SystemExit("a write past the end was taken")
    except hdal.Error as e:
        assert e.code == "OUT_OF_RANGE", e.code
        assert str(e) == "hdal_buffer_write: 4 bytes at offset 4094 are past the end of the buffer (4096 bytes)", str(e)
    assert g.read(4094) == data.tobytes()[4094:4096] and len(g.read(size=0)) == 0
    d.synchronize()
print("ok")
""", expect_out="ok\n")
