#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench_python.py once per numpy a user of this Python meets, in one run:
# the interpreter's own (Debian 12: python3-numpy 1.24), then the oldest
# numpy 2 and the newest that the interop lab pins for this Python
# (tests/interop/constraints-X.Y.txt: its "#oldest numpy==" line and its
# numpy== line), each in a venv of its own under the build tree
# (bench/venv-numpy-V, made once from the package index, then reused), with
# the same build of the package (PYTHONPATH); then the ratios side by side.
# Run: make -C bench run-bench-python (docs/python.md, "Speed"); with
# INSTRUCTIONS=1, instructions per call (valgrind) instead of times.
# Environment: PYTHON (the interpreter), top_srcdir, top_builddir, INSTRUCTIONS.
set -eu
: "${PYTHON:?}" "${top_srcdir:?}" "${top_builddir:?}"
src=$(cd "$top_srcdir" && pwd) build=$(cd "$top_builddir" && pwd)
ver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pins=$src/tests/interop/constraints-$ver.txt
# numpy's own thread pool spins beside the timed thread on a small machine:
# one thread, for both sides of every ratio.
OPENBLAS_NUM_THREADS=1 HDAL_BACKENDS=cpu PYTHONPATH=$build/python/pkg:$build/python/.libs
export OPENBLAS_NUM_THREADS HDAL_BACKENDS PYTHONPATH
out=$build/bench/python-numpys.txt
mode=
if [ "${INSTRUCTIONS:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "INSTRUCTIONS=1 needs valgrind" >&2; exit 1; }
  mode=--instructions out=$build/bench/python-numpys-instructions.txt
fi
: >"$out"
run() { # $1: interpreter (its report shown whole, its summary line kept)
  report=$("$1" "$src/bench/bench_python.py" $mode) || { printf '%s\n' "$report"; return 1; }
  printf '%s\n\n' "$report"
  printf '%s\n' "$report" | sed -n 's/^summary: //p' >>"$out"
}
run "$PYTHON"
if [ -f "$pins" ]; then
  for v in $(sed -n 's/^#oldest numpy==//p' "$pins") $(sed -n 's/^numpy==//p' "$pins"); do
    venv=$build/bench/venv-numpy-$v
    if [ ! -x "$venv/bin/python" ]; then
      "$PYTHON" -m venv "$venv" && "$venv/bin/python" -m pip install -q "numpy==$v" ||
        { echo "numpy $v: no venv (the package index cannot be reached?): left out" >&2; rm -rf "$venv"; continue; }
    fi
    run "$venv/bin/python"
  done
else
  echo "no $pins: only the interpreter's own numpy" >&2
fi
echo
printf '%-8s %-10s %26s %30s\n' numpy Python "hdal.from_dlpack(ndarray)" "np.from_dlpack(hdal.Buffer)"
cat "$out"
