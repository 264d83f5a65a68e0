#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ThreadSanitizer run of hdal's thread tests (issue 7): builds libhdal and the
# stress tests with -fsanitize=thread in their own build directory and runs
# them; any data race, lock-order inversion or thread leak fails the run.
#
#   tests/tsan/run.sh [BUILD_DIR]        (default: _build_tsan next to configure)
#
# Environment: CC (default clang; gcc works too), HDAL_STRESS_ROUNDS (default 100
# here: TSan runs code 5-15 times slower), MAKEFLAGS.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/_build_tsan}
tests="test_stress_threads test_dlpack_threads test_lifetime test_pool"
modules="mod_finalprobe.la" # test_lifetime's

[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
  # What the thread tests need: every backend (OpenCL on PoCL where it is
  # installed, CUDA on the suite's fake driver), no MPI.
  "$top/configure" -q CC="${CC:-clang}" CFLAGS="-g -O1 -fsanitize=thread -fno-omit-frame-pointer" \
    LDFLAGS="-fsanitize=thread" --with-mpi=no
fi
make -s -j"${JOBS:-2}" -C lib
for m in backends/opencl backends/cuda; do [ -f "$m/Makefile" ] && make -s -j"${JOBS:-2}" -C "$m"; done
# The test modules, the fake CUDA driver and PoCL's vendor directory, when configured.
libs="hdal_ifrttest.la $modules" data=
# (automake comments out the lines of a false conditional)
grep -q '^am__append_[0-9]* = fakecuda\.la' tests/Makefile && libs="$libs fakecuda.la"
grep -q '^check_DATA = icd/vendors\.stamp' tests/Makefile && libs="$libs fakecl.la" data=icd/vendors.stamp
make -s -j"${JOBS:-2}" -C tests $tests $libs $data
export HDAL_STRESS_ROUNDS=${HDAL_STRESS_ROUNDS:-100}
export TSAN_OPTIONS="halt_on_error=1 abort_on_error=0 exitcode=66 second_deadlock_stack=1 report_thread_leaks=1 ${TSAN_OPTIONS:-}"
# Only these programs: check_PROGRAMS and check_LTLIBRARIES are narrowed on the command line.
make -s -C tests check TESTS="$tests" check_PROGRAMS="$tests" check_LTLIBRARIES="$libs" check_DATA="$data" || {
  for t in $tests; do [ -f "tests/$t.log" ] && tail -80 "tests/$t.log"; done
  exit 1
}
echo "ThreadSanitizer: no report (HDAL_STRESS_ROUNDS=$HDAL_STRESS_ROUNDS)"
