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

--instructions: the same rows counted in instructions instead of timed
(valgrind's callgrind; make -C bench run-bench-python INSTRUCTIONS=1): each
case run 0 and 20,000 times in a process of its own under valgrind, the
difference over 20,000 per call, with PYTHONHASHSEED=0 so that the
interpreter's own work repeats.  A count is the same on a loaded machine, which
a time is not; it says nothing of atomic operations or cache misses.
"""
import os
import re
import statistics
import subprocess
import sys
import timeit

import numpy as np

import hdal

try:
    import _exchange_probe as probe
except ImportError:
    probe = None


TARGETS = {"hdal.from_dlpack(ndarray)": 0.9, "np.from_dlpack(hdal.Buffer)": 0.9}


def make_cases():
    """The rows, and the hdal.Buffer they export (the C rows read it too)."""
    a = np.arange(16, dtype=np.float32)
    buf = hdal.from_dlpack(a)
    hdal.from_dlpack(a)  # default context made, producer type learnt
    return buf, [
        ("np.from_dlpack(ndarray)", lambda: np.from_dlpack(a)),
        ("hdal.from_dlpack(ndarray)", lambda: hdal.from_dlpack(a)),
        ("np.from_dlpack(hdal.Buffer)", lambda: np.from_dlpack(buf)),
        ("hdal.from_dlpack(hdal.Buffer)", lambda: hdal.from_dlpack(buf)),
    ]


def loop(name, n):
    """--loop NAME N: the case called 200 times, then N times (what --instructions counts)."""
    f = dict(make_cases()[1])[name]
    for _ in range(200 + n):
        f()
    return 0


def instructions(number=20000):
    cases = [name for name, _ in make_cases()[1]]
    env = dict(os.environ, PYTHONHASHSEED="0")
    per = {}
    for name in cases:
        counts = []
        for n in (0, number):
            r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                                os.path.abspath(__file__), "--loop", name, str(n)],
                               env=env, capture_output=True, text=True)
            m = re.search(r"refs:\s+([\d,]+)", r.stderr)
            if r.returncode or not m:
                print("valgrind failed on %s:\n%s" % (name, r.stderr[-2000:]), file=sys.stderr)
                return 1
            counts.append(int(m.group(1).replace(",", "")))
        per[name] = (counts[1] - counts[0]) / number
    base = per[cases[0]]
    print("hdal %s, numpy %s, Python %s: instructions per call (valgrind)" %
          (hdal.__version__, np.__version__, sys.version.split()[0]))
    print("%-34s %12s %8s  %s" % ("per call, 16 x float32", "instructions", "ratio", "target"))
    summary = {}
    for name in cases:
        ratio = per[name] / base
        summary[name] = "%.3fx (%d)" % (ratio, round(per[name]))
        target = TARGETS.get(name)
        print("%-34s %12.0f %7.3fx  %s" % (name, per[name], ratio,
                                           "" if target is None else "<= %.1fx: %s" % (target, "met" if ratio <= target else "NOT met")))
    print("summary: %-8s %-10s %26s %30s" % (np.__version__, sys.version.split()[0], summary[cases[1]], summary[cases[2]]))
    return 0


def main(rounds=15, number=20000):
    buf, cases = make_cases()
    targets = TARGETS
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
    if sys.argv[1:2] == ["--loop"]:
        sys.exit(loop(sys.argv[2], int(sys.argv[3])))
    sys.exit(instructions() if sys.argv[1:] == ["--instructions"] else main())
