# SPDX-License-Identifier: BSD-3-Clause
# The matrix (docs/interop.md): every producer P and consumer C of the lab,
# P -> hdal -> C, each with the cases below.  For each: the values equal, bit
# for bit; hdal's import a view exactly where its rule says (docs/dlpack.md:
# a compact layout up to a permutation, data aligned to the element size) and
# the data pointers equal along the chain where each side can address the
# memory, read through each library's own API; a read-only array never comes
# out writable; the producer's memory freed once, after the last consumer lets
# go.  hdal at either end is the hdal CPU peer (a buffer of hdal's own memory
# as producer, hdal.from_dlpack as consumer).
import gc
import weakref

import numpy as np
import pytest

import hdal
from conftest import record
from peers import BY_NAME, PEERS, IS_COPIED, READ_ONLY, addr, aligned, bits, capsule_info, reference

F32 = "float32"


class Case:
    def __init__(self, name, make, noncompact=False, unaligned=False, read_only=False, dtype=F32):
        self.name, self.make, self.noncompact, self.unaligned, self.read_only, self.dtype = \
            name, make, noncompact, unaligned, read_only, dtype


def _fill(a, dtype=F32):
    a[...] = reference(dtype, a.shape)
    return a


def _ro(a):
    a.flags.writeable = False
    return a


CASES = [
    Case("2-D", lambda: _fill(aligned((2, 3), F32))),
    Case("0-d", lambda: _fill(aligned((), F32))),
    Case("empty", lambda: aligned((0, 3), F32)),
    Case("transposed", lambda: _fill(aligned((3, 4), F32)).T),
    Case("row slice", lambda: _fill(aligned((4, 3), F32))[1:3]),
    Case("strided slice", lambda: _fill(aligned((4, 6), F32))[:, ::2], noncompact=True),
    Case("broadcast", lambda: np.broadcast_to(_fill(aligned((1, 3), F32)), (4, 3)), noncompact=True),
    Case("unaligned", lambda: _fill(aligned((5,), F32, offset=2)), unaligned=True),
    Case("read-only", lambda: _ro(_fill(aligned((5,), F32))), read_only=True),
] + [Case(dt, (lambda dt=dt: _fill(aligned((7,), reference(dt, (1,)).dtype), dt)), dtype=dt)
     for dt in ("bool", "int8", "uint16", "int64", "float16", "float64", "complex64", "complex128", "bfloat16",
                "float8_e4m3fn", "float8_e5m2")]


def producible(p, case):
    """Whether producer p can hold the case at all (its dtypes; layouts and read-only state it keeps)."""
    if case.dtype not in p.dtypes:
        return False
    if case.read_only:
        # The others' arrays have no read-only state to carry (jax's from 0.12 are all READ_ONLY: its whole row
        # is read-only_source's).
        return p.name in ("numpy", "hdal CPU")
    if case.name == "broadcast":  # numpy's broadcast views are read-only: tvm-ffi's legacy ask is refused
        return p.name in ("numpy", "torch")
    if case.unaligned:
        return p.name in ("numpy", "torch", "tvm-ffi")  # the others compact what they are given
    return True


def _row_major(shape, strides):
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def expected_consumer_view(c, h, hptr):
    """Whether consumer c takes hdal buffer h as a view: every CPU peer does, but jax copies host data not
    aligned to 64 bytes (its rule; tensorflow takes any, and refuses a layout other than row-major)."""
    if c.host_align > 1 and hptr % c.host_align:
        return False
    return True


PAIRS = [(p, c, case) for p in PEERS for c in PEERS for case in CASES]

# Pairs that fail by a peer's fault: (consumer, case) -> the reason, naming the peer's issue.  Expected
# failures, strict: a peer that fixes it turns the test red, and the entry goes.
TORCH_NO_READ_ONLY = ("torch has no read-only tensors: torch.from_dlpack ignores DLPACK_FLAG_BITMASK_READ_ONLY "
                      "and hands out a writable tensor (pytorch/pytorch#188554 added a read-only export only; "
                      "Quansight-Labs/numpy_pytorch_interop#132: \"We don't have readonly tensors in PyTorch\")")
KNOWN = {("torch", "read-only"): TORCH_NO_READ_ONLY}


def read_only_source(p, case):
    """Whether hdal's import of p's tensor is read-only: a read-only array, or a producer whose every export is
    READ_ONLY (jax from 0.12); the pairs of the "read-only" case then hold for it whatever the case."""
    return case.read_only or p.exports_read_only


def _id(v):
    return v.name.replace(" ", "-") if hasattr(v, "name") else str(v)


@pytest.mark.parametrize("p, c, case", [pytest.param(p, c, case, id="%s->hdal->%s:%s" % (_id(p), _id(c), _id(case)))
                                        for p, c, case in PAIRS])
def test_pair(p, c, case, request):
    key = "%s|%s|%s" % (p.name, c.name, case.name)
    ro = read_only_source(p, case)
    known = KNOWN.get((c.name, "read-only" if ro else case.name))
    if known and producible(p, case):
        record("cells", key, "xfail")
        request.applymarker(pytest.mark.xfail(strict=True, reason=known))
    if not producible(p, case):
        record("cells", key, "n/a")
        pytest.skip("%s cannot make a %s tensor" % (p.name, case.name))
    if case.dtype not in c.dtypes:
        record("cells", key, "n/a")
        pytest.skip("%s has no %s" % (c.name, case.dtype))
    src = case.make()
    x = p.make(src)
    size = src.size
    p0 = p.ptr(x)
    h = hdal.from_dlpack(x)
    hptr = BY_NAME["hdal CPU"].ptr(h)
    view = not (p.keeps_layout and (case.noncompact or case.unaligned))
    assert h.is_view == view, "hdal's import of %s's tensor: is_view %s" % (p.name, h.is_view)
    if view and size:
        assert hptr == p0, "hdal's view is not on %s's memory" % p.name
    assert h.read_only == ro
    if ro:
        # hdal never hands out a read-only buffer as a legacy capsule (a legacy consumer could write into it).
        if c.legacy_only:
            with pytest.raises(hdal.BufferError) as e:
                c.take(h)
            assert str(e.value).startswith("Can't export a read-only buffer") or "read-only" in str(e.value)
            record("cells", key, "refused")
            return
    if c.row_major_only and not _row_major(h.shape, h.strides):
        # tensorflow takes row-major tensors only; the way there is a compact copy, asked of hdal.
        with pytest.raises(Exception) as e:
            c.take(h)
        assert "Invalid strides array from DLPack" in str(e.value)
        cap = h.__dlpack__(copy=True)
        y = c.tf.experimental.dlpack.from_dlpack(cap)
        assert np.array_equal(bits(c.values(y)), bits(src))
        record("cells", key, "copy")
        return
    y = c.take(h)
    assert np.array_equal(bits(c.values(y)), bits(src)), "values differ"
    assert c.values(y).shape == src.shape
    cview = expected_consumer_view(c, h, hptr)
    if size:
        assert (c.ptr(y) == hptr) == cview, "%s's tensor at %#x, hdal's at %#x" % (c.name, c.ptr(y), hptr)
    if ro:
        assert c.writable(y) is not True, "a read-only array came out writable in %s" % c.name
    # (an empty tensor has no data to copy: its pointer, wherever each side puts it, tells nothing)
    record("cells", key, "view" if view and (cview or not size) else "copy")


LIFETIME_PEERS = PEERS


@pytest.mark.parametrize("p, c", [pytest.param(p, c, id="%s->hdal->%s" % (_id(p), _id(c)))
                                  for p in LIFETIME_PEERS for c in LIFETIME_PEERS])
def test_lifetime(p, c):
    """The producer's memory (a numpy root p wraps zero-copy) lives exactly as long as its last consumer."""
    root = aligned((4, 4), F32)
    _fill(root)
    freed = []
    w = weakref.ref(root, lambda _: freed.append(1))
    x = p.wrap(root)
    assert p.ptr(x) == addr(root), "%s's wrap copied" % p.name
    del root
    h = hdal.from_dlpack(x)
    assert h.read_only == p.exports_read_only
    if h.read_only and c.legacy_only:
        # A read-only buffer goes to a consumer of legacy capsules only as a copy (docs/interop.md).
        assert c.name == "tensorflow"
        y = c.tf.experimental.dlpack.from_dlpack(h.__dlpack__(copy=True))
    else:
        y = c.take(h)
    zero_copy = c.ptr(y) == addr(w()) if w() is not None else False
    del x, h
    gc.collect()
    if zero_copy:
        assert w() is not None and not freed, "freed while %s still holds it" % c.name
    del y
    gc.collect()
    assert w() is None and freed == [1], "not freed once after the last consumer let go: %s" % freed
    record("lifetime", "%s|%s" % (p.name, c.name), "zero-copy" if zero_copy else "copy")


def test_versions():
    for p in PEERS:
        record("versions", p.name, p.version())


def test_export_flags():
    """hdal's versioned export: READ_ONLY for a read-only buffer, IS_COPIED exactly when the export copied."""
    a = aligned((3,), F32)
    h = hdal.from_dlpack(a)
    assert capsule_info(h.__dlpack__(max_version=(1, 0)))[2] == 0
    assert capsule_info(h.__dlpack__(max_version=(1, 0), copy=True))[2] == IS_COPIED
    a.flags.writeable = False
    r = hdal.from_dlpack(a)
    assert capsule_info(r.__dlpack__(max_version=(1, 0)))[2] == READ_ONLY
    assert capsule_info(r.__dlpack__(max_version=(1, 0), copy=True))[2] == IS_COPIED
    assert capsule_info(r.__dlpack__(copy=True))[0] == "dltensor"  # a copy may go out as legacy


class Spy:
    """An hdal buffer behind a producer without a C exchange table: records what each consumer asks."""

    def __init__(self, b):
        self.b, self.asked = b, []

    def __dlpack__(self, **kw):
        self.asked.append(kw)
        return self.b.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.b.__dlpack_device__()


# What each consumer asks of a producer, and the capsule it then gets from hdal.
EXPECTED_CAPSULE = {"numpy": "dltensor_versioned", "torch": "dltensor_versioned",
                    "jax": "dltensor_versioned" if "jax" in BY_NAME and BY_NAME["jax"].dlpack1 else "dltensor",
                    "tvm-ffi": "dltensor", "array-api-strict": "dltensor_versioned", "hdal CPU": "dltensor_versioned"}


@pytest.mark.parametrize("c", [pytest.param(c, id=_id(c)) for c in PEERS if c.name != "tensorflow"])
def test_the_capsule_a_consumer_gets_is_one_it_reads(c):
    a = aligned((3,), F32)
    _fill(a)
    s = Spy(hdal.from_dlpack(a))
    y = c.take(s)
    assert np.array_equal(bits(c.values(y)), bits(a))
    assert len(s.asked) == 1, s.asked
    mv = s.asked[0].get("max_version")
    got = "dltensor_versioned" if mv is not None and mv[0] >= 1 else "dltensor"
    assert got == EXPECTED_CAPSULE[c.name], "%s asked %s" % (c.name, s.asked[0])
    record("capsules", c.name, "asks __dlpack__(%s): gets %s" % (
        ", ".join("%s=%r" % kv for kv in sorted(s.asked[0].items())), got))


# A peer's own copy, __dlpack__(max_version=(1, 0), copy=True): DLPack 1.0
# says the producer marks it DLPACK_FLAG_BITMASK_IS_COPIED (the consumer owns
# it alone).  What each peer does, and hdal taking such a capsule.
TORCH_NO_IS_COPIED = ("torch's __dlpack__(max_version=(1, 0), copy=True) copies but leaves "
                      "DLPACK_FLAG_BITMASK_IS_COPIED unset (flags 0; the flag is DLPack 1.0's, dmlc/dlpack#136; "
                      "torch's copy= came with pytorch/pytorch#150218)")
COPY_REFUSED = {"tensorflow": (RuntimeError, "tf.Tensor does not support DLPack export with a copy=True"),
                "tvm-ffi": (BufferError, "copy not yet supported")}


@pytest.mark.parametrize("p", [pytest.param(p, id=_id(p)) for p in PEERS])
def test_a_peers_copy_export(p, request):
    src = _fill(aligned((2, 3), F32))
    x = p.make(src)
    if p.name in COPY_REFUSED:
        kind, text = COPY_REFUSED[p.name]
        with pytest.raises(kind) as e:
            x.__dlpack__(max_version=(1, 0), copy=True)
        assert text in str(e.value)
        record("copies", p.name, "refuses __dlpack__(copy=True): %s" % text)
        return
    if p.name == "torch":
        record("copies", p.name, "expected failure: " + TORCH_NO_IS_COPIED)
        request.applymarker(pytest.mark.xfail(strict=True, reason=TORCH_NO_IS_COPIED))
    cap = x.__dlpack__(max_version=(1, 0), copy=True)
    name, cptr, flags = capsule_info(cap)
    assert cptr != p.ptr(x), "%s's copy=True export is on the original's memory" % p.name
    h = hdal.from_dlpack(cap)  # hdal takes the copy as it is: no second copy
    assert h.is_view and BY_NAME["hdal CPU"].ptr(h) == cptr
    assert np.array_equal(bits(np.from_dlpack(h)), bits(src))
    # hdal shares the memory with whoever takes it from hdal: its export is not a copy (READ_ONLY where the
    # peer's copy is: jax's from 0.12)
    ro = p.exports_read_only
    assert h.read_only == ro
    assert capsule_info(h.__dlpack__(max_version=(1, 0)))[2] == (READ_ONLY if ro else 0)
    if not ro:
        np.from_dlpack(h)[0, 0] = -1  # the copy is the consumer's alone: the original keeps its values
        assert np.array_equal(bits(p.values(x)), bits(src))
    if name == "dltensor":
        assert p.name == "jax" and not p.dlpack1, "%s answered max_version=(1, 0) with a legacy capsule" % p.name
        record("copies", p.name, "a legacy capsule (no flags to carry IS_COPIED); hdal takes it zero-copy")
        return
    if ro:
        assert flags == IS_COPIED | READ_ONLY, "%s's copy carries flags %s" % (p.name, flags)
        record("copies", p.name, "IS_COPIED and READ_ONLY set (its arrays are immutable, a copy too); hdal takes "
               "it zero-copy and read-only, and its own export of it is READ_ONLY, not IS_COPIED")
        return
    assert flags & IS_COPIED, "%s's copy carries flags %s, not IS_COPIED" % (p.name, flags)
    record("copies", p.name, "IS_COPIED set; hdal takes it zero-copy, and its own export of it is not IS_COPIED")
