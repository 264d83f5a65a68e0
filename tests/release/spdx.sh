#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every tracked source file carries the license line (build-aux/spdx-check).
# The files are those `git ls-files` lists, so the scan runs in a git checkout
# only: in a release tarball (make distcheck, a distribution's build) it is
# skipped, exit 77 -- the tarball is made from a checkout where it ran.  The
# checker itself is tested everywhere first: it flags a file without the line,
# --fix adds it after a #! line, and a second --fix changes nothing.
set -u
: "${top_srcdir:?run me from make check}"
checker=$top_srcdir/build-aux/spdx-check
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spdx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf '#!/bin/sh\necho hello\n' >"$tmp/a.sh"
printf 'int x;\n' >"$tmp/b.c"
sh "$checker" "$tmp/a.sh" "$tmp/b.c" >"$tmp/out" && fail "the checker passes files without the line"
[ "$(grep -c 'no .SPDX-License-Identifier' "$tmp/out")" -eq 2 ] || { cat "$tmp/out"; fail "the checker does not name both files"; }
sh "$checker" --fix "$tmp/a.sh" "$tmp/b.c" >/dev/null || fail "--fix failed"
[ "$(sed -n 1p "$tmp/a.sh")" = '#!/bin/sh' ] || fail "--fix moved the #! line"
[ "$(sed -n 2p "$tmp/a.sh")" = '# SPDX-License-Identifier: BSD-3-Clause' ] || fail "--fix: $(sed -n 2p "$tmp/a.sh")"
[ "$(sed -n 1p "$tmp/b.c")" = '/* SPDX-License-Identifier: BSD-3-Clause */' ] || fail "--fix: $(sed -n 1p "$tmp/b.c")"
cp "$tmp/a.sh" "$tmp/a.before"
[ -z "$(sh "$checker" --fix "$tmp/a.sh" "$tmp/b.c")" ] && cmp -s "$tmp/a.sh" "$tmp/a.before" || fail "--fix is not idempotent"
sh "$checker" "$tmp/a.sh" "$tmp/b.c" || fail "the checker refuses fixed files"
# The line folded into a longer comment further down is not the license line at the top.
printf '/* A file whose comment\n * goes on.\n * SPDX-License-Identifier: BSD-3-Clause */\nint y;\n' >"$tmp/c.c"
sh "$checker" "$tmp/c.c" >/dev/null && fail "the checker takes a tag folded into a comment on line 3"
echo "ok: the checker flags, fixes and then passes"

command -v git >/dev/null 2>&1 || { echo "SKIP: git not installed"; exit 77; }
top=$(cd "$top_srcdir" && pwd -P)
gittop=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null) || gittop=
[ -n "$gittop" ] && [ "$(cd "$gittop" && pwd -P)" = "$top" ] ||
  { echo "SKIP: $top_srcdir is not a git checkout (a release tarball): no git ls-files to scan"; exit 77; }
(cd "$top" && sh build-aux/spdx-check) || fail "tracked source files without the license line (above)"
echo "ok: $(cd "$top" && sh build-aux/spdx-check --list | wc -l) tracked source files carry the license line"
