# SPDX-License-Identifier: BSD-3-Clause
# The oldest numpy 2 that has wheels for the lab's Python (tests/interop/lab.sh
# runs this file alone, in a venv of that numpy and hdal; the constraints'
# "#oldest" line, which the lab passes as HDAL_INTEROP_OLDEST_NUMPY):
#  - numpy 2.0 (Python 3.11), the legacy path: its __dlpack__ takes no
#    max_version, so hdal asks again the legacy way (docs/python.md); its
#    from_dlpack asks for a legacy capsule, which hdal gives for a writable
#    buffer and refuses, as hdal.BufferError, for a read-only one;
#  - numpy 2.1 (Python 3.13, for which numpy 2.0 has no wheels), DLPack 1.0's
#    first numpy: it exports and asks for versioned capsules (max_version=(1, 0)),
#    so a read-only hdal buffer goes to it as a read-only view, and a read-only
#    array of its own comes to hdal as one (READ_ONLY); a legacy capsule of a
#    read-only array it still refuses to make.
# Both make every array of np.from_dlpack read-only, whatever the capsule says
# (numpy 2.4, the main venv's, makes a writable one of a versioned capsule
# without READ_ONLY).
import ctypes
import os

import numpy as np
import pytest

import hdal
from conftest import record

LEGACY = np.lib.NumpyVersion(np.__version__) < "2.1.0"  # numpy 2.0: no versioned capsules at all
NUMPY = "numpy " + ".".join(np.__version__.split(".")[:2])
MAX = {"max_version": (1, 0)}


def addr(a):
    return a.__array_interface__["data"][0]


def capsule_name(c):
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(c).decode()


def asking(x):
    """x behind a producer of a class made here (hdal remembers a class that refused max_version) that notes
    each __dlpack__ call: its keywords, and the capsule's name or the exception's type."""
    class Asking:
        calls = []

        def __dlpack__(self, **kw):
            try:
                c = x.__dlpack__(**kw)
            except Exception as e:
                Asking.calls.append((kw, type(e).__name__))
                raise
            Asking.calls.append((kw, capsule_name(c)))
            return c

        def __dlpack_device__(self):
            return x.__dlpack_device__()
    return Asking()


def test_the_oldest_numpy_is_the_one_under_test():
    assert np.__version__ == os.environ.get("HDAL_INTEROP_OLDEST_NUMPY"), np.__version__
    record("versions", "numpy (oldest, second venv)", np.__version__)
    if LEGACY:
        with pytest.raises(TypeError):
            np.arange(2).__dlpack__(max_version=(1, 0))  # no versioned export in numpy 2.0
    else:
        assert capsule_name(np.arange(2).__dlpack__(max_version=(1, 0))) == "dltensor_versioned"


def test_what_each_side_asks():
    a = np.arange(6.0).reshape(2, 3)
    p = asking(a)
    b = hdal.from_dlpack(p)
    if LEGACY:  # hdal asks the versioned way, then again the legacy way
        assert p.calls == [(MAX, "TypeError"), ({}, "dltensor")]
        into = "asks max_version=(1, 0): TypeError; asks again __dlpack__(): dltensor"
    else:
        assert p.calls == [(MAX, "dltensor_versioned")]
        into = "asks max_version=(1, 0): dltensor_versioned"
    assert b.is_view and not b.read_only
    q = asking(b)
    c = np.from_dlpack(q)
    if LEGACY:  # numpy 2.0 asks __dlpack__() alone
        assert q.calls == [({}, "dltensor")]
        out = "asks __dlpack__(): dltensor"
    else:
        assert q.calls == [(dict(dl_device=None, copy=None, **MAX), "dltensor_versioned")]
        out = "asks __dlpack__(dl_device=None, copy=None, max_version=(1, 0)): dltensor_versioned"
    assert addr(c) == addr(a) and np.array_equal(c, a)
    record("numpy_oldest", "%s -> hdal" % NUMPY, "hdal " + into)
    record("numpy_oldest", "hdal -> %s" % NUMPY, NUMPY + " " + out)


@pytest.mark.parametrize("make", [
    lambda: np.arange(12, dtype=np.float32).reshape(3, 4),
    lambda: np.arange(12, dtype=np.int64).reshape(3, 4).T,
    lambda: np.arange(12, dtype=np.complex64)[2:7],
    lambda: np.array(3.5),
    lambda: np.zeros((0, 4), np.uint8),
    lambda: np.array([True, False, True]),
], ids=["2-D", "transposed", "slice", "0-d", "empty", "bool"])
def test_oldest_numpy_hdal_oldest_numpy(make):
    a = make()
    counts = hdal._hdal._exchange_counts()["import_capsule"]
    b = hdal.from_dlpack(a)
    assert hdal._hdal._exchange_counts()["import_capsule"] == counts + 1
    assert b.is_view and not b.read_only
    c = np.from_dlpack(b)
    assert np.array_equal(c, a) and c.shape == a.shape and c.dtype == a.dtype
    assert not c.flags.writeable  # numpy 2.0's and 2.1's rule for every from_dlpack array
    if a.size:
        assert addr(c) == addr(a)
    record("numpy_oldest", "%s -> hdal -> %s (%s)" % (NUMPY, NUMPY, a.dtype), "view (read-only, as %s makes "
           "every np.from_dlpack array)" % NUMPY)


def _hand_tensor():
    """python/tests' HandTensor (ctypes), for a versioned READ_ONLY tensor that numpy 2.0 cannot make."""
    import importlib.util
    d = os.environ.get("HDAL_INTEROP_PYTHON_TESTS", os.path.join(os.path.dirname(__file__), "..", "..", "python",
                                                                  "tests"))
    spec = importlib.util.spec_from_file_location("hdal_py_conftest", os.path.join(d, "conftest.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.HandTensor


def test_a_read_only_array_of_the_oldest_numpy():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.raises(BufferError) as e:
        a.__dlpack__()  # numpy's own refusal: no legacy capsule of a read-only array, in 2.0 and 2.1 alike
    assert str(e.value).startswith("Cannot export readonly array since signalling readonly is unsupported by DLPack")
    if LEGACY:
        with pytest.raises(BufferError) as e2:
            hdal.from_dlpack(a)  # numpy 2.0 cannot export it at all: its refusal, as it is
        assert type(e2.value) is BufferError and str(e2.value) == str(e.value)
        record("numpy_oldest", "read-only %s array -> hdal" % NUMPY, "refused by %s (BufferError: %s)"
               % (NUMPY, e.value))
        return
    b = hdal.from_dlpack(a)  # versioned, READ_ONLY
    assert b.read_only and b.is_view
    c = np.from_dlpack(b)
    assert not c.flags.writeable and addr(c) == addr(a) and c.tolist() == [0.0, 1.0, 2.0]
    record("numpy_oldest", "read-only %s array -> hdal" % NUMPY, "a read-only view (READ_ONLY), and back to "
           "%s read-only" % NUMPY)


def test_a_read_only_hdal_buffer_to_the_oldest_numpy():
    t = _hand_tensor()([1.0, 2.0, 3.0], versioned=True, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    r = hdal.from_dlpack(t.capsule)
    assert r.read_only and r.is_view
    if LEGACY:
        with pytest.raises(hdal.BufferError) as e:
            np.from_dlpack(r)  # numpy 2.0 asks for a legacy capsule, which a legacy consumer could write into
        assert e.value.code == "FAILED_PRECONDITION"
        how = "refused (hdal.BufferError); np.from_dlpack(hdal.from_dlpack(buf, copy=True)) copies"
    else:
        v = np.from_dlpack(r)  # numpy 2.1 asks for a versioned capsule: READ_ONLY says it all
        assert not v.flags.writeable and addr(v) == ctypes.addressof(t.data) and v.tolist() == [1.0, 2.0, 3.0]
        with pytest.raises(ValueError):
            v[0] = 9.0
        del v
        how = "a read-only view (READ_ONLY, zero-copy)"
    w = hdal.from_dlpack(r, copy=True)  # a copy, hdal's own memory, writable
    assert not w.read_only and not w.is_view
    c = np.from_dlpack(w)
    assert c.tolist() == [1.0, 2.0, 3.0] and addr(c) != ctypes.addressof(t.data)
    del w, c
    assert t.deleted == 0
    del r
    assert t.deleted == 1
    record("numpy_oldest", "read-only hdal buffer -> %s" % NUMPY, how)
