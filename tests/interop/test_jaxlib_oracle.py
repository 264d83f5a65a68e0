# SPDX-License-Identifier: BSD-3-Clause
# jaxlib as the oracle of hdal's import (issue 36, item 4): the same hostile
# producers fed to jax.dlpack.from_dlpack and to hdal.from_dlpack.  Where
# jaxlib refuses with one of the messages hdal copies from it (docs/dlpack.md,
# "Check order"), hdal's text is the same, byte for byte (jaxlib's status
# prefix "CODE: " aside: hdal's code is e.code); where both accept, the values
# agree; every other outcome is recorded with both sides, for docs/interop.md.
import ctypes
import re

import numpy as np
import pytest

import hdal
from conftest import record
from peers import aligned, capsule_info, pyconf

jax = pytest.importorskip("jax")
import jax.dlpack  # noqa: E402
import jaxlib  # noqa: E402

JAXLIB = tuple(int(p) for p in jaxlib.__version__.split(".")[:3])

# The messages hdal copies from jaxlib's dlpack.cc and dlpack_types.cc.
COPIED = [
    re.compile(r'^DLPack tensor must be a capsule with name "dltensor", got ".*"\. '
               r'Note that a DLPack tensor may be consumed at most once\.$'),
    re.compile(r"^Number of dimensions in DLManagedTensor must be nonnegative, got -?\d+$"),
    re.compile(r"^Only DLPack tensors with trivial \(compact\) striding are supported; .*$"),
    re.compile(r"^Can't create a view of buffer with unaligned data, ptr: 0x[0-9a-f]+ is not aligned to \d+ bytes\. $"),
    re.compile(r"^Unknown or invalid DLPack type code \d+$"),
    re.compile(r"^DLPack types with lanes != 1 not implemented, got \d+$"),
    re.compile(r"^Invalid or unsupported DLPack .*$"),
    re.compile(r"^Only 8-bit DLPack booleans are supported, got \d+ bits$"),
]
NAMES = {n: ctypes.c_char_p(n.encode()) for n in ("dltensor", "dltensor_versioned", "used_dltensor", "other")}

# What moved with jaxlib (the lab's pins: 0.10.2 for Python 3.11, 0.12.1 for 3.13; 0.11.0 and 0.12.0 were
# checked by hand): from 0.12.0 jaxlib reads versioned capsules, and its capsule-name message names both names,
# where hdal's stays the one the contract copies (jaxlib 0.11's and before: docs/dlpack.md, "Check order");
# from 0.12.1 it takes a sub-byte float4 tensor (0.12.0 refuses its layout, as 0.10.2 does).
JAXLIB_ACCEPTS_FROM = {"versioned capsule": (0, 12, 0), "float4_e2m1fn (sub-byte)": (0, 12, 1)}
NAMES_BOTH = re.compile(r'^DLPack tensor must be a capsule with name "dltensor" or "dltensor_versioned", '
                        r'got "(.*)"\. Note that a DLPack tensor may be consumed at most once\.$')
NAME_CASES = ("wrong capsule name", "used capsule")


class Hostile:
    """A producer of one hand-made tensor over a numpy array's memory (python/tests' ctypes structures)."""

    def __init__(self, values, shape=None, strides=None, code=2, bits=32, lanes=1, ndim=None, offset=0,
                 versioned=False, name=None, raises=None):
        self.values = np.ascontiguousarray(values)
        self.raw = aligned((self.values.nbytes + 64,), np.uint8)
        self.raw[offset:offset + self.values.nbytes] = self.values.view(np.uint8).ravel()
        shape = self.values.shape if shape is None else shape
        n = len(shape)
        self.shape = (ctypes.c_int64 * max(n, 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(n, 1))(*strides)
        self.deleted = 0
        self.deleter = pyconf.DELETER(self._delete)
        self.raises = raises
        t = pyconf.DLTensor(self.raw.ctypes.data + offset, pyconf.DLDevice(1, 0), n if ndim is None else ndim,
                            pyconf.DLDataType(code, bits, lanes), self.shape,
                            None if self.strides is None else ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)),
                            0)
        self.versioned = versioned
        if versioned:
            self.m = pyconf.DLManagedTensorVersioned(pyconf.DLPackVersion(1, 0), None, self.deleter, 0, t)
        else:
            self.m = pyconf.DLManagedTensor(t, None, self.deleter)
        name = name or ("dltensor_versioned" if versioned else "dltensor")
        self.capsule = pyconf._capsule_new(ctypes.addressof(self.m), NAMES[name], None)

    def _delete(self, ptr):
        self.deleted += 1

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.raises:
            raise self.raises
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


F = np.arange(6, dtype=np.float32).reshape(2, 3)
CASES = {
    "wrong capsule name": dict(values=F, name="other"),
    "used capsule": dict(values=F, name="used_dltensor"),
    "negative ndim": dict(values=F, ndim=-1),
    "broadcast strides": dict(values=F[:1], shape=(4, 3), strides=(0, 1)),
    "padded strides": dict(values=np.arange(8, dtype=np.float32), shape=(2, 3), strides=(4, 1)),
    "lanes 2": dict(values=F, lanes=2),
    "int4 (sub-byte)": dict(values=np.arange(3, dtype=np.uint8), shape=(6,), code=0, bits=4),
    "float4_e2m1fn (sub-byte)": dict(values=np.arange(3, dtype=np.uint8), shape=(6,), code=17, bits=4),
    "float6_e2m3fn": dict(values=np.arange(6, dtype=np.uint8), code=15, bits=6),
    "unknown dtype code 99": dict(values=F, code=99),
    "bool of 1 bit": dict(values=np.arange(6, dtype=np.uint8), code=6, bits=1),
    "float 24 bits": dict(values=np.arange(6, dtype=np.uint8), code=2, bits=24),
    "unaligned, copy=None": dict(values=F, offset=2),
    "unaligned, copy=False": dict(values=F, offset=2, copy=False),
    "aligned to 4, not 64, copy=False": dict(values=F, offset=4, copy=False),
    "versioned capsule": dict(values=F, versioned=True),
    "__dlpack__ raises": dict(values=F, raises=BufferError("this producer cannot export")),
    "plain float32 (control)": dict(values=F),
    "transposed strides (control)": dict(values=F, shape=(3, 2), strides=(1, 3)),
}


# Where hdal accepts what jaxlib refuses, by design (docs/dlpack.md): the reason, and what hdal says with
# copy=False, which must then be jaxlib's message.
HDAL_ACCEPTS = {
    "broadcast strides": "hdal copies a tensor whose layout is not compact (jaxlib refuses it); with "
                         "copy=False it refuses with jaxlib's message",
    "padded strides": "hdal copies a tensor whose layout is not compact (jaxlib refuses it); with "
                      "copy=False it refuses with jaxlib's message",
    "versioned capsule": "hdal reads DLPack 1.x versioned capsules too; jaxlib before 0.12 reads legacy ones only",
}


def _status(e):
    """jaxlib's message without its status prefix ("INVALID_ARGUMENT: "), hdal's as it is."""
    return re.sub(r"^[A-Z_]+: ", "", str(e))


def _run(consume, kw):
    kw = dict(kw)
    copy = kw.pop("copy", None)
    x = Hostile(**kw)
    try:
        y = consume(x, copy)
        return ("ok", y, x)
    except Exception as e:  # noqa: BLE001 - the outcome itself is what is compared
        return ("error", e, x)


def _jax(x, copy):
    return np.asarray(jax.dlpack.from_dlpack(x, copy=copy))


# numpy's own refusal of a dtype it cannot read (float4), after hdal accepted: a RuntimeError up to numpy 2.4
# (Python 3.11's pins), the builtin BufferError from numpy 2.5 (3.13's), "Unsupported dtype in DLTensor." in both.
NUMPY_REFUSAL = BufferError if np.lib.NumpyVersion(np.__version__) >= "2.5.0" else RuntimeError


def _hdal(x, copy):
    b = hdal.from_dlpack(x, copy=copy)
    try:
        return np.from_dlpack(b)
    except NUMPY_REFUSAL as e:
        if type(e) is not NUMPY_REFUSAL or str(e) != "Unsupported dtype in DLTensor.":
            raise  # not numpy's refusal (hdal.BufferError is a BufferError too)
        return ("numpy cannot read it: %s" % e, b)


@pytest.mark.parametrize("name", list(CASES))
def test_same_outcome_as_jaxlib(name):
    kw = CASES[name]
    j, jv, jx = _run(_jax, kw)
    h, hv, hx = _run(_hdal, kw)
    def describe(kind, v):
        if kind == "ok":
            return "accepts" + (" (%s)" % v[0] if isinstance(v, tuple) else "")
        return re.sub(r"0x[0-9a-f]+", "0xADDR", "%s: %s" % (type(v).__name__, _status(v)))
    verdict = "differs (listed)"
    if name in JAXLIB_ACCEPTS_FROM:
        assert (j == "ok") == (JAXLIB >= JAXLIB_ACCEPTS_FROM[name]), "jaxlib %s: %s" % (jaxlib.__version__,
                                                                                      describe(j, jv))
    if name in NAME_CASES:
        assert j == "error" and bool(NAMES_BOTH.match(_status(jv))) == (JAXLIB >= (0, 12, 0)), _status(jv)
    if j == "error" and NAMES_BOTH.match(_status(jv)):
        # The same refusal of the same capsule; hdal's text is the contract's, jaxlib 0.11's.
        got = NAMES_BOTH.match(_status(jv)).group(1)
        assert h == "error" and str(hv) == ('DLPack tensor must be a capsule with name "dltensor", got "%s". Note '
                                            'that a DLPack tensor may be consumed at most once.' % got), str(hv)
        verdict = ("the same refusal; jaxlib %s names both capsule names, hdal's text is jaxlib 0.11's (the "
                   "contract's)" % jaxlib.__version__)
    elif j == "error" and h == "ok" and name in HDAL_ACCEPTS:
        assert any(p.match(_status(jv)) for p in COPIED)
        verdict = "hdal accepts: " + HDAL_ACCEPTS[name]
        if "copy=False" in HDAL_ACCEPTS[name]:
            h2, hv2, _ = _run(_hdal, dict(kw, copy=False))
            assert h2 == "error" and str(hv2) == _status(jv), "with copy=False hdal says %r" % str(hv2)
            assert isinstance(hv2, hdal.CopyError)
    elif j == "error" and any(p.match(_status(jv)) for p in COPIED):
        assert h == "error", "jaxlib refuses (%s), hdal accepts" % _status(jv)
        # A pointer in the message is the tensor's own: the same memory in both runs only by chance.
        jm, hm = _status(jv), str(hv)
        if "ptr: 0x" in jm:
            jm = re.sub(r"0x[0-9a-f]+", "0xADDR", jm)
            hm = re.sub(r"0x[0-9a-f]+", "0xADDR", hm)
        assert hm == jm, "hdal's message differs from jaxlib's"
        verdict = "same message"
    elif j == "ok" and h == "ok" and isinstance(hv, tuple):
        # float4 (jaxlib 0.12.1): numpy cannot read hdal's buffer, so the bytes are compared: jax's values (one
        # code a byte) packed two to a byte, the first in the low half, against the producer's, and hdal's
        # buffer a view of them (its own capsule's data pointer, read with ctypes).
        assert name == "float4_e2m1fn (sub-byte)"
        codes = jv.view(np.uint8) & 0xF
        packed = (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()
        _, ptr, _ = capsule_info(hv[1].__dlpack__())
        assert hv[1].is_view and ptr == hx.raw.ctypes.data
        assert packed == ctypes.string_at(ptr, len(packed)) == hx.values.tobytes(), "values differ"
        verdict = "both accept, the same bytes (numpy cannot read float4: compared as packed codes)"
    elif j == "ok" and h == "ok":
        assert np.array_equal(jv, hv), "values differ"
        verdict = "both accept, same values"
    elif j == "error" and h == "error":
        verdict = "both refuse, other messages"
    record("oracle", name, {"jax": describe(j, jv), "hdal": describe(h, hv), "verdict": verdict})
    # Whatever the outcome, each tensor's deleter ran at most once (a refused one is its producer's still).
    assert jx.deleted <= 1 and hx.deleted <= 1
