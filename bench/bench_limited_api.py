# SPDX-License-Identifier: BSD-3-Clause
"""ns per call of the Python package built on the full C API against its
build on the limited API (Py_LIMITED_API=0x030B0000, the abi3 wheel's), in
one run, beside numpy's own np.from_dlpack(ndarray).

Run, naming each build by the directory that holds its package hdal/:
  python3 bench/bench_limited_api.py full=<build>/python/pkg limited=<build-lim>/python/pkg
(any number of label=directory pairs).  Each build is measured in a process
of its own (one hdal._hdal per process), the builds taking turns round after
round so that each sees the same load; each row of a round is the best of a
few timeit runs, and the figure printed is the median over the rounds; then
each row's ratio to numpy's own in the same process and round (median over
the rounds), which a machine's changing load moves less.
Rows, on a 16-element float32 array or tensor (HDAL_BACKENDS=cpu):
  np.from_dlpack(ndarray)          numpy importing numpy: measured in each process
  hdal.from_dlpack(ndarray)
  np.from_dlpack(hdal.Buffer)
  hdal.from_dlpack(torch tensor)   when torch imports
  buf.__dlpack__()                 the capsule dropped at once (its tensor goes back)
  buf.__dlpack__(max_version=(1, 0))
"""
import json
import os
import statistics
import subprocess
import sys
import timeit

ROWS = ["np.from_dlpack(ndarray)", "hdal.from_dlpack(ndarray)", "np.from_dlpack(hdal.Buffer)",
        "hdal.from_dlpack(torch tensor)", "buf.__dlpack__()", "buf.__dlpack__(max_version=(1, 0))"]


def child(number, repeat):
    import numpy as np

    import hdal
    a = np.arange(16, dtype=np.float32)
    buf = hdal.from_dlpack(a)
    cases = {
        ROWS[0]: lambda: np.from_dlpack(a),
        ROWS[1]: lambda: hdal.from_dlpack(a),
        ROWS[2]: lambda: np.from_dlpack(buf),
        ROWS[4]: lambda: buf.__dlpack__(),
        ROWS[5]: lambda: buf.__dlpack__(max_version=(1, 0)),
    }
    try:
        import torch
        t = torch.arange(16, dtype=torch.float32)
        cases[ROWS[3]] = lambda: hdal.from_dlpack(t)
    except ImportError:
        pass
    for f in cases.values():  # the default context made, each producer type learnt
        f()
    out = {name: min(timeit.repeat(f, number=number, repeat=repeat)) / number * 1e9 for name, f in cases.items()}
    out["_hdal"] = hdal._hdal.__file__
    json.dump(out, sys.stdout)


def main(argv, rounds=9, number=20000, repeat=3):
    builds = [arg.split("=", 1) for arg in argv]
    if not builds or any(len(b) != 2 for b in builds):
        print(__doc__)
        return 2
    per = {label: {} for label, _ in builds}
    where = {}
    for _ in range(rounds):
        for label, pkg in builds:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(pkg), HDAL_BACKENDS="cpu", PYTHONDONTWRITEBYTECODE="1")
            p = subprocess.run([sys.executable, __file__, "--child", str(number), str(repeat)], env=env,
                               stdout=subprocess.PIPE, check=True, universal_newlines=True)
            got = json.loads(p.stdout)
            where[label] = got.pop("_hdal")
            for name, ns in got.items():
                per[label].setdefault(name, []).append(ns)
    import numpy as np
    print("Python %s, numpy %s; %d rounds, each the best of %d x %d calls; ns per call, median over rounds"
          % (sys.version.split()[0], np.__version__, rounds, repeat, number))
    for label, _ in builds:
        print("  %s: %s" % (label, where[label]))
    labels = [label for label, _ in builds]
    print("%-36s" % "per call, 16 x float32" + "".join("%12s" % label for label in labels))
    shown = [name for name in ROWS if all(name in per[label] for label in labels)]
    for name in shown:
        print("%-36s" % name + "".join("%12.0f" % statistics.median(per[label][name]) for label in labels))
    # Each row against numpy's own in the same process and round: what the load of the moment does not move.
    print("%-36s" % "against np.from_dlpack(ndarray)" + "".join("%12s" % label for label in labels))
    for name in shown[1:]:
        print("%-36s" % name + "".join("%11.2fx" % statistics.median(x / b for x, b in zip(per[label][name], per[label][ROWS[0]]))
                                       for label in labels))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(main(sys.argv[1:]))
