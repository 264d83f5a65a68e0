# SPDX-License-Identifier: BSD-3-Clause
"""Per-call cost of DLPack through the Python package, against numpy's own.

On a 16-element float32 array, each row beside its anchor, in the same run:
  np.from_dlpack(ndarray)          numpy importing numpy: the anchor
  hdal.from_dlpack(ndarray)        hdal importing numpy          (target: <= 0.9x)
  np.from_dlpack(hdal.Buffer)      numpy importing hdal          (target: <= 0.9x)
  hdal.from_dlpack(hdal.Buffer)    hdal importing hdal, through the C exchange API
and, called from C as tvm-ffi would (tests' _exchange_probe, when built):
  table: from_py + deleter         managed_tensor_from_py_object_no_sync  (target: <= 80 ns)
  table: borrow                    dltensor_from_py_object_no_sync        (target: <= 80 ns)
Each figure is the median over rounds of the best of a few timeit runs; each
ratio is the median of the rounds' own ratios (rounds interleave the rows, so
each sees the same load), with the worst round beside it (docs/python.md).
The last line, "summary: ...", is what bench_python_numpys.sh collects.
Run: make -C bench run-bench-python (each numpy: bench_python_numpys.sh), or
PYTHONPATH=<build>/python/pkg:<build>/python/.libs python3 bench/bench_python.py
"""
import statistics
import sys
import timeit

import numpy as np

import hdal

try:
    import _exchange_probe as probe
except ImportError:
    probe = None


def main(rounds=15, number=20000):
    a = np.arange(16, dtype=np.float32)
    buf = hdal.from_dlpack(a)
    hdal.from_dlpack(a)  # default context made, producer type learnt
    cases = [
        ("np.from_dlpack(ndarray)", lambda: np.from_dlpack(a)),
        ("hdal.from_dlpack(ndarray)", lambda: hdal.from_dlpack(a)),
        ("np.from_dlpack(hdal.Buffer)", lambda: np.from_dlpack(buf)),
        ("hdal.from_dlpack(hdal.Buffer)", lambda: hdal.from_dlpack(buf)),
    ]
    targets = {"hdal.from_dlpack(ndarray)": 0.9, "np.from_dlpack(hdal.Buffer)": 0.9}
    per = {name: [] for name, _ in cases}
    c_rows = {"table: from_py + deleter (C)": [], "table: borrow (C)": []}
    for _ in range(rounds):
        for name, f in cases:
            per[name].append(min(timeit.repeat(f, number=number, repeat=3)) / number * 1e9)
        if probe:
            c_rows["table: from_py + deleter (C)"].append(min(probe.time_exchange(buf, 200000) for _ in range(3)))
            c_rows["table: borrow (C)"].append(min(probe.time_borrow(buf, 200000) for _ in range(3)))
    base = per[cases[0][0]]
    print("hdal %s, numpy %s, Python %s, %d rounds" % (hdal.__version__, np.__version__, sys.version.split()[0], rounds))
    print("%-34s %10s %8s %8s  %s" % ("per call, 16 x float32", "ns", "ratio", "worst", "target"))
    met = True
    summary = {}
    for name, _ in cases:
        ratios = [x / b for x, b in zip(per[name], base)]
        ratio, worst = statistics.median(ratios), max(ratios)
        summary[name] = "%.2fx (worst %.2fx)" % (ratio, worst)
        target = targets.get(name)
        ok = target is None or ratio <= target
        met &= ok
        print("%-34s %10.0f %7.2fx %7.2fx  %s" % (name, statistics.median(per[name]), ratio, worst,
                                                  "" if target is None else "<= %.1fx: %s" % (target, "met" if ok else "NOT met")))
    if probe:
        for name, values in c_rows.items():
            ns = statistics.median(values)
            met &= ns <= 80
            print("%-34s %10.1f %8s %8s  <= 80 ns: %s" % (name, ns, "", "", "met" if ns <= 80 else "NOT met"))
    else:
        print("(the C rows need the tests' _exchange_probe: make -C python _exchange_probe.la)")
    print("targets: %s" % ("all met" if met else "NOT all met"))
    print("summary: %-8s %-10s %26s %30s" % (np.__version__, sys.version.split()[0], summary[cases[1][0]],
                                             summary[cases[2][0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
