#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls as a user meets it: golden tables, JSON checked with jq, help, version,
# exit codes and messages for bad usage.
set -u
: "${HDAL_LS:?run me from make check}" "${srcdir:=.}"
golden="$srcdir/golden"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Runs hdal-ls; stdout, stderr and status land in $tmp/out, $tmp/err, $rc.
run() { "$HDAL_LS" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
expect_rc() { [ "$rc" -eq "$1" ] && ok || fail "$2: exit $rc, expected $1 (stderr: $(cat "$tmp/err"))"; }
expect_golden() { diff -u "$1" "$tmp/out" >"$tmp/diff" && ok || { fail "$2 differs from $1"; cat "$tmp/diff"; }; }
# JSON goldens say "@VERSION@" for hdal_version and "@HOST@" for this machine's name.
expect_golden_json() {
  sed -e 's/^  "hdal_version": ".*",$/  "hdal_version": "@VERSION@",/' -e 's/^      "host": ".*",$/      "host": "@HOST@",/' \
    "$tmp/out" >"$tmp/out.json"
  diff -u "$1" "$tmp/out.json" >"$tmp/diff" && ok || { fail "$2 differs from $1"; cat "$tmp/diff"; }
}
expect_err() { [ "$(cat "$tmp/err")" = "$1" ] && ok || fail "$2: stderr was '$(cat "$tmp/err")', expected '$1'"; }
expect_empty() { [ ! -s "$tmp/$1" ] && ok || fail "$2: $1 not empty: $(cat "$tmp/$1")"; }

# The first-party backends, in order: backends/registry's.
. "$srcdir/tools/fake-fsroot.sh" # xml_pcie_root
known=$("$top_srcdir/build-aux/registry" names "$top_srcdir") || exit 99
known_list=$(echo "$known" | sed 's/ /, /g')
SUITE_BACKEND_PATH=${HDAL_BACKEND_PATH:-}
unset HDAL_BACKENDS HWLOC_XMLFILE
# No modules of this build: the golden outputs must not depend on them.
HDAL_BACKEND_PATH=/nonexistent/hdal-modules; export HDAL_BACKEND_PATH
synth="pack:2 numa:2 core:4 pu:2"

# Golden table and topology on a synthetic machine.
HWLOC_SYNTHETIC="$synth" HDAL_BACKENDS=cpu run
expect_rc 0 "table"; expect_golden "$golden/synthetic-4nodes.txt" "table"; expect_empty err "table"
HWLOC_SYNTHETIC="$synth" run --backends cpu --topology
expect_rc 0 "topology"; expect_golden "$golden/synthetic-4nodes-topology.txt" "--topology"

# An XML machine next to the test-only IFRT-native module.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run
expect_rc 0 "xml"; expect_golden "$golden/xml-ifrt.txt" "xml + ifrttest"

# HDAL_DEBUG: discovery diagnostics on stderr, and only then.
HWLOC_SYNTHETIC="$synth" HDAL_BACKENDS=cpu HDAL_DEBUG=1 run
expect_rc 0 "HDAL_DEBUG"; expect_golden "$golden/synthetic-4nodes.txt" "table under HDAL_DEBUG"
grep -qx 'hdal: cpu: ok: 4 devices' "$tmp/err" && grep -qx 'hdal: cpu: hwloc topology: 4 NUMA node(s)' "$tmp/err" \
  && ok || fail "HDAL_DEBUG stderr: $(cat "$tmp/err")"
HWLOC_SYNTHETIC="$synth" HDAL_BACKENDS=cpu HDAL_DEBUG=0 run
expect_empty err "HDAL_DEBUG=0"

# --platform filters rows, not backends.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run --platform ifrttest
expect_rc 0 "--platform"
[ "$(grep -c '^[0-9].* cpu ' "$tmp/out")" -eq 0 ] && [ "$(grep -c '^[0-9]' "$tmp/out")" -eq 2 ] && ok || fail "--platform ifrttest rows: $(cat "$tmp/out")"

# JSON format 1, checked with jq (the schema and the goldens: hdal-ls-format.sh).
if [ -n "${JQ:-}" ]; then
  HWLOC_SYNTHETIC="$synth" HDAL_BACKENDS=cpu run --json
  expect_rc 0 "--json"
  "$JQ" -e --arg known "$known" '
    .format_version == 1 and
    (.devices | length) == 4 and
    ([.devices[].id] == [0,1,2,3]) and
    all(.devices[]; .platform == "cpu" and .runtime_class == "pjrt" and .runtime_class_reason == null
        and .is_addressable == true and .process_index == 0
        and .attributes.cores == 4 and .attributes.pus == 8 and .memory_bytes == 1073741824
        and .attributes.memory_bytes == 1073741824 and .same_hardware_as == []
        and .dlpack_device == {"device_type": 1, "device_type_name": "kDLCPU", "device_id": 0}) and
    ([.devices[].attributes.cpuset] == ["0-7","8-15","16-23","24-31"]) and
    ([.devices[].numa_node] == [0,1,2,3]) and
    ([.devices[].identity] == [range(0;4) | {"type": "numa_node", "value": tostring}]) and
    ($known | split(" ") | .[0] == "cpu") and
    (.backends == [{"name":"cpu","state":"ok","device_count":4,"reason":null,"status":"ok: 4 devices"}] +
                  [$known | split(" ") | .[1:][] |
                   {"name":.,"state":"disabled","device_count":0,"reason":null,"status":"disabled"}]) and
    .process_count == 1 and (has("topology") | not)' "$tmp/out" >/dev/null && ok || fail "--json content: $(cat "$tmp/out")"
  # Locality (hdal_device_locality): a CPU device's is its NUMA node, its cpuset attribute's CPUs (0-7, ...)
  # as hwloc_bitmap_snprintf writes them, and no PCIe root.
  "$JQ" -e '[.devices[].locality] == [{"cpuset": "0x000000ff", "numa_nodes": [0], "pcie_root": null},
      {"cpuset": "0x0000ff00", "numa_nodes": [1], "pcie_root": null},
      {"cpuset": "0x00ff0000", "numa_nodes": [2], "pcie_root": null},
      {"cpuset": "0xff000000", "numa_nodes": [3], "pcie_root": null}] and
    ([.devices[].attributes.cpuset] == ["0-7", "8-15", "16-23", "24-31"])' "$tmp/out" >/dev/null \
    && ok || fail "--json locality of CPU devices: $(cat "$tmp/out")"
  # A real machine with PCI GPUs (hwloc's 24em64t-2n6c2t-pci.xml; core/test_locality.c says more), the fake
  # CUDA driver given two of its GPUs' bus ids and one it lacks: each GPU has the CPUs and NUMA node of its
  # PCI object's package and the PCIe root of the host bridge above it (Kubernetes' pcieRoot, "pci<domain>:<bus>",
  # as hwloc-info finds that bridge's secondary bus in the XML), the unknown one null; on a synthetic machine
  # (no PCI objects) every GPU is null.
  fakecuda="$HDAL_TEST_MODULES/fakecuda.so"
  if [ -f "$fakecuda" ]; then
    HWLOC_XMLFILE="$srcdir/topologies/24em64t-2n6c2t-pci.xml" HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH \
      HDAL_CUDA_LIBRARY=$fakecuda FAKECUDA_DEVICES=3 FAKECUDA_PCI_BUS_IDS=0000:06:00.0,0000:14:00.0,0000:5e:00.0 \
      run -b cpu,cuda --json
    expect_rc 0 "--json locality of GPUs"
    xml="$srcdir/topologies/24em64t-2n6c2t-pci.xml"
    if command -v hwloc-info >/dev/null; then r06=$(xml_pcie_root "$xml" 0000:06:00.0) r14=$(xml_pcie_root "$xml" 0000:14:00.0)
    else r06=pci0000:00 r14=pci0000:10; echo "hwloc-info not found (Debian: hwloc-nox): the PCIe roots not derived"; fi
    [ "$r06 $r14" = "pci0000:00 pci0000:10" ] && ok || fail "the XML's PCIe roots: $r06 $r14"
    "$JQ" -e --arg r06 "$r06" --arg r14 "$r14" '[.devices[] | [.platform, .attributes.pci_bus_id, .locality]] == [
        ["cpu", null, {"cpuset": "0x00555555", "numa_nodes": [0], "pcie_root": null}],
        ["cpu", null, {"cpuset": "0x00aaaaaa", "numa_nodes": [1], "pcie_root": null}],
        ["cuda", "0000:06:00.0", {"cpuset": "0x00555555", "numa_nodes": [0], "pcie_root": $r06}],
        ["cuda", "0000:14:00.0", {"cpuset": "0x00aaaaaa", "numa_nodes": [1], "pcie_root": $r14}],
        ["cuda", "0000:5e:00.0", null]]' "$tmp/out" >/dev/null && ok || fail "--json locality of GPUs: $(cat "$tmp/out")"
    HWLOC_SYNTHETIC="$synth" HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH HDAL_CUDA_LIBRARY=$fakecuda FAKECUDA_DEVICES=2 \
      run -b cpu,cuda --json
    "$JQ" -e '[.devices[] | select(.platform == "cuda") | .locality] == [null, null] and
      [.devices[] | select(.platform == "cpu") | .locality.numa_nodes[0]] == [0,1,2,3]' "$tmp/out" >/dev/null \
      && ok || fail "--json locality on a synthetic machine: $(cat "$tmp/out")"
  else
    echo "$fakecuda not built: the GPUs' locality is not checked"
  fi
  HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run --json --topology
  "$JQ" -e '
    ([.devices[] | select(.runtime_class == "ifrt-native") | .runtime_class_reason] ==
       ["test module: devices listed for IFRT only, no buffer runtime",
        "test module: devices listed for IFRT only, no buffer runtime"]) and
    (.devices[0].memory_bytes == 17179869184) and (.devices[0].kind == "Test CPU Model 9000") and
    ([.devices[2,3] | .numa_node, .identity] == [null, null, null, null]) and
    (.devices[3].attributes == {"test_attribute": "one"}) and
    (.topology == [{"numa_node":0,"devices":[0],"cpuset":"0-3","cores":2,"pus":4},
                   {"numa_node":1,"devices":[1],"cpuset":"4-7","cores":2,"pus":4},
                   {"numa_node":null,"devices":[2,3]}])' "$tmp/out" >/dev/null \
    && ok || fail "--json --topology content: $(cat "$tmp/out")"
  # An unavailable backend: its reason, no devices.
  HWLOC_SYNTHETIC="numa:1 pu:1" run -b cpu,vulkan --json
  "$JQ" -e '.backends[5] | .name == "vulkan" and .state == "unavailable" and .device_count == 0
      and .reason == "module hdal_vulkan.so not found (searched /nonexistent/hdal-modules)"
      and .status == "unavailable: " + .reason' "$tmp/out" >/dev/null \
    && ok || fail "unavailable backend in JSON: $(cat "$tmp/out")"
  # This machine, every backend of the build: a valid document, exit 0 without GPUs.
  HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH run --json
  expect_rc 0 "--json on this machine"
  "$JQ" -e '(.devices | map(select(.platform == "cpu")) | length) >= 1' "$tmp/out" >/dev/null && ok || fail "this machine's JSON"
else
  echo "jq not found: JSON checks skipped"
fi

# --list: one line per device, nothing else.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run -L
expect_rc 0 "-L"; expect_golden "$golden/xml-ifrt.list" "-L"; expect_empty err "-L"
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run --of list --topology
expect_golden "$golden/xml-ifrt.list" "--of list --topology"
HWLOC_SYNTHETIC="$synth" run -b cpu --json --list -p cpu
expect_rc 0 "--json --list"
[ "$(wc -l <"$tmp/out")" -eq 4 ] && grep -q '^Device 3: cpu cpu (pjrt, kDLCPU:0, NUMA node 3)$' "$tmp/out" \
  && ok || fail "--json --list: the last format wins: $(cat "$tmp/out")"

# --platform: unknown names are bad usage, matching ignores case when only one matches.
HWLOC_SYNTHETIC="$synth" run -b cpu -p gpu
expect_rc 2 "-p gpu"; expect_empty out "-p gpu"
expect_err "hdal-ls: unknown platform 'gpu' in --platform; known platforms: $known_list
Try 'hdal-ls --help' for more information." "-p gpu"
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKENDS=cpu,ifrttest HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run --platform=CPU,IfrtTest -L
expect_rc 0 "--platform=CPU,IfrtTest"; expect_golden "$golden/xml-ifrt.list" "--platform=CPU,IfrtTest"
HWLOC_SYNTHETIC="$synth" run -b cpu -p OpenCL --json
expect_rc 0 "-p OpenCL (no device, a known platform)"
[ -z "${JQ:-}" ] || "$JQ" -e '.devices == []' "$tmp/out" >/dev/null && ok || fail "-p OpenCL: $(cat "$tmp/out")"
HWLOC_SYNTHETIC="$synth" run -b cpu -p ,
expect_rc 2 "-p ,"
expect_err "hdal-ls: --platform ',' names no platform
Try 'hdal-ls --help' for more information." "-p ,"
run --of svg
expect_rc 2 "--of svg"
expect_err "hdal-ls: --of 'svg': expected table, list, json, xml, gres, cdi or nfd
Try 'hdal-ls --help' for more information." "--of svg"

# A hostile module (tests/modules/hostile_ls.c): devices that say platform
# "cpu" without cores/pus, NUMA nodes 1,000,000 and INT_MAX, 2^64-1 bytes,
# names with ESC, CR and LF, strings that are not UTF-8.  The table escapes
# them (no forged row), the JSON stays strict UTF-8, nothing is allocated by
# node number.
mkdir "$tmp/mods" && ln -s "$HDAL_TEST_MODULES/mod_hostilels.so" "$tmp/mods/hdal_hostilels.so"
hostile() { HWLOC_SYNTHETIC="numa:2 core:2 pu:1" HDAL_BACKEND_PATH="$tmp/mods" run -b cpu,hostilels "$@"; }
hostile --topology
expect_rc 0 "hostile table"; expect_golden "$golden/hostile-topology.txt" "hostile table"; expect_empty err "hostile table"
[ "$(grep -c '^[0-9]' "$tmp/out")" -eq 5 ] && ! grep -q "$(printf '\033')" "$tmp/out" && ! grep -q "$(printf '\r')" "$tmp/out" \
  && ok || fail "hostile table: a control character or a forged row got through"
hostile --json --topology
expect_rc 0 "hostile JSON"; expect_golden_json "$golden/hostile.json" "hostile JSON"; expect_empty err "hostile JSON"
# Strict UTF-8 (Python's decoder refuses overlongs, surrogates, > U+10FFFF) and valid JSON.
/usr/bin/python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <"$tmp/out" \
  && ok || fail "hostile JSON is not strict UTF-8 JSON"
# The output is small, whatever the node numbers.
[ "$(wc -c <"$tmp/out")" -lt 20000 ] && ok || fail "hostile JSON: $(wc -c <"$tmp/out") bytes"
# Statuses that echo HDAL_BACKEND_PATH (issue 13's forged row), and the JSON of a
# surrogate in it.
HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH="$(printf '/x)\n  opencl   ok: 9 devices (')" run -b cpu,vulkan
expect_rc 0 "forged status"
grep -q '^  opencl   ok: 9' "$tmp/out" && fail "forged status row: $(cat "$tmp/out")" || ok
# (" 9 devices (", after the colon, is a relative directory: ignored, docs/reference.md)
grep -q '^  vulkan    unavailable: .*(searched /x)\\n  opencl   ok)$' "$tmp/out" && ok || fail "escaped status: $(cat "$tmp/out")"
HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH="$(printf '/x\355\240\200')" run -b cpu,vulkan --json
expect_rc 0 "surrogate in a status"
/usr/bin/python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <"$tmp/out" \
  && grep -q '/x\\ufffd\\ufffd\\ufffd' "$tmp/out" && ok || fail "surrogate in a status: $(cat "$tmp/out")"

# This machine, every backend of the build: exit 0 with no GPU, its NUMA node(s) listed.
HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH run
expect_rc 0 "this machine"
grep -q '^0 .* cpu ' "$tmp/out" && ok || fail "this machine lists no CPU device: $(cat "$tmp/out")"

# The backends' statuses stand in one column, however long a name is.
long=backend_with_a_name_of_more_than_sixty_four_characters_for_the_column_test
# (a name must be a backend's: a module of that name on the path, which need not load)
mkdir -p "$tmp/longmod" && : >"$tmp/longmod/hdal_$long.so"
HWLOC_SYNTHETIC="$synth" HDAL_BACKEND_PATH="$tmp/longmod" HDAL_BACKENDS=cpu,$long run
expect_rc 0 "a long backend name"
cols=$(sed -n '/^Backends:$/,$p' "$tmp/out" | awk 'NR > 1 && NF >= 2 {print index($0, $2)}' | sort -u)
[ "$(printf '%s\n' "$cols" | wc -l)" -eq 1 ] && [ "$cols" -eq $((2 + ${#long} + 1 + 1)) ] && ok ||
  fail "statuses not in one column after a long name: $(cat "$tmp/out")"

# Help and version go to stdout with exit 0.
run --help
expect_rc 0 "--help"; head -1 "$tmp/out" | grep -q '^Usage: hdal-ls \[OPTION\]\.\.\.$' && ok || fail "--help text"
expect_empty err "--help"
run -h; expect_rc 0 "-h"
run --version
expect_rc 0 "--version"; grep -Eq '^hdal-ls \(hdal\) [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" && ok || fail "--version: $(cat "$tmp/out")"

# Bad usage: exit 2, a message on stderr, nothing on stdout.
run --bogus
expect_rc 2 "--bogus"; expect_empty out "--bogus"
expect_err "hdal-ls: unknown option '--bogus'
Try 'hdal-ls --help' for more information." "--bogus"
run --platform
expect_rc 2 "--platform without LIST"
expect_err "hdal-ls: option '--platform' needs an argument
Try 'hdal-ls --help' for more information." "--platform without LIST"
run extra
expect_rc 2 "an argument"
expect_err "hdal-ls: unexpected argument 'extra'
Try 'hdal-ls --help' for more information." "an argument"

run -xj
expect_rc 2 "-xj"; expect_empty out "-xj"
expect_err "hdal-ls: unknown option '-x'
Try 'hdal-ls --help' for more information." "-xj"
run -jp
expect_rc 2 "-jp"
expect_err "hdal-ls: option '-p' needs an argument
Try 'hdal-ls --help' for more information." "-jp"
run --json=1
expect_rc 2 "--json=1"; expect_empty out "--json=1"
expect_err "hdal-ls: option '--json' takes no argument
Try 'hdal-ls --help' for more information." "--json=1"
run --bogus=1
expect_rc 2 "--bogus=1"
expect_err "hdal-ls: unknown option '--bogus'
Try 'hdal-ls --help' for more information." "--bogus=1"
run -b 'cpu;cuda'
expect_rc 2 "-b 'cpu;cuda'"; expect_empty out "-b 'cpu;cuda'"
expect_err "hdal-ls: invalid backend list \"cpu;cuda\": expected names separated by commas, each optionally preceded by '-' (e.g. \"cpu,opencl\" or \"-cuda\")
Try 'hdal-ls --help' for more information." "-b 'cpu;cuda'"

# The bash completion (tools/completion/hdal-ls, made from the registry), outside bash-completion too.
if command -v bash >/dev/null 2>&1; then
  got=$(bash -c '. "$1/tools/completion/hdal-ls"
    c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hdal_ls; printf "%s|" "${COMPREPLY[@]}"; echo; }
    c hdal-ls --of ""; c hdal-ls -p cpu,op; c hdal-ls --li; c hdal-ls-mpi --ra; c hdal-ls -p ""; c hdal-ls -b cpu,-' \
    sh "$top_builddir")
  [ "$got" = "table|list|json|xml|gres|cdi|nfd|
cpu,opencl|
--list|
--rank|
$(echo "$known" | sed 's/ /|/g')|
$(echo " $known" | sed 's/ /|cpu,-/g; s/^|//')|" ] && ok || fail "bash completion: $got"
fi

# hdal itself refusing: exit 1 and hdal's message.
HDAL_BACKENDS='cpu;opencl' run
expect_rc 1 "bad HDAL_BACKENDS"; expect_empty out "bad HDAL_BACKENDS"
expect_err "hdal-ls: invalid backend list \"cpu;opencl\": expected names separated by commas, each optionally preceded by '-' (e.g. \"cpu,opencl\" or \"-cuda\") (INVALID_ARGUMENT)" "bad HDAL_BACKENDS"

# --select and HDAL_DEVICE_SELECTOR (docs/reference.md, "Choosing devices"): kept devices renumbered densely.
HWLOC_SYNTHETIC="$synth" run -b cpu --select 'cpu:1,3' -L
expect_rc 0 "--select"
[ "$(cut -d' ' -f1-3 "$tmp/out")" = "$(printf 'Device 0: cpu\nDevice 1: cpu')" ] && ok || fail "--select list: $(cat "$tmp/out")"
HWLOC_SYNTHETIC="$synth" HDAL_DEVICE_SELECTOR='!cpu:0' run -b cpu
grep -q '^  cpu       ok: 3 of 4 devices selected by HDAL_DEVICE_SELECTOR$' "$tmp/out" && ok || fail "selector status: $(cat "$tmp/out")"
HWLOC_SYNTHETIC="$synth" run -b cpu --select 'cpu:'
expect_rc 2 "bad --select"; expect_empty out "bad --select"
expect_err "hdal-ls: hdal_context_options: device_selector: term 1 (\"cpu:\", at character 1): an empty device (between ',' or after ':')
Try 'hdal-ls --help' for more information." "bad --select"
HWLOC_SYNTHETIC="$synth" HDAL_BACKENDS=cpu HDAL_DEVICE_SELECTOR='cpu:0;;' run
expect_rc 1 "bad HDAL_DEVICE_SELECTOR"
expect_err "hdal-ls: HDAL_DEVICE_SELECTOR: term 2 (\"\", at character 7): an empty term (between ';') (INVALID_ARGUMENT)" "bad HDAL_DEVICE_SELECTOR"

# A malformed topology is a status line, not a crash.
printf 'garbage' >"$tmp/bad.xml"
HWLOC_XMLFILE="$tmp/bad.xml" HDAL_BACKENDS=cpu run
expect_rc 0 "malformed XML"
grep -q "^  cpu       unavailable: hwloc could not use HWLOC_XMLFILE=$tmp/bad.xml (unreadable or malformed)\$" "$tmp/out" && ok || fail "malformed XML status: $(cat "$tmp/out")"

echo "hdal-ls: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
