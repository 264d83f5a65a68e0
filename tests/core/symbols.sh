#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ABI surface: libhdal exports hdal_* and nothing else (no hdal__ internals)
# but its private API, hdal-ls's way into the hwloc policy (lib/libhdal.map,
# docs/design.md): the names below, at the version node HDAL_PRIVATE, and only
# those; each backend module exports its descriptor hdal_<name>_backend only.
# hdal-ls takes the policy from libhdal: it defines none of those names itself.
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
private='hdal__hwloc_hold hdal__hwloc_settled hdal__topology_apply'
private_re="^($(echo $private | tr ' ' '|'))@@?HDAL_PRIVATE\$"
# The public API unversioned, the private API at HDAL_PRIVATE, and the node's own symbol.
check "$lib" "^hdal_[a-z][^@]*\$|$private_re|^HDAL_PRIVATE\$"
for p in $private; do
  nm -D --defined-only "$lib" | awk '{print $3}' | grep -Eq "^$p@@?HDAL_PRIVATE\$" && passes=$((passes + 1)) ||
    { echo "FAIL: $p not exported at HDAL_PRIVATE"; fails=$((fails + 1)); }
done
# hdal-ls (libtool's .libs/hdal-ls, or the program itself where libtool made no wrapper).
ls_bin="$top_builddir/tools/.libs/hdal-ls"
[ -f "$ls_bin" ] || ls_bin="$top_builddir/tools/hdal-ls"
if [ -f "$ls_bin" ] && ! head -c 2 "$ls_bin" | grep -q '#!'; then
  own=$(nm --defined-only "$ls_bin" 2>/dev/null | awk '{print $3}' | grep -E "^($(echo $private | tr ' ' '|'))\$")
  [ -z "$own" ] && passes=$((passes + 1)) ||
    { echo "FAIL: hdal-ls defines libhdal's hwloc policy itself: $own"; fails=$((fails + 1)); }
fi
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
