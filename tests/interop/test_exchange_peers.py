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


# A kernel library's own allocation (tvm-ffi's Tensor::FromEnvAlloc): while a
# function runs with an hdal.Buffer argument, tvm-ffi makes the producer's
# managed_tensor_allocator its environment allocator, so the output comes from
# hdal's allocator and pool on the argument's device, and goes back to Python
# through hdal's table as an hdal.Buffer.
EMPTY_LIKE = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
namespace ffi = tvm::ffi;
static ffi::Tensor empty_like(ffi::TensorView x) {
  return ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, x.shape(), x.dtype(), x.device());
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(empty_like, empty_like);
"""


@pytest.fixture(scope="module")
def empty_like_lib(tmp_path_factory):
    libinfo = pytest.importorskip("tvm_ffi.libinfo")
    d = tmp_path_factory.mktemp("tvm_ffi_kernel")
    (d / "empty_like.cc").write_text(EMPTY_LIKE)
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O1", "-shared", "-fPIC"]
    cmd += ["-I" + p for p in libinfo.include_paths()]
    cmd += [str(d / "empty_like.cc"), libinfo.find_libtvm_ffi(), "-o", str(d / "empty_like.so")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s\n%s" % (" ".join(cmd), p.stderr[-3000:])
    return str(d / "empty_like.so")


ALLOCATE = """
    import sys, numpy as np, hdal, tvm_ffi
    devs = [d for d in hdal.devices() if d.platform == sys.argv[2]]
    if not devs:
        print("skip no %s device: %s" % (sys.argv[2], hdal.default_context().backends()))
        sys.exit(0)
    dev = devs[0]
    mod = tvm_ffi.load_module(sys.argv[1])
    x = hdal.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    base = dev.memory_stats()
    counts = hdal._hdal._exchange_counts
    c0 = counts()
    y = mod.empty_like(x)
    st = dev.memory_stats()
    assert type(y) is hdal.Buffer and y.device == dev and y.shape == (2, 3) and y.dtype == "float32", y
    assert counts()["to_py_table"] == c0["to_py_table"] + 1, (c0, counts())
    assert st["num_allocs"] == base["num_allocs"] + 1 and st["bytes_in_use"] == base["bytes_in_use"] + 24, (base, st)
    ptr = y.__dlpack__(max_version=(1, 0))
    from peers import capsule_info
    first = capsule_info(ptr)[1]
    del y, ptr
    st = dev.memory_stats()
    assert st["bytes_in_use"] == base["bytes_in_use"], (base, st)  # freed once, back to the pool
    z = mod.empty_like(x)
    st2 = dev.memory_stats()
    assert st2["num_pool_hits"] == st["num_pool_hits"] + 1, (st, st2)
    assert capsule_info(z.__dlpack__(max_version=(1, 0)))[1] == first  # the block the pool kept
    print("ok", base["num_allocs"], st2["num_allocs"], st2["num_pool_hits"])
"""


@pytest.mark.parametrize("platform", ["cpu", "opencl"])
def test_tvm_ffi_allocation_goes_through_hdals_allocator_and_pool(empty_like_lib, platform):
    env = dict(os.environ, HDAL_BACKENDS="cpu,opencl" if platform == "opencl" else "cpu")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(ALLOCATE), empty_like_lib, platform],
                       capture_output=True, text=True, env=env, timeout=300,
                       cwd=os.path.dirname(os.path.abspath(__file__)))
    assert p.returncode == 0, "exit status %d\n%s\n%s" % (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    if p.stdout.startswith("skip"):
        pytest.skip(p.stdout.strip())
    assert p.stdout.startswith("ok"), p.stdout
    record("exchange", "tvm-ffi Tensor::FromEnvAlloc on an hdal %s device" % platform,
           "hdal's allocator and pool: one allocation, freed once, its block reused by the next")
