#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/opencl-kernel.c: 1,000,000 floats host -> PoCL -> own kernel -> host.
. "$srcdir/examples/common.sh"
need_pocl
# Sanitizer builds: PoCL's and LLVM's memory for the compiled kernel is theirs.
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/opencl/lsan-pocl.supp:print_suppressions=0"
export LSAN_OPTIONS
run opencl-kernel
[ $rc -eq 0 ] || fail "opencl-kernel exited $rc"
has '^opencl-kernel: .*: 1000000 floats, y = 2 \* x + 1: y\[0\] = 1, y\[999\] = 1999, y\[999999\] = 1999: all right$'
echo "PASS"
