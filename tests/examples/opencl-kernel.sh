#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/opencl-kernel.c: 1,000,000 floats host -> PoCL -> own kernel -> host.
. "$srcdir/examples/common.sh"
need_pocl
run opencl-kernel
[ $rc -eq 0 ] || fail "opencl-kernel exited $rc"
has '^opencl-kernel: .*: 1000000 floats, y = 2 \* x + 1: y\[0\] = 1, y\[999\] = 1999, y\[999999\] = 1999: all right$'
echo "PASS"
