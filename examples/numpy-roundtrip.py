#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Example 4: numpy -> hdal -> numpy through DLPack, zero-copy, checked.

Needs numpy and the hdal package (Debian: python3-hdal; from a build tree,
PYTHONPATH=_build/python/pkg).  Run: python3 numpy-roundtrip.py
"""
import sys

import numpy as np

import hdal

a = np.arange(1_000_000, dtype=np.float32)

# numpy -> hdal: copy=False asks for a view of numpy's memory, or an error.
buf = hdal.from_dlpack(a, copy=False)
print(f"hdal {hdal.__version__}: {buf.shape} {buf.dtype} on {buf.device.platform} "
      f"device {buf.device.id}, view: {buf.is_view}")

# hdal -> numpy: numpy imports hdal's buffer, again without a copy.
b = np.from_dlpack(buf)

# One memory for all three: a write to a shows in b.  (numpy marks the
# arrays it imports through DLPack read-only, so b itself takes no writes.)
a[0] = 42.0
ok = (buf.is_view and np.shares_memory(a, b) and b[0] == 42.0
      and b.shape == a.shape and b.dtype == a.dtype and np.array_equal(a, b))
print(f"numpy -> hdal -> numpy: same memory {np.shares_memory(a, b)}, "
      f"b[0] after a[0] = 42: {b[0]}, values equal: {np.array_equal(a, b)}")

# A device of another backend (OpenCL, CUDA...) takes a copy: to_device there
# and back to the host, where numpy imports it again.
other = [d for d in hdal.devices() if d.platform != "cpu" and d.runtime_class == "pjrt"]
if other:
    host = [d for d in hdal.devices() if d.platform == "cpu"][0]
    back = np.from_dlpack(buf.to_device(other[0]).to_device(host))
    same = np.array_equal(back, a)
    print(f"through {other[0].platform} device {other[0].id} and back: values equal: {same}")
    ok = ok and same

print("all right" if ok else "WRONG")
sys.exit(0 if ok else 1)
