#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/numpy-roundtrip.py with the build tree's Python package.
. "$srcdir/examples/common.sh"
[ "${HDAL_PYTHON_BUILT:-no}" = yes ] || { echo "SKIP: the Python package is not built (configure: no Python headers)"; exit 77; }
[ "${HDAL_SANITIZERS:-no}" = no ] || { echo "SKIP: a sanitizer build: the Python package is not loaded into an uninstrumented Python"; exit 77; }
if [ ! -f "$top_builddir/python/pkg.stamp" ]; then
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s -C "$top_builddir/python" pkg.stamp >/dev/null 2>&1 || fail "the build tree's Python package could not be made"
fi
"$PYTHON" -c 'import numpy' 2>/dev/null || { echo "SKIP: numpy not found by $PYTHON (apt-get install python3-numpy)"; exit 77; }
out=$(PYTHONPATH=$top_builddir/python/pkg PYTHONDONTWRITEBYTECODE=1 "$PYTHON" "$top_srcdir/examples/numpy-roundtrip.py" 2>&1); rc=$?
name=numpy-roundtrip.py
printf '$ %s\n%s\n(exit %d)\n' "$name" "$out" "$rc"
[ $rc -eq 0 ] || fail "numpy-roundtrip.py exited $rc"
has "^hdal $version: (1000000,) float32 on cpu device 0, view: True\$"
has '^numpy -> hdal -> numpy: same memory True, b\[0\] after a\[0\] = 42: 42.0, values equal: True$'
if [ "${HDAL_TEST_OPENCL_BUILT:-no}" = yes ] && [ -s "$HDAL_TEST_ICD/pocl-devices" ]; then
  has '^through opencl device 1 and back: values equal: True$'
fi
has '^all right$'
echo "PASS"
