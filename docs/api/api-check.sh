#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every public name of hdal's installed headers has a manual page in the
# doxygen output: functions, macros, types, enumerators.  Doxygen itself warns
# about (and, with WARN_AS_ERROR, fails on) an undocumented member of a group;
# this catches a name outside any group, which doxygen leaves out silently.
#   docs/api/api-check.sh MAN3DIR HEADER...
set -u
man3=$1; shift
names=$(sed -n \
  -e 's/^HDAL_API[^(]*[^a-z0-9_]\(hdal_[a-z0-9_]*\)(.*/\1/p' \
  -e 's/^#define \(HDAL_[A-Z0-9_]*\).*/\1/p' \
  -e 's/^} \([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' \
  -e 's/^typedef struct [A-Za-z_0-9]* \([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' \
  -e 's/^  \(HDAL_[A-Z0-9_]*\) = .*/\1/p' "$@" |
  grep -v -E '^(HDAL_API|HDAL_([A-Z_]*_)?H)$' | sort -u)
missing=0
for n in $names; do
  [ -f "$man3/$n.3" ] && continue
  echo "api-check: $n is public but undocumented (no $n.3): document it in a doxygen group" >&2
  missing=$((missing + 1))
done
[ "$missing" -eq 0 ] || exit 1
# Each page as man(1) renders it, with every groff warning: a comment line
# that starts with a quote or a dot becomes a request (lintian's groff-message).
if command -v groff >/dev/null 2>&1; then
  for p in "$man3"/*.3; do
    [ -f "$p" ] && ! grep -q '^\.so ' "$p" || continue
    w=$(LC_ALL=C groff -man -ww -z "$p" 2>&1)
    [ -z "$w" ] || { echo "api-check: $(basename "$p"): $w" >&2; missing=$((missing + 1)); }
  done
  [ "$missing" -eq 0 ] || exit 1
fi
echo "api-check: $(echo "$names" | wc -l) public names, each with its manual page that groff reads without a warning"
