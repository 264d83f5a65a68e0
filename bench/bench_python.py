# SPDX-License-Identifier: BSD-3-Clause
"""Per-call cost of DLPack through the Python package, against numpy's own.

Three figures on a 16-element float32 array, measured in the same run:
  np.from_dlpack(ndarray)       numpy importing numpy (the baseline)
  hdal.from_dlpack(ndarray)     hdal importing numpy (goal: within 1.5x)
  np.from_dlpack(hdal_buffer)   numpy importing hdal (goal: within 1.5x)
Each figure is the median over rounds of the best of a few timeit runs;
the ratios are medians of each round's own ratio (docs/python.md).
Run: make -C bench run-bench-python, or PYTHONPATH=<build>/python/pkg python3 bench/bench_python.py
"""
import statistics
import sys
import timeit

import numpy as np

import hdal


def main(rounds=15, number=20000):
    a = np.arange(16, dtype=np.float32)
    buf = hdal.from_dlpack(a)
    hdal.from_dlpack(a)  # default context made, producer type learnt
    cases = [
        ("np.from_dlpack(ndarray)", lambda: np.from_dlpack(a)),
        ("hdal.from_dlpack(ndarray)", lambda: hdal.from_dlpack(a)),
        ("np.from_dlpack(hdal_buffer)", lambda: np.from_dlpack(buf)),
    ]
    per = {name: [] for name, _ in cases}
    for _ in range(rounds):
        for name, f in cases:  # interleaved: each round sees the same machine load
            best = min(timeit.repeat(f, number=number, repeat=3)) / number
            per[name].append(best * 1e9)
    base = per[cases[0][0]]
    print("hdal %s, numpy %s, Python %s" % (hdal.__version__, np.__version__, sys.version.split()[0]))
    print("%-30s %12s %10s" % ("per call, 16 x float32", "ns (median)", "ratio"))
    worst = 0.0
    for name, _ in cases:
        ratio = statistics.median(x / b for x, b in zip(per[name], base))
        worst = max(worst, ratio)
        print("%-30s %12.0f %9.2fx" % (name, statistics.median(per[name]), ratio))
    print("goal: both within 1.5x of the baseline: %s" % ("met" if worst <= 1.5 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
