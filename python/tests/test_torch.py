# SPDX-License-Identifier: BSD-3-Clause
# DLPack with PyTorch (Debian's 1.13): torch -> hdal -> torch and numpy.
import numpy as np
import pytest

import hdal
from conftest import assert_clean_run

torch = pytest.importorskip("torch")


def test_torch_hdal_torch_zero_copy():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    b = hdal.from_dlpack(t)
    assert b.is_view and (b.shape, b.strides, b.dtype) == ((3, 4), (4, 1), "float32")
    u = torch.from_dlpack(b)
    assert u.data_ptr() == t.data_ptr()
    u[2, 3] = -1  # writes visible both ways
    assert t[2, 3].item() == -1
    t[0, 0] = 50
    assert u[0, 0].item() == 50


def test_torch_to_numpy_through_hdal():
    t = torch.arange(5, dtype=torch.int32)
    a = np.from_dlpack(hdal.from_dlpack(t))
    assert a.__array_interface__["data"][0] == t.data_ptr()
    t[1] = 10
    assert a[1] == 10


def test_torch_dtypes():
    for dt, name in [(torch.uint8, "uint8"), (torch.int16, "int16"),
                     (torch.float16, "float16"), (torch.bfloat16, "bfloat16"), (torch.float64, "float64"),
                     (torch.complex64, "complex64")]:
        t = (torch.arange(4) % 2).to(dt)
        b = hdal.from_dlpack(t)
        assert b.dtype == name
        assert torch.equal(torch.from_dlpack(b), t)


def test_torch_transposed_and_sliced():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    b = hdal.from_dlpack(t.t(), copy=False)
    assert b.is_view and b.strides == (1, 4)
    u = torch.from_dlpack(b)
    assert u.data_ptr() == t.data_ptr() and torch.equal(u, t.t())
    s = hdal.from_dlpack(t[:, 1::2])
    assert not s.is_view and torch.equal(torch.from_dlpack(s), t[:, 1::2])
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(t[:, 1::2], copy=False)
    assert e.value.code == "UNIMPLEMENTED"
    assert t[0, 1].item() == 1  # the source is intact and usable


def test_torch_seed_refusal(ifrt_device):
    t = torch.ones(3)
    with pytest.raises(hdal.Error) as e:
        hdal.from_dlpack(t, device=ifrt_device)
    assert (e.value.code, str(e.value)) == ("FAILED_PRECONDITION",
                                            "DLPack is supported for PjRt-compatible backends only.")
    t += 1
    assert t.tolist() == [2, 2, 2]


def test_clean_exit_torch():
    assert_clean_run("""
        import torch, numpy as np, hdal
        t = torch.arange(8, dtype=torch.float32)
        b = hdal.from_dlpack(t)
        u = torch.from_dlpack(b)
        n = np.from_dlpack(hdal.from_dlpack(u))
        cap = t.__dlpack__()
        kept = hdal.from_dlpack(cap)
        del t
        print(float(n.sum()))
        """, expect_out="28.0\n")
