#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Level Zero suites again with the loader's validation layer on: every
# call hdal and the fake make goes through its parameter checks, which report
# through return codes alone (so a call hdal makes wrongly fails the case).
# The layer is on only with the variables set to exactly 1.
: "${top_builddir:=..}"
ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1
export ZE_ENABLE_VALIDATION_LAYER ZE_ENABLE_PARAMETER_VALIDATION
status=0
for t in test_levelzero test_levelzero_buffers; do
  "$top_builddir/tests/$t"
  rc=$?
  [ $rc -eq 77 ] && exit 77
  [ $rc -eq 0 ] || status=1
done
exit $status
