#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls on machines that are not this one, whose topology leaves PoCL too
# little memory: PoCL reads the same hwloc topology and would abort the process,
# so the OpenCL backend is left out with the reason, exit 0 (docs/opencl.md,
# "Runtimes that abort").  The inputs are topologies/em64t-4p2c2t-nomem.xml, an
# x86_64 machine of 4 packages x 2 cores x 2 threads in the hwloc 1.x format
# with no memory size anywhere, as 1.x exports often are, and
# em64t-4p2c2t-offline.xml, the same with PUs 13 and 15 offline (in
# complete_cpuset, without a PU object).  The limits are PoCL's: its CPU devices
# keep three quarters of the topology's memory, capped at RLIMIT_DATA, and need
# 128 MiB; each boundary is tried on both sides.
set -u
: "${HDAL_LS:?run me from make check}" "${srcdir:?run me from make check}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HDAL_DEBUG HWLOC_XMLFILE HWLOC_SYNTHETIC HWLOC_FSROOT HWLOC_COMPONENTS
pocl=no
[ -f "${OCL_ICD_VENDORS:-}/pocl.icd" ] && [ -n "${POCL_DEVICES:-}" ] && pocl=yes
ndev=$(echo ${POCL_DEVICES:-} | wc -w)
topo=$srcdir/topologies
# Only the OpenCL module on the path, so that no other module adds a status line.
dir=
for d in $(echo "${HDAL_BACKEND_PATH:-}" | tr ':' ' '); do [ -f "$d/hdal_opencl.so" ] && dir=$d && break; done
[ -n "$dir" ] || { echo "SKIP: no hdal_opencl.so in HDAL_BACKEND_PATH"; exit 77; }
HDAL_BACKEND_PATH=$dir
export HDAL_BACKEND_PATH

# run NAME ARGS...: hdal-ls with ARGS, exit 0 and nothing on stderr.
run() {
  name=$1
  shift
  "$HDAL_LS" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || fail "$name: exit $rc (134: SIGABRT), stderr: $(cat "$tmp/err")"
  [ -s "$tmp/err" ] && fail "$name: stderr: $(cat "$tmp/err")"
  return 0
}
# status NAME LINE: the opencl status line of the last run is LINE, byte for byte.
status() {
  got=$(grep '^  opencl ' "$tmp/out")
  [ "$got" = "  opencl    $2" ] || fail "$1: opencl status '$got', not '  opencl    $2'"
}

# The Backends section: each backend of backends/registry, in its order, its name padded to the longest.
backends_section() {
  names=$("$top_srcdir/build-aux/registry" names "$top_srcdir")
  width=$(for b in $names; do printf '%s\n' "$b"; done | awk '{ if (length($0) > w) w = length($0) } END { print w }')
  for b in $names; do
    case $b in
    cpu) status="ok: 1 device" ;;
    opencl) status="unavailable: the hwloc topology of HWLOC_XMLFILE has 0 bytes of memory: PoCL reads the same topology and would abort the process (it needs 178956970 bytes)" ;;
    *) status=disabled ;;
    esac
    printf '  %-*s %s\n' "$width" "$b" "$status"
  done
}

# The two machines: exit 0, the CPU device and NUMA node of the XML, the reason.
for m in nomem:0-15:16 offline:0-12,14:14; do
  name=${m%%:*} rest=${m#*:}
  cpuset=${rest%:*} pus=${rest#*:}
  cat >"$tmp/expected" <<EOF
ID  PROC  PLATFORM  KIND  CLASS  ADDR  MEMORY  NUMA  DLPACK
0   0     cpu       cpu   pjrt   yes   -       0     kDLCPU:0

Backends:
$(backends_section)

Topology:
  NUMA node 0: cpuset $cpuset, 8 cores, $pus PUs
    device 0: cpu cpu
EOF
  HWLOC_XMLFILE="$topo/em64t-4p2c2t-$name.xml" run "$name" -b cpu,opencl --topology
  cmp -s "$tmp/expected" "$tmp/out" || fail "em64t-4p2c2t-$name.xml: $(diff "$tmp/expected" "$tmp/out")"
done

# The memory boundary: PoCL keeps 178956970 - 178956970/4 = 128 MiB exactly.
for bytes in 178956969 178956970; do
  sed "s/<object type=\"NUMANode\" os_index=\"0\"/& local_memory=\"$bytes\"/" "$topo/em64t-4p2c2t-nomem.xml" >"$tmp/m.xml"
  HWLOC_XMLFILE="$tmp/m.xml" run "local_memory $bytes" -b cpu,opencl --json
  grep -q "\"memory_bytes\": *$bytes," "$tmp/out" || fail "local_memory $bytes: the CPU device's memory: $(cat "$tmp/out")"
  HWLOC_XMLFILE="$tmp/m.xml" run "local_memory $bytes" -b cpu,opencl
  if [ $bytes -eq 178956969 ]; then
    status "local_memory $bytes" "unavailable: the hwloc topology of HWLOC_XMLFILE has 178956969 bytes of memory: PoCL reads the same topology and would abort the process (it needs 178956970 bytes)"
  elif [ $pocl = yes ]; then
    # A topology with enough memory still lists PoCL's devices, sized from it.
    status "local_memory $bytes" "ok: $ndev devices"
    [ "$(grep -Ec '^[0-9]+ +0 +opencl .* 128\.0 MiB ' "$tmp/out")" -eq "$ndev" ] || fail "local_memory $bytes: PoCL's rows: $(cat "$tmp/out")"
  else
    grep -Eq '^  opencl +ok: ' "$tmp/out" || fail "local_memory $bytes: $(cat "$tmp/out")"
  fi
done

# HWLOC_SYNTHETIC reaches PoCL the same way.
HWLOC_SYNTHETIC="numa:1(memory=100MB) core:2 pu:1" run synthetic -b cpu,opencl
status synthetic "unavailable: the hwloc topology of HWLOC_SYNTHETIC has 100000000 bytes of memory: PoCL reads the same topology and would abort the process (it needs 178956970 bytes)"
grep -Eq '^  cpu +ok: 1 device$' "$tmp/out" || fail "synthetic: the CPU backend: $(cat "$tmp/out")"

# The data size limit (KiB for ulimit): 128 MiB less 1 KiB, then 128 MiB.
# Skipped where hdal-ls cannot start under it at all (a sanitizer's shadow memory).
if (ulimit -d 131071 && "$HDAL_LS" -b cpu) >/dev/null 2>&1; then
  (ulimit -d 131071 && exec "$HDAL_LS" -b cpu,opencl) >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] && [ ! -s "$tmp/err" ] || fail "ulimit -d 131071: exit $rc, stderr: $(cat "$tmp/err")"
  status "ulimit -d 131071" "unavailable: the data size limit (RLIMIT_DATA) is 134216704 bytes: PoCL would abort the process (it needs 134217728 bytes)"
  if [ $pocl = yes ]; then
    (ulimit -d 131072 && exec "$HDAL_LS" -b cpu,opencl) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] || fail "ulimit -d 131072: exit $rc, stderr: $(cat "$tmp/err")"
    status "ulimit -d 131072" "ok: $ndev devices"
  fi
else
  echo "note: hdal-ls does not run under ulimit -d 131071 here; the data size limit is not tried"
fi

[ $pocl = yes ] || echo "note: no PoCL ICD: the boundaries are checked without PoCL's devices"
[ $fails -eq 0 ] && echo "PASS: hdal-ls with topologies PoCL cannot run on" && exit 0
exit 1
