#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --query=FIELD,... --format=csv[,noheader][,nounits] (hdal-ls(1)): the
# rows of a known machine byte for byte, what Python's csv module reads back
# (names with commas and quotes, hostile names), --help-query, and bad usage.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
python=/usr/bin/python3
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HWLOC_XMLFILE HWLOC_SYNTHETIC HDAL_DEVICE_SELECTOR HDAL_DEBUG
HDAL_BACKEND_PATH=$HDAL_TEST_MODULES; export HDAL_BACKEND_PATH
fields=id,process,platform,kind,local_id,uuid,pci.bus_id,memory.total,numa_node,runtime_class,addressable,dlpack

# The XML machine and the IFRT-native test module.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" "$HDAL_LS" -b cpu,ifrttest --query=$fields >"$tmp/out" 2>"$tmp/err" ||
  fail "--query: exit $? ($(cat "$tmp/err"))"
cat >"$tmp/want" <<'END'
id, process, platform, kind, local_id, uuid, pci.bus_id, memory.total [MiB], numa_node, runtime_class, addressable, dlpack
0, 0, cpu, Test CPU Model 9000, 0, [N/A], [N/A], 16384 MiB, 0, pjrt, yes, kDLCPU:0
1, 0, cpu, Test CPU Model 9000, 1, [N/A], [N/A], 32768 MiB, 1, pjrt, yes, kDLCPU:0
2, 0, ifrttest, ifrt-test-device-0, 0, [N/A], [N/A], 1024 MiB, [N/A], ifrt-native, yes, kDLExtDev:0
3, 0, ifrttest, ifrt-test-device-1, 1, [N/A], [N/A], 2048 MiB, [N/A], ifrt-native, yes, kDLExtDev:1
END
diff -u "$tmp/want" "$tmp/out" || fail "--query rows"

# noheader, nounits; --platform and --select apply.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" "$HDAL_LS" -b cpu,ifrttest -p cpu --select '!cpu:0' \
  --query=id,memory.total,name --format=csv,noheader,nounits >"$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = "0, 32768, Test CPU Model 9000" ] || fail "noheader,nounits: $(cat "$tmp/out")"
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" "$HDAL_LS" -b cpu --query=memory.total --format=csv,nounits >"$tmp/out"
[ "$(head -1 "$tmp/out")" = "memory.total" ] || fail "nounits header: $(cat "$tmp/out")"

# A name with a comma and quotes (the CPU model of an XML topology), read back by Python's csv module.
sed 's/value="Test CPU Model 9000"/value="Test, \&quot;Quoted\&quot; CPU"/' "$srcdir/topologies/two-numa.xml" >"$tmp/comma.xml"
HWLOC_XMLFILE="$tmp/comma.xml" "$HDAL_LS" -b cpu --query=id,kind,numa_node >"$tmp/out" 2>"$tmp/err" || fail "comma: $(cat "$tmp/err")"
grep -qF '0, "Test, ""Quoted"" CPU", 0' "$tmp/out" || fail "quoted value: $(cat "$tmp/out")"
"$python" - "$tmp/out" <<'END' || fail "csv module on the quoted rows: $(cat "$tmp/out")"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline=""), skipinitialspace=True))
assert rows == [["id", "kind", "numa_node"], ["0", 'Test, "Quoted" CPU', "0"], ["1", 'Test, "Quoted" CPU', "1"]], rows
END

# Hostile names (ESC, CR, LF, bad UTF-8): escaped, one row per device, as many fields as asked.
mkdir "$tmp/mods" && ln -s "$HDAL_TEST_MODULES/mod_hostilels.so" "$tmp/mods/hdal_hostilels.so" || exit 99
HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH="$tmp/mods" "$HDAL_LS" -b hostilels --query=id,kind,numa_node >"$tmp/out" ||
  fail "hostile: exit $?"
LC_ALL=C grep -q "$(printf '[\033\r]')" "$tmp/out" && fail "a control character reached the output"
"$python" - "$tmp/out" <<'END' || fail "csv module on the hostile rows: $(cat "$tmp/out")"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="", errors="strict"), skipinitialspace=True))
assert len(rows) == 4 and all(len(r) == 3 for r in rows), rows
assert [r[0] for r in rows[1:]] == ["0", "1", "2"], rows
assert rows[1][1].startswith("evil\\x1b[31mred"), rows[1]
END

# --help-query names every field; an unknown field or format is bad usage.
"$HDAL_LS" --help-query >"$tmp/out" || fail "--help-query: exit $?"
for f in $(echo "$fields,name" | tr ',' ' '); do grep -q "^  $f " "$tmp/out" || fail "--help-query lacks $f"; done
"$HDAL_LS" -b cpu --query=id,bogus >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] || fail "unknown field: exit $rc"
[ "$(head -1 "$tmp/err")" = "hdal-ls: --query: unknown field 'bogus' (known: id, process, platform, kind, name, local_id, uuid, pci.bus_id, memory.total, numa_node, runtime_class, addressable, dlpack)" ] ||
  fail "unknown field message: $(cat "$tmp/err")"
"$HDAL_LS" -b cpu --query=id --format=tsv >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^hdal-ls: --format 'tsv': expected csv" "$tmp/err" || fail "bad --format: exit $rc $(cat "$tmp/err")"
"$HDAL_LS" -b cpu --format=csv >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^hdal-ls: --format applies to --query$" "$tmp/err" || fail "--format alone: exit $rc"

[ $fails -eq 0 ] && echo "PASS: hdal-ls --query" && exit 0
exit 1
