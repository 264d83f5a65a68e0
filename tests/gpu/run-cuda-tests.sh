#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs hdal's CUDA tests against the real driver (libcuda.so.1, or
# HDAL_CUDA_LIBRARY) instead of the fake one.  Exits 77 (skipped) on a machine
# where the driver cannot be loaded or sees no GPU.  Meant to run unchanged on
# an NVIDIA machine, from the build tree:
#   make -C tests check TESTS=gpu/run-cuda-tests.sh
# or directly, with top_builddir set (defaults to the current directory's parent).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_builddir:=$here/../..}"
tests=$(cd "$top_builddir/tests" 2>/dev/null && pwd) || { echo "no build tree at $top_builddir"; exit 77; }

# The real driver, unless the caller names another library on purpose (a dry
# run: HDAL_CUDA_LIBRARY=tests/.libs/fakecuda.so FAKECUDA_DEVICES=2).
lib=${HDAL_CUDA_LIBRARY:-libcuda.so.1}

# A GPU answers through the driver; nvidia-smi alone is not proof (containers).
probe=$("$tests/test_cuda_probe" "$lib" 2>&1)
case $? in
  0) echo "CUDA driver: $probe" ;;
  *) echo "SKIP: no usable CUDA driver: $probe"; exit 77 ;;
esac

# The two-GPU cases run when there are two.
HDAL_TEST_CUDA_DEVICES=$(echo "$probe" | sed -n 's/.*driver [0-9]*, \([0-9]*\) device.*/\1/p')
HDAL_TEST_REAL_CUDA=1
export HDAL_TEST_REAL_CUDA HDAL_TEST_CUDA_DEVICES
: "${HDAL_BACKEND_PATH:=$top_builddir/backends/cuda/.libs}"
export HDAL_BACKEND_PATH top_builddir
status=0
for t in test_cuda test_cuda_buffers; do
  [ -x "$tests/$t" ] || continue
  echo "== $t (real driver)"
  "$tests/$t" || status=1
done
if [ -x "$top_builddir/tools/hdal-ls" ]; then
  echo "== hdal-ls"
  "$top_builddir/tools/hdal-ls" || status=1
fi
exit $status
