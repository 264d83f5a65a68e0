#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Times hdal-ls as a user runs it (whole process, median of N runs) next to
# lstopo-no-graphics --no-io (the equivalent hwloc tool) and clinfo -l, in the
# same run, and every backend against all but ROCm (what starting the ROCm
# backend costs: nothing on a machine without an AMD GPU driver, docs/rocm.md).
# Run from the build tree's bench/ (make run-bench does).
# Usage: hdal-ls-time.sh [HDAL_LS]
set -u
# Default: hdal-ls-bench of this build (the tool linked with -no-install: no
# LD_LIBRARY_PATH, which would also send every library PoCL loads through the
# build tree), with the build tree's modules, which run-bench names.
if [ -n "${1:-}" ]; then ls=$1
else
  ls=./hdal-ls-bench
  : "${HDAL_BACKEND_PATH:?run me through make -C bench run-bench, which names the modules of this build}"
fi
runs=41
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# One sample of each command per round, round after round, so that a drift of
# the machine (this one's wanders by 10%) weighs on every command alike.
us() { s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
have_clinfo=false
command -v clinfo >/dev/null && have_clinfo=true
# The hwloc library hdal-ls links: clinfo with it loaded first pays what any
# program that links hwloc pays when PoCL starts (docs/design.md, "hdal-ls").
hwloc_lib=$(ldd "$ls" 2>/dev/null | awk '/libhwloc/ {print $3; exit}')
for i in $(seq $runs); do
  HDAL_BACKENDS=cpu us "$ls" >>"$tmp/cpu"
  us lstopo-no-graphics --no-io >>"$tmp/lstopo"
  us "$ls" >>"$tmp/all"
  HDAL_BACKENDS=opencl us "$ls" >>"$tmp/opencl"
  HDAL_BACKENDS=-rocm us "$ls" >>"$tmp/norocm"
  if $have_clinfo; then
    us clinfo -l >>"$tmp/clinfo"
    if [ -n "$hwloc_lib" ]; then LD_PRELOAD=$hwloc_lib us clinfo -l >>"$tmp/clinfo_hwloc"; fi
  fi
done
median_ms() { sort -n "$tmp/$1" | sed -n "$(( (runs + 1) / 2 ))p" | awk '{printf "%.1f", $1 / 1000}'; }
# The ratios are medians of the rounds' own ratios: the two runs of a round
# are next to each other, so a drift of the machine between rounds cancels.
ratio() { paste -d' ' "$tmp/$1" "$tmp/$2" | awk '{printf "%.4f\n", $1 / $2}' | sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
a=$(median_ms cpu) b=$(median_ms lstopo) c=$(median_ms all) o=$(median_ms opencl) r=$(median_ms norocm)
printf '%-46s %10s\n' "command (median of $runs rounds, wall)" "ms"
printf '%-46s %10s\n' "HDAL_BACKENDS=cpu hdal-ls" "$a"
printf '%-46s %10s\n' "lstopo-no-graphics --no-io" "$b"
printf '%-46s %10s\n' "hdal-ls (every backend)" "$c"
printf '%-46s %10s\n' "HDAL_BACKENDS=opencl hdal-ls" "$o"
printf '%-46s %10s\n' "HDAL_BACKENDS=-rocm hdal-ls" "$r"
if $have_clinfo; then d=$(median_ms clinfo); printf '%-46s %10s\n' "clinfo -l" "$d"; fi
if $have_clinfo && [ -n "$hwloc_lib" ]; then
  printf '%-46s %10s\n' "clinfo -l, libhwloc loaded first (LD_PRELOAD)" "$(median_ms clinfo_hwloc)"
fi
printf 'ratio hdal-ls(cpu) / lstopo --no-io: %.2f   (target <= 1.0)\n' "$(ratio cpu lstopo)"
printf 'ratio hdal-ls(all) / hdal-ls(-rocm): %.2f   (the ROCm backend'"'"'s start-up)\n' "$(ratio all norocm)"
if $have_clinfo; then
  printf 'ratio hdal-ls(all) / clinfo -l: %.2f   (target <= 1.0)\n' "$(ratio all clinfo)"
  printf 'ratio hdal-ls(opencl only) / clinfo -l: %.2f   (the same work; shown for the split)\n' "$(ratio opencl clinfo)"
  if [ -n "$hwloc_lib" ]; then
    printf 'ratio hdal-ls(all) / clinfo -l with libhwloc loaded: %.2f   (the same libraries in the global scope)\n' \
      "$(ratio all clinfo_hwloc)"
  fi
fi
exit 0
