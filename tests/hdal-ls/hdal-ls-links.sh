#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Links between devices (hdal_device_link; docs/reference.md, "Links") on real machines' topologies:
# hwloc's own test files of an NVIDIA DGX-2 (16 V100s behind PCIe switches and 12 NVSwitches, its
# NVLinkBandwidth matrix) and of a POWER8 with NVLink between GPUs and CPUs, loaded through
# HWLOC_XMLFILE, and the fake CUDA driver given those machines' bus ids, UUIDs and peer answers.
# What every pair must be is derived here from the XML alone (tools/expected-links.py), not from hwloc.
set -u
: "${HDAL_LS:?run me from make check}" "${srcdir:=.}" "${top_builddir:?}"
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
[ -n "${JQ:-}" ] || { echo "SKIP: no jq"; exit 77; }
fake=$top_builddir/tests/.libs/fakecuda.so
[ -f "$fake" ] || { echo "SKIP: no fake CUDA driver ($fake)"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
topologies=$srcdir/topologies
derive=$srcdir/tools/expected-links.py
unset HDAL_DEVICE_SELECTOR HWLOC_SYNTHETIC FAKECUDA_PEER FAKECUDA_UUIDS
export HDAL_CUDA_LIBRARY="$fake" HDAL_BACKENDS=cpu,cuda

# The XML's GPUs (PCI class 3D), in the file's order: "busid uuid" per line.
gpus() {
  "$python" - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
for o in ET.parse(sys.argv[1]).iter("object"):
    if o.get("type") == "PCIDev" and o.get("pci_type", "").startswith("0302"):
        uuids = [i.get("value") for c in o if c.get("type") == "OSDev" for i in c.iter("info") if i.get("name") == "NVIDIAUUID"]
        print(o.get("pci_busid"), uuids[0] if uuids else "-")
EOF
}

# hdal-ls --json on XML file $1 with the fake's bus ids $2 (comma-separated); the JSON in $tmp/out.json.
list() {
  xmlfile=$1 buses=$2; shift 2
  n=$(echo "$buses" | tr ',' '\n' | wc -l)
  HWLOC_XMLFILE=$xmlfile FAKECUDA_DEVICES=$n FAKECUDA_PCI_BUS_IDS=$buses "$@" "$HDAL_LS" --json >"$tmp/out.json" 2>"$tmp/err" ||
    fail "hdal-ls --json on $xmlfile: exit $? ($(cat "$tmp/err"))"
}

# The links of the JSON, as the deriver prints them: "i j kind fabric bandwidth links", i and j the CUDA ordinals.
links_as_derived() {
  "$JQ" -r '(.devices | map(select(.platform == "cuda")) | map({key: (.id | tostring), value: .dlpack_device.device_id}) | from_entries) as $o
    | .links[] | "\($o[.a | tostring]) \($o[.b | tostring]) \(.kind) \(.fabric) \(.bandwidth_mbps) \(.fabric_links)"' "$tmp/out.json"
}

# Every pair of the JSON against the XML's derivation; $2 names the case.
expect_derived() {
  "$python" "$derive" "$1" $(echo "$buses" | tr ',' ' ') >"$tmp/want" || { fail "$2: the deriver failed"; return; }
  links_as_derived >"$tmp/got"
  n=$(wc -l <"$tmp/want")
  if [ "$n" -gt 0 ] && diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then ok; else fail "$2: links differ from the XML's ($n pairs)"; head -20 "$tmp/diff"; fi
}

# The kinds in $tmp/want, counted: "fabric=120" "node=32 pix=8 ..."
kinds() { awk '{print $3}' "$tmp/want" | sort | uniq -c | awk '{printf "%s%s=%s", sep, $2, $1; sep=" "}'; }

# ---- DGX-2: every pair joined by the NVSwitches, NV6 ----
dgx=$topologies/nvidiaDGX2.xml
gpus "$dgx" >"$tmp/dgx-gpus"
buses=$(awk '{print $1}' "$tmp/dgx-gpus" | paste -sd, -)
[ "$(wc -l <"$tmp/dgx-gpus")" -eq 16 ] && ok || fail "DGX-2: $(wc -l <"$tmp/dgx-gpus") GPUs in the XML, expected 16"
list "$dgx" "$buses"
expect_derived "$dgx" "DGX-2"
[ "$(kinds)" = "fabric=120" ] && ok || fail "DGX-2: derived kinds $(kinds), expected fabric=120"
[ "$("$JQ" -c '[.links[] | [.fabric, .bandwidth_mbps, .fabric_links]] | unique' "$tmp/out.json")" = '[["nvlink",150000,6]]' ] && ok ||
  fail "DGX-2: fabric $("$JQ" -c '[.links[] | [.fabric, .bandwidth_mbps, .fabric_links]] | unique' "$tmp/out.json")"
[ "$("$JQ" -c '.topology_source' "$tmp/out.json")" = "{\"type\":\"xml\",\"detail\":\"$dgx\"}" ] && ok ||
  fail "DGX-2: topology_source $("$JQ" -c '.topology_source' "$tmp/out.json")"
# Each GPU's locality is its package's (the PCI tree), GPUs 0-7 on NUMA node 0, 8-15 on node 1.
[ "$("$JQ" -c '[.devices[] | select(.platform == "cuda") | .locality.numa_nodes[0]]' "$tmp/out.json")" = '[0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1]' ] && ok ||
  fail "DGX-2: GPU NUMA nodes $("$JQ" -c '[.devices[] | select(.platform == "cuda") | .locality.numa_nodes]' "$tmp/out.json")"

# The matrix, as nvidia-smi topo -m: the row of the first GPU, and the legend.
HWLOC_XMLFILE=$dgx FAKECUDA_DEVICES=16 FAKECUDA_PCI_BUS_IDS=$buses "$HDAL_LS" --topology >"$tmp/topo" 2>"$tmp/err" || fail "--topology: exit $?"
first=$("$JQ" '[.devices[] | select(.platform == "cuda")][0].id' "$tmp/out.json")
row=$(grep "^  D$first " "$tmp/topo" | tr -s ' ')
want=" D$first X$(printf ' NV6%.0s' $(seq 15)) 0-1 0"
[ "$row" = "$want" ] && ok || fail "--topology: row '$row', expected '$want'"
grep -q '^  NV#  = NVLink, directly or through NVSwitches' "$tmp/topo" && grep -q '^  SAME = ' "$tmp/topo" && ok ||
  fail "--topology: no legend: $(cat "$tmp/topo")"

# Peer answers: the driver's, by machine index, two groups of eight; a failing query is no peer access.
list "$dgx" "$buses" env FAKECUDA_PEER=0-1-2-3-4-5-6-7,8-9-10-11-12-13-14-15
got=$("$JQ" -r '[.links[] | .peer_access] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$tmp/out.json")
[ "$got" = "false=64 true=56" ] && ok || fail "peer groups: $got, expected false=64 true=56"
"$JQ" -e '(.devices | map(select(.platform == "cuda")) | map({key: (.id | tostring), value: .dlpack_device.device_id}) | from_entries) as $o
  | all(.links[]; .peer_access == (($o[.a | tostring] < 8) == ($o[.b | tostring] < 8)))' "$tmp/out.json" >/dev/null && ok ||
  fail "peer groups: an answer crosses the groups"
list "$dgx" "$buses" env FAKECUDA_PEER=fail
[ "$("$JQ" -c '[.links[] | .peer_access] | unique' "$tmp/out.json")" = '[false]' ] && [ ! -s "$tmp/err" ] && ok ||
  fail "peer query failing: $("$JQ" -c '[.links[] | .peer_access] | unique' "$tmp/out.json") $(cat "$tmp/err")"

# Found by UUID where the bus ids are not the file's: the fake's own bus ids, the XML's UUIDs.
uuids=$(awk '{print $2}' "$tmp/dgx-gpus" | paste -sd, -)
HWLOC_XMLFILE=$dgx FAKECUDA_DEVICES=16 FAKECUDA_UUIDS=$uuids "$HDAL_LS" --json >"$tmp/out.json" 2>"$tmp/err" || fail "by UUID: exit $?"
[ "$("$JQ" -r '[.devices[] | select(.platform == "cuda") | .attributes.uuid] | join(",")' "$tmp/out.json")" = "$uuids" ] && ok ||
  fail "by UUID: the fake's UUIDs are not the XML's"
[ "$("$JQ" -c '[.links[] | [.kind, .fabric_links]] | unique' "$tmp/out.json")" = '[["fabric",6]]' ] && ok ||
  fail "by UUID: $("$JQ" -c '[.links[] | [.kind, .fabric_links]] | unique' "$tmp/out.json")"

# ---- DGX-2 without its NVLink matrix: the PCI tree alone ----
"$python" -c '
import re, sys
s = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r"<distances2hetero .*?</distances2hetero>\n", "", s, flags=re.S))' "$dgx" "$tmp/dgx-pci.xml"
list "$tmp/dgx-pci.xml" "$buses"
expect_derived "$tmp/dgx-pci.xml" "DGX-2's PCI tree"
[ "$(kinds)" = "node=32 pix=8 pxb=16 sys=64" ] && ok || fail "DGX-2's PCI tree: derived kinds $(kinds)"
HWLOC_XMLFILE=$tmp/dgx-pci.xml FAKECUDA_DEVICES=16 FAKECUDA_PCI_BUS_IDS=$buses "$HDAL_LS" --topology >"$tmp/topo" 2>&1
"$python" "$derive" "$tmp/dgx-pci.xml" $(echo "$buses" | tr ',' ' ') | awk -v f="$first" '$1 == 0 {printf " %s", toupper($3)}' >"$tmp/want-row"
row=$(grep "^  D$first " "$tmp/topo" | tr -s ' ' | cut -d' ' -f4-18)
[ " $row" = "$(cat "$tmp/want-row")" ] && ok || fail "--topology on the PCI tree: '$row', expected '$(cat "$tmp/want-row")'"

# ---- POWER8: NVLink between the GPUs of one socket, nothing nearer than the SMP bus across ----
p8=$topologies/power8gpudistances.xml
buses=$(gpus "$p8" | awk '{print $1}' | paste -sd, -)
list "$p8" "$buses"
expect_derived "$p8" "POWER8"
[ "$(kinds)" = "fabric=2 sys=4" ] && ok || fail "POWER8: derived kinds $(kinds)"

# ---- A PCI-rich machine: its GPUs, and its network, InfiniBand and display functions' bus ids as fake GPUs'
# (function 0 only: CUDA's bus ids are a device's first function) ----
em=$topologies/24em64t-2n6c2t-pci.xml
buses=$("$python" -c '
import sys, xml.etree.ElementTree as ET
print(",".join(o.get("pci_busid") for o in ET.parse(sys.argv[1]).iter("object")
               if o.get("type") == "PCIDev" and o.get("pci_busid").endswith(".0")))' "$em")
list "$em" "$buses"
expect_derived "$em" "24em64t"
[ "$(kinds)" = "phb=7 sys=8" ] && ok || fail "24em64t: derived kinds $(kinds)"

# ---- What is not known ----
# A bus id the topology lacks: no locality, nothing nearer than sys.
list "$dgx" "0000:34:00.0,0000:99:00.0"
[ "$("$JQ" -c '[.links[] | .kind], [.devices[] | select(.platform == "cuda") | .locality != null]' "$tmp/out.json" | paste -sd' ')" = '["sys"] [true,false]' ] && ok ||
  fail "unknown bus id: $("$JQ" -c '.links' "$tmp/out.json")"
# A synthetic topology has no PCI objects: no locality, sys, and the JSON says where it came from.
HWLOC_SYNTHETIC="pack:2 core:2 pu:1" FAKECUDA_DEVICES=2 "$HDAL_LS" --json >"$tmp/out.json" 2>"$tmp/err" || fail "synthetic: exit $?"
[ "$("$JQ" -c '[.links[] | .kind], .topology_source' "$tmp/out.json" | paste -sd' ')" = '["sys"] {"type":"synthetic","detail":"pack:2 core:2 pu:1"}' ] && ok ||
  fail "synthetic: $("$JQ" -c '.links, .topology_source' "$tmp/out.json")"
# Without a device to link, no topology is loaded for links.
HDAL_BACKENDS=cpu "$HDAL_LS" --json >"$tmp/out.json" 2>"$tmp/err"
[ "$("$JQ" -c '.links, .topology_source' "$tmp/out.json" | paste -sd' ')" = '[] null' ] && ok || fail "CPU only: $("$JQ" -c '.links, .topology_source' "$tmp/out.json")"

echo "hdal-ls-links: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
