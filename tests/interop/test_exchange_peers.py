# SPDX-License-Identifier: BSD-3-Clause
# DLPack 1.3's C exchange API against real peers (issue 36, item 3): hdal
# consumes torch's own table (a process that has not imported tvm_ffi, which
# patches older torch), and tvm-ffi consumes hdal's, both ways, through a
# registered function.  The path taken is read from hdal's counters
# (hdal._hdal._exchange_counts()), not from timings.
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hdal
from conftest import record
from peers import addr, pyconf


def _run(code):
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=dict(os.environ), timeout=300)
    assert p.returncode == 0, "exit status %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


def test_hdal_takes_torchs_own_table():
    out = _run("""
        import sys
        import torch, hdal
        assert "tvm_ffi" not in sys.modules
        api = type(torch.ones(1)).__dlpack_c_exchange_api__
        assert type(api).__name__ == "PyCapsule" and "dlpack_exchange_api" in repr(api), api
        counts = hdal._hdal._exchange_counts
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        before = counts()
        b = hdal.from_dlpack(t)
        after = counts()
        assert after["import_table"] == before["import_table"] + 1, (before, after)
        assert after["import_capsule"] == before["import_capsule"], (before, after)
        assert b.is_view and b.shape == (3, 4) and b.dtype == "float32"
        u = torch.from_dlpack(b)
        assert u.data_ptr() == t.data_ptr()
        t[1, 1] = 100
        assert u[1, 1].item() == 100
        # a transposed view, through the table too
        bt = hdal.from_dlpack(t.T)
        assert bt.is_view and bt.strides == (1, 4) and counts()["import_table"] == after["import_table"] + 1
        # stream= is told to __dlpack__: the capsule path (a CPU tensor takes no stream, so none is given here)
        print("ok", torch.__version__)
    """)
    assert out.startswith("ok")
    record("exchange", "torch table -> hdal", "hdal.from_dlpack(torch tensor) takes torch's table (%s)" %
           out.split()[1])


def test_tvm_ffi_echo_goes_through_hdals_table_both_ways():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    echo = tvm_ffi.get_global_func("testing.echo")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = hdal.from_dlpack(a)
    counts = hdal._hdal._exchange_counts
    before = counts()
    r = echo(b)
    after = counts()
    assert type(r) is hdal.Buffer and r.is_view
    assert after["export_table"] == before["export_table"] + 1 and after["to_py_table"] == before["to_py_table"] + 1
    assert addr(np.from_dlpack(r)) == addr(a) and r.shape == (2, 3) and r.strides == (3, 1)
    a[0, 0] = 42
    assert np.from_dlpack(r)[0, 0] == 42
    del b, r
    record("exchange", "hdal -> tvm-ffi testing.echo -> hdal",
           "an hdal.Buffer on the same memory, through hdal's table both ways")


def test_tvm_ffi_from_dlpack_uses_hdals_table():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a = np.arange(4, dtype=np.int32)
    b = hdal.from_dlpack(a)
    before = hdal._hdal._exchange_counts()["export_table"]
    t = tvm_ffi.from_dlpack(b)
    assert hdal._hdal._exchange_counts()["export_table"] == before + 1
    assert t.data_ptr() == addr(a)
