#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls with thousands of devices in every output format: wall time (median
# of 3 runs), bytes written and peak resident memory, next to -L in the same
# run.  The devices come from the suite's test module mod_manyls.so
# (tests/modules/many_ls.c): blocks of 8 that share PCI bus ids, UUIDs and
# topology cpusets, one PCI bus id shared by an eighth of them, on a synthetic
# 8-CPU machine of 2 NUMA nodes.  Target (docs/design.md, "hdal-ls"): every
# format under 0.5 s at 10,000 devices, the output linear in the devices.
# Run from the build tree's bench/ (make run-bench does).
# Usage: hdal-ls-scale.sh [HDAL_LS [MODULE]]
set -u
ls=${1:-./hdal-ls-bench}
module=${2:-../tests/.libs/mod_manyls.so}
[ -f "$module" ] || { echo "hdal-ls-scale.sh: no $module (make -C tests mod_manyls.la)" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/mods" && ln -s "$(cd "$(dirname "$module")" && pwd)/$(basename "$module")" "$tmp/mods/hdal_manyls.so"
HDAL_BACKEND_PATH=$tmp/mods HWLOC_SYNTHETIC="numa:2 core:4 pu:1" HDAL_BACKENDS=cpu,manyls
export HDAL_BACKEND_PATH HWLOC_SYNTHETIC HDAL_BACKENDS
timer=
[ -x /usr/bin/time ] && timer="/usr/bin/time -f %M -o $tmp/rss"

# One run: "seconds bytes rss_kib"
one() {
  s=$(date +%s%N)
  $timer "$ls" "$@" >"$tmp/out" 2>/dev/null
  e=$(date +%s%N)
  rss=-; [ -n "$timer" ] && rss=$(tail -n 1 "$tmp/rss")
  echo "$(( (e - s) / 1000 )) $(wc -c <"$tmp/out") $rss"
}
worst=0
printf '%-8s %-22s %10s %12s %10s\n' devices format "s (median)" bytes "RSS KiB"
for n in ${HDAL_LS_SCALE_COUNTS:-2500 5000 10000}; do
  export HDAL_TEST_MANY_DEVICES=$n
  for f in "-L" "" "--topology" "--json" "--json --topology" "--of xml"; do
    # shellcheck disable=SC2086
    for r in 1 2 3; do one $f; done | sort -n | sed -n 2p >"$tmp/median"
    read -r us bytes rss <"$tmp/median"
    printf '%-8s %-22s %10s %12s %10s\n' "$n" "${f:-(table)}" "$(awk -v u="$us" 'BEGIN{printf "%.3f", u / 1e6}')" "$bytes" "$rss"
    [ "$n" -eq 10000 ] && [ "$us" -gt "$worst" ] && worst=$us
  done
done
[ "$worst" -gt 0 ] && printf 'slowest format at 10000 devices: %.3f s   (target < 0.5)\n' "$(awk -v u="$worst" 'BEGIN{print u / 1e6}')"
exit 0
