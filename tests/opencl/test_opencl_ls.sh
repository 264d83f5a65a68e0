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

# PoCL names a CPU device "<device name of its driver>-<LLVM CPU>-<CPU model>",
# the same CPU for every device. PoCL 4 renamed the devices of its CPU drivers
# (basic: cpu-minimal, pthread: cpu; POCL_DEVICES takes either name), so the
# name follows the PoCL version the platform reports (docs/packaging.md).
"$HDAL_LS" --json -b opencl >"$tmp/json" 2>"$tmp/err" || fail "--json -b opencl: $(cat "$tmp/err")"
pocl_major=$(sed -n 's/^ *"opencl_platform_version": "OpenCL [0-9.]* PoCL \([0-9]*\)\..*/\1/p' "$tmp/json" | sort -u)
case $pocl_major in
[0-9] | [0-9][0-9]) ;;
*) fail "no single PoCL version in opencl_platform_version: $(cat "$tmp/json")"; pocl_major=0 ;;
esac
pocl_name() {
  if [ "$pocl_major" -ge 4 ]; then
    case $1 in basic) echo cpu-minimal ;; pthread) echo cpu ;; *) echo "$1" ;; esac
  else echo "$1"; fi
}

# The table: one opencl row per PoCL device, its name PoCL's, PjRt, DLPack kDLOpenCL:<flat index>.
HWLOC_SYNTHETIC="pack:1 numa:1 core:1 pu:1" "$HDAL_LS" -b cpu,opencl >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail "hdal-ls exit $rc: $(cat "$tmp/err")"
HWLOC_SYNTHETIC="pack:1 numa:1 core:1 pu:1" "$HDAL_LS" -L -b cpu,opencl >"$tmp/list" 2>"$tmp/err" || fail "-L: $(cat "$tmp/err")"
i=0 cpu=
for drv in $POCL_DEVICES; do
  name=$(pocl_name "$drv")
  kind=$(sed -n "s/^Device $((i + 1)): opencl \(.*\) (pjrt, kDLOpenCL:$i)\$/\1/p" "$tmp/list")
  case $kind in
  "$name"-?*-?*) [ $i -eq 0 ] && cpu=${kind#"$name"-}
    [ "$kind" = "$name-$cpu" ] || fail "device $((i + 1)): '$kind', expected '$name-$cpu' (the CPU of device 1)" ;;
  *) fail "device $((i + 1)) (driver $drv, PoCL $pocl_major): '$kind' is not '$name-<LLVM CPU>-<CPU model>': $(cat "$tmp/list")" ;;
  esac
  row=$(awk -v id=$((i + 1)) '$1 == id' "$tmp/out")
  echo "$row" | grep -Eq "^$((i + 1)) +0 +opencl +.* pjrt +yes .* kDLOpenCL:$i\$" && echo "$row" | grep -qF " $kind " ||
    fail "row $((i + 1)): '$row'"
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
