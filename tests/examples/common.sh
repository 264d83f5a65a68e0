# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the examples' tests (tests/examples/examples.am): each runs one program of
# examples/ on the build tree, with the suite's module path and PoCL setup.
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?}"
version=$(sed -n 's/^version=//p' "$top_srcdir/VERSION")
bin=$top_builddir/tests/examples
fail() { echo "FAIL: $*"; exit 1; }
# run NAME ARGS...: the example's output in $out, its exit status in $rc.
run() {
  name=$1; shift
  out=$("$bin/$name" "$@" 2>&1); rc=$?
  printf '$ %s %s\n%s\n(exit %d)\n' "$name" "$*" "$out" "$rc"
}
has() { printf '%s\n' "$out" | grep -q -- "$1" || fail "$name: no line matching '$1'"; }
# Skips (77) unless the OpenCL module is built and PoCL gives its devices.
need_pocl() {
  [ "${HDAL_TEST_OPENCL_BUILT:-no}" = yes ] || { echo "SKIP: the OpenCL backend is not built (configure: no OpenCL headers or ICD loader)"; exit 77; }
  [ -s "${HDAL_TEST_ICD:?}/pocl-devices" ] || { echo "SKIP: no PoCL ICD on this machine (apt-get install pocl-opencl-icd)"; exit 77; }
}
