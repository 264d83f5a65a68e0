#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls with many devices that share PCI bus ids, UUIDs and cpusets
# (tests/modules/many_ls.c): the "same hardware" of every device in --json, the
# table and --of xml against a model written from the definition
# (tests/tools/same-hardware.py); a chain of identities joins one piece of
# hardware; the list is bounded and the output grows with the devices, not
# their square.  How fast: bench/hdal-ls-scale.sh, not here.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}" "${top_srcdir:=..}"
golden="$srcdir/golden"
python=/usr/bin/python3
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HWLOC_XMLFILE
mkdir "$tmp/mods" && ln -s "$HDAL_TEST_MODULES/mod_manyls.so" "$tmp/mods/hdal_manyls.so"
# Writes $tmp/$1 from hdal-ls with the rest of the arguments.
many() {
  out=$1; shift
  HWLOC_SYNTHETIC="numa:2 core:4 pu:1" HDAL_BACKEND_PATH="$tmp/mods" "$HDAL_LS" -b cpu,manyls "$@" >"$tmp/$out" \
    2>"$tmp/err" || fail "hdal-ls $*: exit $? ($(cat "$tmp/err"))"
  [ -s "$tmp/err" ] && fail "hdal-ls $*: stderr: $(cat "$tmp/err")"
}

# 16 devices, read by a person: devices 2, 3 and 4 are one piece of hardware (2 and 3 share a PCI bus
# id, 3 and 4 a UUID), 6 computes on both nodes' CPUs, 8 on none of them.
HDAL_TEST_MANY_DEVICES=16 many table
diff -u "$golden/many-16.txt" "$tmp/table" || fail "table of 16 differs from $golden/many-16.txt"

# 600 devices: 75 share one PCI bus id, more than the 32 partners a device shows.
if [ -x "$python" ]; then
  export HDAL_TEST_MANY_DEVICES=600
  many json --json; many table
  # hwloc checks the tree hdal-ls built (and aborts where it is not sound) under HWLOC_DEBUG_CHECK.
  HWLOC_DEBUG_CHECK=1 many xml --of xml
  "$python" "$srcdir/tools/same-hardware.py" 32 "$tmp/json" "$tmp/table" "$tmp/xml" || fail "same hardware of 600 devices"
  if "$python" -c 'import jsonschema' 2>/dev/null; then
    "$python" "$srcdir/tools/validate-json.py" "$top_srcdir/tools/hdal-ls.schema.json" "$tmp/json" || fail "600 devices: not valid"
  fi
else
  echo "no $python: the model's checks skipped"
fi

# The output grows with the devices: 8,000 devices write less than 2.2 times what 4,000 do, in every format.
for f in "" "--json" "--of xml"; do
  # shellcheck disable=SC2086
  HDAL_TEST_MANY_DEVICES=4000 many small $f; HDAL_TEST_MANY_DEVICES=8000 many large $f
  a=$(wc -c <"$tmp/small") b=$(wc -c <"$tmp/large")
  [ $((b * 10)) -lt $((a * 22)) ] || fail "hdal-ls ${f:-(table)}: $a bytes for 4,000 devices, $b for 8,000"
done

[ $fails -eq 0 ] && echo "PASS: same hardware of many devices in hdal-ls" && exit 0
exit 1
