# SPDX-License-Identifier: BSD-3-Clause
# hdal's OpenCL (PoCL) buffers in the matrix: each peer P -> hdal OpenCL (a
# copy onto the device) -> P, directly and through a host copy.  Each peer runs
# in a child interpreter of its own, with PoCL loaded before the peer (PoCL
# carries LLVM, as torch's triton, jaxlib and tensorflow do: a second LLVM
# loaded into a process that has one aborts in LLVM's option registry), as
# python/tests/test_opencl.py runs OpenCL in children.
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import record

CHILD = r"""
import json, sys
import numpy as np
import hdal
out = {}
devs = hdal.devices()  # PoCL first
ocl = [d for d in devs if d.platform == "opencl"]
if not ocl:
    print(json.dumps({"skip": "no OpenCL device: %s" % hdal.default_context().backends()}))
    sys.exit(0)
cpu = devs[0]
from peers import PEERS, addr
p = PEERS[0]
src = np.arange(12, dtype=np.float32).reshape(3, 4)
x = p.make(src)
g = hdal.from_dlpack(x, device=ocl[0])
assert g.device == ocl[0] and not g.is_view and g.__dlpack_device__() == (4, 0)
assert np.array_equal(np.from_dlpack(g.to_device(cpu)), src)
out["%s -> hdal OpenCL" % p.name] = "copy onto the device"
g2 = hdal.from_dlpack(g)  # hdal to hdal on the device: its own table, a view
assert g2.is_view and g2.device == ocl[0]
out["hdal OpenCL -> hdal"] = "zero-copy (the same OpenCL buffer)"
try:
    y = p.take(g)
    if p.name == "tvm-ffi":  # tvm-ffi takes OpenCL tensors: the same cl_mem, through hdal's table
        from peers import capsule_info
        assert "opencl" in str(y.device) and y.data_ptr() == capsule_info(g.__dlpack__(max_version=(1, 0)))[1]
        back = hdal.from_dlpack(y)  # and back, through tvm-ffi's table
        assert back.device == ocl[0] and back.is_view
        assert np.array_equal(np.from_dlpack(back.to_device(cpu)), src)
        out["hdal OpenCL -> tvm-ffi"] = "zero-copy on the device (the same cl_mem), and back to hdal"
    else:
        assert np.array_equal(p.values(y), src)
        out["hdal OpenCL -> %s" % p.name] = "taken (a copy to the host)"
except Exception as e:
    out["hdal OpenCL -> %s" % p.name] = "refused by %s: %s: %s" % (p.name, type(e).__name__, str(e).splitlines()[0][:160])
if p.name == "numpy":  # numpy >= 2.1 asks for the host with device="cpu": hdal copies (IS_COPIED)
    y = np.from_dlpack(g, device="cpu")
    assert np.array_equal(y, src)
    from peers import capsule_info, IS_COPIED
    assert capsule_info(g.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))[2] == IS_COPIED
    out["hdal OpenCL -> numpy (device=\"cpu\")"] = "a copy to the host by hdal's export (dl_device=(1, 0), IS_COPIED)"
h = g.to_device(cpu)  # the way for a host-only consumer
y = p.take(h)
assert np.array_equal(p.values(y), src)
assert p.ptr(y) == p.ptr(p.take(h)) and (p.name in ("tensorflow",) or p.ptr(y) == addr(np.from_dlpack(h)))
out["hdal OpenCL -> to_device(cpu) -> %s" % p.name] = "copy to the host, then zero-copy"
print(json.dumps(out))
"""

PEER_NAMES = ["numpy", "torch", "jax", "tensorflow", "tvm-ffi", "array-api-strict"]


@pytest.mark.parametrize("name", PEER_NAMES)
def test_opencl_round_trip(name):
    vendors = os.environ.get("OCL_ICD_VENDORS", "")
    if not os.environ.get("POCL_DEVICES") or not os.path.exists(os.path.join(vendors, "pocl.icd")):
        record("opencl", "%s (all paths)" % name, "not run: no PoCL ICD (tests/fakes/cl/make-vendors.sh)")
        pytest.skip("no PoCL ICD for the lab (OCL_ICD_VENDORS=%s)" % vendors)
    env = dict(os.environ, HDAL_INTEROP_PEERS=name, HDAL_BACKENDS="cpu,opencl")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert p.returncode == 0, "exit status %d\n%s\n%s" % (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    got = json.loads(p.stdout.strip().splitlines()[-1])
    if "skip" in got:
        record("opencl", "%s (all paths)" % name, "not run: " + got["skip"])
        pytest.skip(got["skip"])
    for k, v in got.items():
        record("opencl", k, v)


# torch 2.15 runs the deleter of a kDLOpenCL tensor, then fails an INTERNAL
# ASSERT ("grandfathered Caffe2 device type opencl") and leaves the capsule's
# name unconsumed (the pattern of pytorch/pytorch#56789): hdal's export runs
# each tensor's release once whatever the consumer does (docs/python.md, "A
# consumer's mistakes"), so the refusal is torch's exception and no more.
TORCH_OPENCL = ("refused by torch with its RuntimeError (an INTERNAL ASSERT after it ran the tensor's deleter and "
                "left the capsule unconsumed); hdal released the buffer once, the process exits cleanly")


def test_opencl_direct_to_torch():
    vendors = os.environ.get("OCL_ICD_VENDORS", "")
    if not os.environ.get("POCL_DEVICES") or not os.path.exists(os.path.join(vendors, "pocl.icd")):
        pytest.skip("no PoCL ICD for the lab (OCL_ICD_VENDORS=%s)" % vendors)
    code = """
        import gc, numpy as np, hdal
        ocl = [d for d in hdal.devices() if d.platform == "opencl"]
        import torch
        g = hdal.from_dlpack(np.arange(4, dtype=np.float32), device=ocl[0])
        before = ocl[0].memory_stats()["bytes_in_use"]
        for capsule in (False, True):  # the Buffer, and a capsule of its own
            try:
                torch.from_dlpack(g.__dlpack__(max_version=(1, 0)) if capsule else g)
                raise SystemExit("torch took a kDLOpenCL tensor")
            except RuntimeError:
                pass  # a refusal is right: torch has no OpenCL device
            gc.collect()
            assert ocl[0].memory_stats()["bytes_in_use"] == before, "the buffer was released while g lives"
        del g
        gc.collect()
        assert ocl[0].memory_stats()["bytes_in_use"] < before, ocl[0].memory_stats()  # released: once, or it would have crashed
        print("clean")
    """
    env = dict(os.environ, HDAL_BACKENDS="cpu,opencl")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                       timeout=300)
    record("opencl", "hdal OpenCL -> torch", TORCH_OPENCL)
    assert p.returncode == 0 and p.stdout.strip() == "clean", "exit status %d: %s" % (p.returncode, p.stderr[-500:])
