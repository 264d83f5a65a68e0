#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs hdal's ROCm tests against the real HIP runtime (libamdhip64.so and its
# versioned sonames, or HDAL_ROCM_LIBRARY) instead of the fake one.  Exits 77
# (skipped) on a machine where the runtime cannot be loaded or sees no GPU.
# Meant to run unchanged on an AMD GPU machine, from the build tree:
#   make -C tests check TESTS=gpu/run-rocm-tests.sh
# or directly, with top_builddir set (defaults to the current directory's parent).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_builddir:=$here/../..}"
tests=$(cd "$top_builddir/tests" 2>/dev/null && pwd) || { echo "no build tree at $top_builddir"; exit 77; }

# The suite names the fake runtime; this script wants the machine's, unless
# the caller names one on purpose (a dry run:
# HDAL_ROCM_LIBRARY=tests/.libs/fakehip6.so FAKEHIP_DEVICES=2 HDAL_TEST_ROCM_LIBRARY=1).
[ -n "${HDAL_TEST_ROCM_LIBRARY:-}" ] || unset HDAL_ROCM_LIBRARY

# A GPU answers through the runtime; rocm-smi alone is not proof (containers).
probe=$("$tests/test_rocm_probe" 2>&1)
case $? in
  0) echo "HIP runtime: $probe" ;;
  *) echo "SKIP: no usable HIP runtime with a GPU: $probe"; exit 77 ;;
esac

# The two-GPU cases run when there are two.
HDAL_TEST_ROCM_DEVICES=$(echo "$probe" | sed -n 's/.*runtime [0-9]*, \([0-9]*\) device.*/\1/p')
HDAL_TEST_REAL_ROCM=1
export HDAL_TEST_REAL_ROCM HDAL_TEST_ROCM_DEVICES
: "${HDAL_BACKEND_PATH:=$top_builddir/backends/rocm/.libs}"
export HDAL_BACKEND_PATH top_builddir
status=0
for t in test_rocm test_rocm_buffers; do
  [ -x "$tests/$t" ] || continue
  echo "== $t (real runtime)"
  "$tests/$t" || status=1
done
if [ -x "$top_builddir/tools/hdal-ls" ]; then
  echo "== hdal-ls"
  "$top_builddir/tools/hdal-ls" || status=1
fi
exit $status
