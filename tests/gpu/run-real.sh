#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one GPU backend's suites against the machine's own runtime instead of
# the fake one (run-cuda-tests.sh and run-rocm-tests.sh call it):
#   run-real.sh cuda|rocm|levelzero
# Exits 77 (skipped) where the runtime cannot be loaded or sees no GPU.  Meant
# to run unchanged on an NVIDIA or AMD GPU machine, from the build tree, with
# top_builddir set (default: this directory's grandparent).
set -u
backend=$1
here=$(cd "$(dirname "$0")" && pwd)
: "${top_builddir:=$here/../..}"
tests=$(cd "$top_builddir/tests" 2>/dev/null && pwd) || { echo "no build tree at $top_builddir"; exit 77; }

case $backend in
  cuda)
    # The real driver, unless the caller names another library on purpose (a
    # dry run: HDAL_CUDA_LIBRARY=tests/.libs/fakecuda.so FAKECUDA_DEVICES=2).
    runtime="CUDA driver" upper=CUDA
    set -- "${HDAL_CUDA_LIBRARY:-libcuda.so.1}"
    ;;
  rocm)
    # The suite names the fake runtime; this script wants the machine's, unless
    # the caller names one on purpose (a dry run: HDAL_ROCM_LIBRARY=
    # tests/.libs/fakehip6.so FAKEHIP_DEVICES=2 HDAL_TEST_ROCM_LIBRARY=1).
    runtime="HIP runtime" upper=ROCM
    [ -n "${HDAL_TEST_ROCM_LIBRARY:-}" ] || unset HDAL_ROCM_LIBRARY
    set --
    ;;
  levelzero)
    # The system's loader and drivers; a dry run names the suite's fake driver
    # for the loader (ZE_ENABLE_ALT_DRIVERS=$PWD/tests/.libs/fakeze.so
    # FAKEZE_DEVICES=2), which this script then leaves alone.
    runtime="Level Zero driver" upper=LEVELZERO
    unset HDAL_LEVELZERO_LIBRARY
    set --
    ;;
  *) echo "usage: run-real.sh cuda|rocm|levelzero" >&2; exit 2 ;;
esac

# A GPU answers through the runtime; nvidia-smi or rocm-smi alone is not proof (containers).
probe=$("$tests/test_${backend}_probe" "$@" 2>&1)
case $? in
  0) echo "$runtime: $probe" ;;
  *) echo "SKIP: no usable $runtime with a GPU: $probe"; exit 77 ;;
esac

# The two-GPU cases run when there are two (the probe says "... N device(s)").
devices=$(echo "$probe" | sed -n 's/.*\(driver\|runtime\) [0-9]*, \([0-9]*\) device.*/\2/p')
eval "HDAL_TEST_REAL_$upper=1 HDAL_TEST_${upper}_DEVICES=\$devices"
export "HDAL_TEST_REAL_$upper" "HDAL_TEST_${upper}_DEVICES"
: "${HDAL_BACKEND_PATH:=$top_builddir/backends/$backend/.libs}"
export HDAL_BACKEND_PATH top_builddir
status=0
for t in "test_$backend" "test_${backend}_buffers"; do
  [ -x "$tests/$t" ] || continue
  echo "== $t (real $runtime)"
  "$tests/$t" || status=1
done
# PyTorch's CUDA tensors through the Python package, where the interpreter has
# both (HDAL_TEST_PYTHONPATH: a package built elsewhere, for another Python).
py=${PYTHON:-python3}
pypath=${HDAL_TEST_PYTHONPATH:-$top_builddir/python/pkg}
if [ "$backend" = cuda ] &&
   PYTHONPATH=$pypath "$py" -c 'import hdal, torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== torch-cuda.py (real $runtime)"
  PYTHONPATH=$pypath "$py" "$here/torch-cuda.py" || status=1
fi
if [ -x "$top_builddir/tools/hdal-ls" ]; then
  echo "== hdal-ls"
  "$top_builddir/tools/hdal-ls" || status=1
fi
# Copies within one GPU and between two, through hdal and the driver's own
# (bench/bench_gpu_copy.c), last so that its ratios end the log; a bench, built
# by `make -C bench bench_gpu_copy` (not by `make`): said and passed over where absent.
if [ "$backend" = cuda ]; then
  if [ -x "$top_builddir/bench/bench_gpu_copy" ]; then
    echo "== bench_gpu_copy (real $runtime)"
    "$top_builddir/bench/bench_gpu_copy"
    rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || status=1
  else
    echo "== bench_gpu_copy: not built (make -C bench bench_gpu_copy)"
  fi
fi
exit $status
