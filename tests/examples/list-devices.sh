#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/list-devices.c: the version, the host device, every backend's status.
. "$srcdir/examples/common.sh"
run list-devices
[ $rc -eq 0 ] || fail "list-devices exited $rc"
has "^hdal $version: [0-9][0-9]* devices\$"
has '^  device 0: cpu '
has '^backends:$'
has '^  cpu  *ok: 1 device$'
for b in $("$top_srcdir/build-aux/registry" names "$top_srcdir"); do has "^  $b  *[a-z]"; done
if [ "${HDAL_TEST_OPENCL_BUILT:-no}" = yes ] && [ -s "$HDAL_TEST_ICD/pocl-devices" ]; then
  has '^  opencl  *ok: 2 devices$'
  has '^  device 1: opencl .*DLPack (kDLOpenCL, 0), pjrt$'
fi
echo "PASS"
