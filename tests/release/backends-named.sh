#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every first-party backend (backends/registry) is named where a user
# or a newcomer looks for the list: hdal-ls --help, hdal-ls(1), the README's
# overview and docs/design.md's layout; and each has docs/<name>.md (the CPU
# backend is described in docs/design.md).  A backend added without its docs
# fails here.
set -u
: "${top_srcdir:?run me from make check}" "${HDAL_LS:?}"
fail=0
help=$("$HDAL_LS" --help) || { echo "FAIL: hdal-ls --help"; exit 1; }
# Each backend of backends/registry, with its name as prose writes it; and every folder of
# backends/ is one of them.
registry=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top_srcdir/backends/registry")
for dir in "$top_srcdir"/backends/*/; do
  printf '%s\n' "$registry" | grep -q "^$(basename "$dir")[[:space:]]" ||
    { echo "FAIL: backends/$(basename "$dir")/ is not in backends/registry"; fail=1; }
done
while read -r name label; do
  [ -n "$label" ] || label=$name
  printf '%s\n' "$help" | grep -q -w -e "$label" -e "$name" ||
    { echo "FAIL: hdal-ls --help does not name $label"; fail=1; }
  for doc in README.md docs/design.md tools/hdal-ls.1; do
    grep -q -w -e "$label" "$top_srcdir/$doc" ||
      { echo "FAIL: $doc does not name $label"; fail=1; }
  done
  [ "$name" = cpu ] || [ -f "$top_srcdir/docs/$name.md" ] ||
    { echo "FAIL: no docs/$name.md"; fail=1; }
done <<EOF
$registry
EOF
[ $fail -eq 0 ] && echo "ok: every backend of backends/registry is named in --help, hdal-ls(1), README.md and docs/design.md"
exit $fail
