#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls on real PoCL (through the suite's vendors directory): the OpenCL rows
# and attributes, and an empty vendors directory giving zero devices, exit 0.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_ICD:?run me from make check}"
[ -f "$OCL_ICD_VENDORS/pocl.icd" ] && [ -n "${POCL_DEVICES:-}" ] || { echo "SKIP: no PoCL ICD"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HWLOC_XMLFILE
ndev=$(echo $POCL_DEVICES | wc -w)

# The table: one opencl row per PoCL device, PjRt, DLPack kDLOpenCL:<flat index>.
HWLOC_SYNTHETIC="pack:1 numa:1 core:1 pu:1" "$HDAL_LS" -b cpu,opencl >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail "hdal-ls exit $rc: $(cat "$tmp/err")"
i=0
for drv in $POCL_DEVICES; do
  row=$(awk -v id=$((i + 1)) '$1 == id' "$tmp/out")
  echo "$row" | grep -Eq "^$((i + 1)) +0 +opencl +$drv-.* pjrt +yes .* kDLOpenCL:$i\$" || fail "row $((i + 1)): '$row'"
  i=$((i + 1))
done
grep -Eq "^  opencl +ok: $ndev devices\$" "$tmp/out" || fail "opencl status: $(cat "$tmp/out")"

# JSON: attributes a user looks for.
if [ -n "${JQ:-}" ]; then
  "$HDAL_LS" --json --platform opencl >"$tmp/json" 2>"$tmp/err" || fail "--json: $(cat "$tmp/err")"
  "$JQ" -e --argjson n "$ndev" '
    (.devices | length) == $n and
    ([.devices[].dlpack_device.device_id] == [range(0; $n)]) and
    all(.devices[]; .runtime_class == "pjrt" and .dlpack_device.device_type_name == "kDLOpenCL"
        and .attributes.opencl_platform == "Portable Computing Language"
        and .attributes.device_type == "cpu" and (.attributes.opencl_version | startswith("OpenCL "))
        and (.attributes.compute_units | tonumber) >= 1
        and (.attributes.max_alloc_bytes | tonumber) > 0
        and (.attributes.host_unified_memory | type) == "boolean" and .attributes.available == true
        and (.attributes.compute_units | type) == "number"
        and (.attributes.svm_capabilities | type) == "string"
        and .memory_bytes == (.attributes.global_memory_bytes | tonumber)) and
    (.backends[] | select(.name == "opencl") | .status) == "ok: \($n) devices" and
    (.backends[] | select(.name == "opencl") | .state == "ok" and .device_count == $n)' "$tmp/json" >/dev/null \
    || fail "--json content: $(cat "$tmp/json")"
fi

# PoCL's CPU devices are the host's CPU: the same hardware as the CPU devices
# and as each other (same_hardware_as, the table's marker), by their cpusets
# (the process's CPUs), which meet the NUMA nodes'.
if [ -n "${JQ:-}" ]; then
  "$HDAL_LS" -b cpu,opencl --json >"$tmp/json" 2>"$tmp/err" || fail "-b cpu,opencl --json: $(cat "$tmp/err")"
  "$JQ" -e '(.devices | map(select(.platform == "cpu") | .id)) as $cpus
    | (.devices | map(select(.platform == "opencl") | .id)) as $cl
    | ($cl | length) >= 1 and ($cpus | length) >= 1
    and all(.devices[] | select(.platform == "opencl"); .same_hardware_as == (($cpus + $cl) - [.id])
        and (.attributes.cpuset | type) == "string" and (.attributes | has("pci_bus_id") | not))
    and all(.devices[] | select(.platform == "cpu"); .same_hardware_as == $cl)' "$tmp/json" >/dev/null \
    || fail "PoCL same_hardware_as: $(cat "$tmp/json")"
fi
HWLOC_SYNTHETIC="pack:1 numa:1 core:1 pu:1" "$HDAL_LS" -b cpu,opencl >"$tmp/out" 2>"$tmp/err"
word=device; [ "$ndev" -gt 1 ] && word=devices
grep -A1 '^0  ' "$tmp/out" | grep -qxF "    (same hardware as $word $(seq -s ', ' 1 "$ndev"))" || fail "CPU row's marker: $(cat "$tmp/out")"

# No ICD at all: zero OpenCL devices, exit 0, nothing on stderr.
OCL_ICD_VENDORS="$HDAL_TEST_ICD/empty" "$HDAL_LS" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail "empty vendors: exit $rc"
grep -Eq '^  opencl +ok: 0 devices$' "$tmp/out" || fail "empty vendors status: $(cat "$tmp/out")"
grep -Eq '^[0-9]+ +[0-9]+ +opencl ' "$tmp/out" && fail "empty vendors lists an OpenCL device: $(cat "$tmp/out")"
[ -s "$tmp/err" ] && fail "empty vendors: stderr: $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "PASS: hdal-ls on PoCL" && exit 0
exit 1
