#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The interop lab (docs/interop.md): hdal against the real peers of PyPI.
#  - a venv made here, fresh each run, under the build tree
#    (tests/interop/venv), from Debian's /usr/bin/python3 (HDAL_INTEROP_PYTHON
#    names another), with the peers pinned for that Python's version X.Y in
#    tests/interop/constraints-X.Y.txt (3.11: Debian 12's; 3.13: Debian 13's);
#  - hdal installed into it with its own PEP 517 build (`pip install` of a copy
#    of python/), against this build tree's libhdal staged by `make install
#    DESTDIR=` (tests/python/hdal-stage.sh, as tests/python/python-venv.sh does);
#  - the suite of tests/interop (the matrix, jaxlib as the oracle, the C
#    exchange API with torch and tvm-ffi; mypy's stubtest and mypy --strict on
#    the package's stubs, test_typing.py) run in it with this build tree's
#    backend modules and, where tests/icd made it, PoCL; pytest is given the
#    suite's own files, never a directory: in an in-tree build this work
#    directory is the source's tests/interop, and its copy of python/ (with
#    python/tests' conftest.py) must not be collected;
#  - a second venv with the oldest numpy 2 that has wheels for this Python
#    (the constraints' "#oldest" line: numpy 2.0 on 3.11, the legacy-capsule
#    path; numpy 2.1 on 3.13, where 2.0 has no wheels) and hdal
#    (test_numpy_oldest.py);
#  - the matrix printed, and written to tests/interop/interop.md (with
#    HDAL_INTEROP_UPDATE_DOCS=1 into docs/interop.md of the source tree too).
# The wheels are downloaded (`pip download`) into HDAL_INTEROP_WHEELS (default
# tests/interop/wheels of the build tree), which keeps them for the next run in
# that tree: the venvs are made anew each run, installed from there with
# --no-index, and a wheel is fetched once per build tree (pip's own HTTP cache
# does not help where the index says not to store).  Nothing outside the build
# tree is reused unless HDAL_INTEROP_WHEELS names it; one directory serves
# every Python (a py3 wheel both pin at one version is fetched once).
# Skips (77), saying why, where the package index cannot be reached, where
# configure did not build the Python package, in a sanitizer build, where the
# interpreter is a Python the lab has no pins for (no constraints-X.Y.txt), or
# with HDAL_INTEROP=0 (a package build, which must not reach the network);
# with HDAL_INTEROP_REQUIRED=1 (.ci/run, .ci/debian13) each of these is a
# failure.
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?run me from make check}"
required=${HDAL_INTEROP_REQUIRED:-0}
skip() {
  if [ "$required" = 1 ]; then echo "FAIL: the lab cannot run, and HDAL_INTEROP_REQUIRED=1: $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s) status=0
elapsed() { echo $(($(date +%s) - start)); }

src=$(cd "$top_srcdir" && pwd) && build=$(cd "$top_builddir" && pwd) || exit 1
[ "${HDAL_PYTHON_BUILT:-no}" = yes ] || skip "the Python package was not built (configure --enable-python)"
[ "${HDAL_SANITIZERS:-no}" = no ] || skip "a sanitizer build: its libhdal does not load into an interpreter started without ASan"
[ "${HDAL_INTEROP:-1}" != 0 ] || skip "HDAL_INTEROP=0: the lab is turned off (it downloads its peers from the package index)"
py=${HDAL_INTEROP_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || skip "no $py"
have=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || skip "$py does not run"
constraints=$src/tests/interop/constraints-$have.txt
if [ ! -f "$constraints" ]; then
  pinned=
  for c in "$src"/tests/interop/constraints-[0-9]*.txt; do c=${c##*/constraints-} && pinned="$pinned ${c%.txt}"; done
  skip "$py is Python $have; tests/interop has pins (constraints-X.Y.txt) for Python$pinned only"
fi
oldest=$(sed -n 's/^#oldest numpy==//p' "$constraints")
[ -n "$oldest" ] || fail "${constraints##*/} has no line \"#oldest numpy==...\""

# Nothing of the caller's PYTHONPATH (the build tree's package) or user site.
unset PYTHONPATH PYTHONHOME PKG_CONFIG_SYSROOT_DIR PIP_REQUIRE_VIRTUALENV PIP_CONSTRAINT PIP_NO_INDEX
PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export PYTHONNOUSERSITE PYTHONDONTWRITEBYTECODE PIP_DISABLE_PIP_VERSION_CHECK
wheels=${HDAL_INTEROP_WHEELS:-$build/tests/interop/wheels}
mkdir -p "$wheels" || skip "cannot make $wheels (HDAL_INTEROP_WHEELS)"

# The index: the one pip is configured with, else PyPI.
index=$("$py" -m pip config get global.index-url 2>/dev/null) || index=
index=${PIP_INDEX_URL:-${index:-https://pypi.org/simple}}
"$py" - "$index" <<'EOF' || skip "the package index $index cannot be reached"
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/pip/", timeout=20).read(1)
except Exception as e:
    print("index %s: %s" % (sys.argv[1], e))
    sys.exit(1)
EOF

lab=$build/tests/interop
mkdir -p "$lab" || exit 1
rm -rf "$lab/venv" "$lab/venv-oldest" "$lab/stage" "$lab/src" "$lab"/results*.json || exit 1
mkdir -p "$lab/stage" || exit 1
. "$src/tests/python/hdal-stage.sh"

# $1: venv directory; $2: constraints; the rest: what to install besides pip, setuptools and wheel.
make_venv() {
  v=$1 c=$2
  shift 2
  "$py" -m venv "$v" >"$v.log" 2>&1 || { cat "$v.log"; skip "$py -m venv failed (Debian: python3-venv)"; }
  "$v/bin/python" -m pip install -q -c "$c" pip setuptools wheel >>"$v.log" 2>&1 ||
    { tail -n 40 "$v.log"; fail "pip install of pip, setuptools and wheel into $v failed"; }
  _t=$(date +%s) _k=$(du -skD "$wheels" | cut -f1)
  "$v/bin/python" -m pip download -d "$wheels" -c "$c" "$@" >>"$v.log" 2>&1 ||
    { tail -n 40 "$v.log"; fail "pip download into $wheels failed"; }
  echo "ok: $(grep -c '^Saved ' "$v.log") wheels downloaded, $((($(du -skD "$wheels" | cut -f1) - _k) / 1024)) MiB in $(($(date +%s) - _t)) s; $(grep -c 'already downloaded' "$v.log") already in $wheels"
  _t=$(date +%s)
  "$v/bin/python" -m pip install --no-index --find-links "$wheels" -c "$c" "$@" >>"$v.log" 2>&1 ||
    { tail -n 40 "$v.log"; fail "pip install into $v failed"; }
  echo "ok: installed into ${v##*/} in $(($(date +%s) - _t)) s"
}

# 1. The peers.
t0=$(date +%s)
make_venv "$lab/venv" "$constraints" numpy jax jaxlib torch tensorflow-cpu apache-tvm-ffi array-api-strict ml_dtypes pytest \
  mypy
echo "ok: the peers in $(($(date +%s) - t0)) s; $wheels holds $(du -smD "$wheels" | cut -f1) MiB; the venv $(du -sm "$lab/venv" | cut -f1) MiB"
vpy=$lab/venv/bin/python
"$vpy" -m pip freeze --exclude-editable | sed 's/^/  /'

# 2. hdal, with its own PEP 517 build, against the staged libhdal.
t0=$(date +%s)
stage_libhdal "$lab/stage/root" "$lab/stage/install.log"
stage_python_sources "$lab/src"
"$vpy" -m pip install -v --no-build-isolation --no-deps "$lab/src/python" >"$lab/stage/pip.log" 2>&1 ||
  { tail -n 40 "$lab/stage/pip.log"; fail "pip install python/ into the lab's venv failed"; }
grep ': warning:' "$lab/stage/pip.log"
echo "ok: hdal built and installed by pip in $(($(date +%s) - t0)) s"

# 3. The suite, with this build tree's modules and, where tests/icd made it, PoCL.
if grep -q '^icd/vendors.stamp:' "$build/tests/Makefile" 2>/dev/null; then
  MAKEFLAGS='' MFLAGS='' MAKELEVEL='' make -C "$build/tests" icd/vendors.stamp hdal_ifrttest.la >"$lab/stage/deps.log" 2>&1 ||
    echo "note: tests/icd could not be made: OpenCL rows are reported as not run"
fi
POCL_DEVICES=$(cat "$build/tests/icd/pocl-devices" 2>/dev/null)
if [ -n "$POCL_DEVICES" ]; then export POCL_DEVICES; else unset POCL_DEVICES; fi
OCL_ICD_VENDORS=$build/tests/icd/pocl POCL_CACHE_DIR=$build/tests/icd/pocl-cache
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HDAL_INTEROP_RESULTS=$lab/results.json HDAL_INTEROP_PYTHON_TESTS=$src/python/tests
export OCL_ICD_VENDORS POCL_CACHE_DIR LD_LIBRARY_PATH HDAL_INTEROP_RESULTS HDAL_INTEROP_PYTHON_TESTS
t0=$(date +%s)
# hdal's default context in the suite's own process is the CPU's: PoCL, which
# carries LLVM, is loaded only in test_opencl_pairs.py's children, before any
# peer (torch's triton, jaxlib and tensorflow carry LLVM too, and a second one
# in a process aborts in LLVM's option registry).
# The suite's files by name (in an in-tree build this directory holds the
# lab's work files too: src/python/tests is not the lab's).
set --
for f in "$src"/tests/interop/test_*.py; do
  case ${f##*/} in test_numpy_oldest.py) ;; *) set -- "$@" "${f##*/}" ;; esac
done
(cd "$src/tests/interop" && HDAL_BACKENDS=cpu "$vpy" -m pytest -p no:cacheprovider -q -rsx "$@") ||
  { echo "FAIL: the lab's suite failed"; status=1; }
echo "ok: the suite ran in $(($(date +%s) - t0)) s"

# 4. The oldest numpy 2 with wheels for this Python: 2.0 on 3.11, legacy
# capsules only; 2.1 on 3.13 (2.0 has none for it), DLPack 1.0's first.
t0=$(date +%s)
sed -e '/^numpy==/d' -e 's/^#oldest //' "$constraints" >"$lab/stage/constraints-oldest.txt"
make_venv "$lab/venv-oldest" "$lab/stage/constraints-oldest.txt" numpy pytest
"$lab/venv-oldest/bin/python" -m pip install --no-build-isolation --no-deps "$lab/src/python" >"$lab/stage/pip-oldest.log" 2>&1 ||
  { tail -n 40 "$lab/stage/pip-oldest.log"; fail "pip install python/ into the oldest numpy's venv failed"; }
(cd "$src/tests/interop" && HDAL_BACKENDS=cpu HDAL_INTEROP_RESULTS=$lab/results-oldest.json \
  HDAL_INTEROP_OLDEST_NUMPY=$oldest "$lab/venv-oldest/bin/python" -m pytest -p no:cacheprovider -q -rsx test_numpy_oldest.py) ||
  { echo "FAIL: the oldest numpy's suite (numpy $oldest) failed"; status=1; }
echo "ok: numpy $oldest's venv and suite in $(($(date +%s) - t0)) s"

# 5. The matrix.
"$vpy" "$src/tests/interop/report.py" "$lab/results.json" "$lab/results-oldest.json" "$lab/interop.md" ||
  { echo "FAIL: no matrix"; status=1; }
if [ "${HDAL_INTEROP_UPDATE_DOCS:-0}" = 1 ]; then
  "$vpy" "$src/tests/interop/report.py" --update "$src/docs/interop.md" "$lab/interop.md" || status=1
elif ! "$vpy" "$src/tests/interop/report.py" --check "$src/docs/interop.md" "$lab/interop.md"; then
  echo "note: docs/interop.md's generated part differs from this run's (HDAL_INTEROP_UPDATE_DOCS=1 writes it)"
fi
echo "done in $(elapsed) s"
exit $status
