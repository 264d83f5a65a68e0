#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ABI surface: libhdal exports hdal_* and nothing else (no hdal__ internals);
# each backend module exports its descriptor hdal_<name>_backend only.
set -u
: "${top_builddir:?run me from make check}"
fails=0; passes=0
check() { # check LIBRARY REGEX: every defined dynamic symbol matches REGEX
  [ -f "$1" ] || return 0
  bad=$(nm -D --defined-only "$1" | awk '{print $3}' | grep -Ev "$2")
  if [ -z "$bad" ]; then passes=$((passes + 1)); else echo "FAIL: $1 exports: $bad"; fails=$((fails + 1)); fi
}
command -v nm >/dev/null || { echo "nm not found"; exit 77; }
lib="$top_builddir/lib/.libs/libhdal.so"
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
check "$lib" '^hdal_[a-z]'
nm -D --defined-only "$lib" | awk '{print $3}' | grep -q '^hdal_context_create$' && passes=$((passes + 1)) ||
  { echo "FAIL: hdal_context_create not exported"; fails=$((fails + 1)); }
check "$top_builddir/mpi/.libs/libhdal-mpi.so" '^hdal_mpi_[a-z]'
for m in "$top_builddir"/backends/*/.libs/hdal_*.so; do
  [ -f "$m" ] || continue
  name=$(basename "$m" .so); name=${name#hdal_}
  check "$m" "^hdal_${name}_backend\$"
done
echo "symbols: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
