#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/select-device.c: "cpu:*;opencl:0" keeps the host and OpenCL's
# device 0; another selector picks device 1; a malformed one is refused.
. "$srcdir/examples/common.sh"
need_pocl
run select-device
[ $rc -eq 0 ] || fail "select-device exited $rc"
has '^selector "cpu:\*;opencl:0": 2 devices$'
has '^  host:   device 0, '
has '^  OpenCL: device 1, .* (DLPack kDLOpenCL, 0), platform "Portable Computing Language"$'
run select-device 'cpu:*;opencl:1'
[ $rc -eq 0 ] || fail "select-device 'cpu:*;opencl:1' exited $rc"
has '^  OpenCL: device 1, .* (DLPack kDLOpenCL, 1), '
run select-device 'opencl'
[ $rc -eq 1 ] || fail "select-device 'opencl' exited $rc, not 1"
has "^select-device: .*opencl"
echo "PASS"
