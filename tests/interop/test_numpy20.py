# SPDX-License-Identifier: BSD-3-Clause
# numpy 2.0, the legacy path (tests/interop/lab.sh runs this file alone, in a
# venv of numpy 2.0 and hdal): its __dlpack__ takes no max_version, so hdal
# asks again the legacy way (docs/python.md); its from_dlpack asks for a
# legacy capsule, which hdal gives for a writable buffer and refuses, as
# hdal.BufferError, for a read-only one.
import numpy as np
import pytest

import hdal
from conftest import record


def addr(a):
    return a.__array_interface__["data"][0]


def test_numpy_20_is_the_one_under_test():
    assert np.__version__.startswith("2.0."), np.__version__
    record("versions", "numpy (legacy venv)", np.__version__)
    with pytest.raises(TypeError):
        np.arange(2).__dlpack__(max_version=(1, 0))  # no versioned export in numpy 2.0


@pytest.mark.parametrize("make", [
    lambda: np.arange(12, dtype=np.float32).reshape(3, 4),
    lambda: np.arange(12, dtype=np.int64).reshape(3, 4).T,
    lambda: np.arange(12, dtype=np.complex64)[2:7],
    lambda: np.array(3.5),
    lambda: np.zeros((0, 4), np.uint8),
    lambda: np.array([True, False, True]),
], ids=["2-D", "transposed", "slice", "0-d", "empty", "bool"])
def test_numpy20_hdal_numpy20(make):
    a = make()
    counts = hdal._hdal._exchange_counts()["import_capsule"]
    b = hdal.from_dlpack(a)
    assert hdal._hdal._exchange_counts()["import_capsule"] == counts + 1
    assert b.is_view and not b.read_only
    c = np.from_dlpack(b)
    assert np.array_equal(c, a) and c.shape == a.shape and c.dtype == a.dtype
    if a.size:
        assert addr(c) == addr(a)
    record("numpy20", "numpy 2.0 -> hdal -> numpy 2.0 (%s)" % a.dtype, "view")


def _hand_tensor():
    """python/tests' HandTensor (ctypes), for a versioned READ_ONLY tensor that numpy 2.0 cannot make."""
    import importlib.util
    import os
    d = os.environ.get("HDAL_INTEROP_PYTHON_TESTS", os.path.join(os.path.dirname(__file__), "..", "..", "python",
                                                                  "tests"))
    spec = importlib.util.spec_from_file_location("hdal_py_conftest", os.path.join(d, "conftest.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.HandTensor


def test_a_read_only_buffer_goes_to_numpy20_only_as_a_copy():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.raises(BufferError):
        a.__dlpack__()  # numpy 2.0's own refusal: it cannot export a read-only array at all
    t = _hand_tensor()([1.0, 2.0, 3.0], versioned=True, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    r = hdal.from_dlpack(t.capsule)
    assert r.read_only and r.is_view
    with pytest.raises(hdal.BufferError) as e:
        np.from_dlpack(r)  # numpy 2.0 asks for a legacy capsule, which a legacy consumer could write into
    assert e.value.code == "FAILED_PRECONDITION"
    c = np.from_dlpack(hdal.from_dlpack(r, copy=True))  # the way: a copy, hdal's own memory, writable
    assert c.tolist() == [1.0, 2.0, 3.0]
    del r
    assert t.deleted == 1
    record("numpy20", "read-only hdal buffer -> numpy 2.0", "refused (hdal.BufferError); "
           "np.from_dlpack(hdal.from_dlpack(buf, copy=True)) copies")
