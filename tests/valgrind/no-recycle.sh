#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# HDAL_NO_RECYCLE=1 makes a use after release visible to valgrind
# (docs/hardening.md): test_no_recycle reads a CPU buffer's object and memory
# after releasing it.  Under valgrind with the switch, memcheck must report
# both invalid reads, in hdal_buffer_ndim and in the program; without the
# switch hdal recycles both and memcheck reports nothing, which is why the
# switch exists.  The installed suppressions (tools/valgrind/hdal.supp) are
# the only ones used, as an application would.  No valgrind, or a sanitizer
# build (valgrind cannot run ASan's shadow memory): exit 77.
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?}"
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not found (apt-get install valgrind)"; exit 77; }
[ "${HDAL_TEST_SANITIZERS:-no}" = yes ] && { echo "SKIP: a sanitizer build (valgrind cannot run it)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/no-recycle.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
vg() { "$top_builddir/libtool" --mode=execute valgrind --error-exitcode=99 --num-callers=30 \
  --suppressions="$top_srcdir/tools/valgrind/hdal.supp" ./test_no_recycle; }

HDAL_NO_RECYCLE=1 vg >"$tmp/on.out" 2>&1
rc=$?
[ $rc -eq 99 ] || { cat "$tmp/on.out"; fail "with HDAL_NO_RECYCLE=1, valgrind exited $rc, not with its error status 99"; }
grep -q 'Invalid read' "$tmp/on.out" || { cat "$tmp/on.out"; fail "with HDAL_NO_RECYCLE=1, valgrind reports no invalid read"; }
grep -A3 'Invalid read' "$tmp/on.out" | grep -q 'hdal_buffer_ndim' \
  || { cat "$tmp/on.out"; fail "valgrind does not report the released object read in hdal_buffer_ndim"; }
grep -A6 'Invalid read' "$tmp/on.out" | grep -q 'free\|released\|Address .* is .* inside a block of size .* free' \
  || { cat "$tmp/on.out"; fail "valgrind does not say the memory read was freed"; }
[ "$(grep -c 'Invalid read' "$tmp/on.out")" -ge 2 ] || { cat "$tmp/on.out"; fail "valgrind does not report the released memory read too"; }

vg >"$tmp/off.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/off.out"; fail "without HDAL_NO_RECYCLE, valgrind exited $rc: the recycled object is no longer kept (update docs/hardening.md and this test)"; }
echo "PASS: HDAL_NO_RECYCLE=1 makes valgrind report the use after release:"
grep -A2 'Invalid read' "$tmp/on.out" | head -6
