#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls shows attributes with the types and flags their backend gave them
# (tests/modules/typed_ls.c), naming no key: numbers and booleans in JSON, a
# value the core kept as a string because it does not read as its type, a
# device whose topology cpuset meets a NUMA node's paired with that node's CPU
# device (same_hardware_as), one whose cpuset meets none left alone.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
golden="$srcdir/golden"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HWLOC_XMLFILE

mkdir "$tmp/mods" && ln -s "$HDAL_TEST_MODULES/mod_typedls.so" "$tmp/mods/hdal_typedls.so"
typed() {
  HWLOC_SYNTHETIC="numa:2 core:2 pu:1" HDAL_BACKEND_PATH="$tmp/mods" "$HDAL_LS" -b cpu,typedls "$@" >"$tmp/out" \
    2>"$tmp/err" || fail "hdal-ls $*: exit $? ($(cat "$tmp/err"))"
  [ -s "$tmp/err" ] && fail "hdal-ls $*: stderr: $(cat "$tmp/err")"
}
typed --json --topology
sed -e 's/^  "hdal_version": ".*",$/  "hdal_version": "@VERSION@",/' -e 's/^      "host": ".*",$/      "host": "@HOST@",/' \
  "$tmp/out" >"$tmp/out.json"
diff -u "$golden/typed.json" "$tmp/out.json" || fail "--json --topology differs from $golden/typed.json"
typed --topology
diff -u "$golden/typed-topology.txt" "$tmp/out" || fail "--topology differs from $golden/typed-topology.txt"

[ $fails -eq 0 ] && echo "PASS: typed attributes in hdal-ls" && exit 0
exit 1
