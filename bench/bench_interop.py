# SPDX-License-Identifier: BSD-3-Clause
"""ns per exchange with real peers: the C exchange table against the capsule path.

Run in the interop lab's venv (tests/interop/lab.sh made it under the build tree):
  HDAL_BACKENDS=cpu <build>/tests/interop/venv/bin/python bench/bench_interop.py
Rows, on a 16-element float32 tensor, each the median over rounds of the best of a few timeit runs:
  hdal.from_dlpack(torch tensor)        through torch's own table (a process without tvm_ffi)
  hdal.from_dlpack(capsule producer)    the same tensor through torch's __dlpack__(max_version=(1, 0))
  torch.from_dlpack(hdal.Buffer)        a capsule (torch does not use a producer's table)
  tvm_ffi.from_dlpack(hdal.Buffer)      through hdal's table   (after the torch rows: tvm_ffi patches torch)
  tvm_ffi.from_dlpack(capsule producer) the same buffer through hdal's __dlpack__()
  and, for each pair of peers, direct peer to peer against through hdal (P -> hdal.from_dlpack -> C):
  numpy -> torch, torch -> numpy, torch -> tvm-ffi (torch's table directly; through hdal, both tables)
"""
import statistics
import sys
import timeit

import numpy as np

import hdal


class Capsules:
    """x's __dlpack__ alone: a producer without a C exchange table."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def ns(f, rounds, number):
    return statistics.median(min(timeit.repeat(f, number=number, repeat=3)) / number * 1e9 for _ in range(rounds))


def main(rounds=7, number=20000):
    import torch
    t = torch.arange(16, dtype=torch.float32)
    a = np.arange(16, dtype=np.float32)
    b = hdal.from_dlpack(a)
    rows = []
    c = hdal._hdal._exchange_counts()
    hdal.from_dlpack(t)
    assert hdal._hdal._exchange_counts()["import_table"] == c["import_table"] + 1, "torch's table not taken"
    rows.append(("hdal.from_dlpack(torch tensor): torch's table", ns(lambda: hdal.from_dlpack(t), rounds, number)))
    ct = Capsules(t)
    rows.append(("hdal.from_dlpack(torch tensor): capsule", ns(lambda: hdal.from_dlpack(ct), rounds, number)))
    rows.append(("torch.from_dlpack(hdal.Buffer): capsule", ns(lambda: torch.from_dlpack(b), rounds, number)))
    pairs = []  # (direct, through hdal)

    def pair(name, direct, through):
        d, t = ns(direct, rounds, number), ns(through, rounds, number)
        rows.append(("%s: direct" % name, d))
        rows.append(("%s: through hdal" % name, t))
        pairs.append((name, d, t))

    pair("numpy -> torch", lambda: torch.from_dlpack(a), lambda: torch.from_dlpack(hdal.from_dlpack(a)))
    pair("torch -> numpy", lambda: np.from_dlpack(t), lambda: np.from_dlpack(hdal.from_dlpack(t)))
    import tvm_ffi
    cb = Capsules(b)
    rows.append(("tvm_ffi.from_dlpack(hdal.Buffer): hdal's table", ns(lambda: tvm_ffi.from_dlpack(b), rounds, number)))
    rows.append(("tvm_ffi.from_dlpack(hdal.Buffer): capsule", ns(lambda: tvm_ffi.from_dlpack(cb), rounds, number)))
    pair("torch -> tvm-ffi", lambda: tvm_ffi.from_dlpack(t), lambda: tvm_ffi.from_dlpack(hdal.from_dlpack(t)))
    print("torch %s, tvm-ffi %s, numpy %s, hdal %s" % (torch.__version__, tvm_ffi.__version__, np.__version__,
                                                      hdal.__version__))
    for name, v in rows:
        print("%-52s %8.0f ns" % (name, v))
    for name, d, t in pairs:
        print("%s: through hdal %+.0f ns against direct (%.2fx its time)" % (name, t - d, t / d))
    table, capsule = rows[0][1], rows[1][1]
    print("torch -> hdal: the table path is %.2fx the capsule path's time" % (table / capsule))
    return 0 if table < capsule else 1


if __name__ == "__main__":
    sys.exit(main())
