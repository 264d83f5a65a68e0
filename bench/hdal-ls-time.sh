#!/bin/sh
# Times hdal-ls as a user runs it (whole process, median of N runs) next to
# lstopo-no-graphics --no-io, the equivalent hwloc tool, in the same run.
# Usage: bench/hdal-ls-time.sh [HDAL_LS] (default: tools/hdal-ls of this build)
set -u
# The real binary, not libtool's wrapper script (which costs a shell per run).
if [ -n "${1:-}" ]; then ls=$1
else
  ls=../tools/.libs/hdal-ls
  LD_LIBRARY_PATH=../lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  HDAL_BACKEND_PATH=${HDAL_BACKEND_PATH:-../backends/opencl/.libs:../backends/cuda/.libs}
  export LD_LIBRARY_PATH HDAL_BACKEND_PATH
fi
runs=21
median_ms() { # median_ms CMD...: median wall time of N runs, in ms
  for i in $(seq $runs); do
    s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
  done | sort -n | sed -n "$(( (runs + 1) / 2 ))p" | awk '{printf "%.1f", $1 / 1000}'
}
printf '%-46s %10s\n' "command (median of $runs, wall)" "ms"
a=$(HDAL_BACKENDS=cpu median_ms "$ls"); printf '%-46s %10s\n' "HDAL_BACKENDS=cpu hdal-ls" "$a"
b=$(median_ms lstopo-no-graphics --no-io); printf '%-46s %10s\n' "lstopo-no-graphics --no-io" "$b"
c=$(median_ms "$ls"); printf '%-46s %10s\n' "hdal-ls (every backend)" "$c"
if command -v clinfo >/dev/null; then d=$(median_ms clinfo -l); printf '%-46s %10s\n' "clinfo -l" "$d"; fi
awk -v a="$a" -v b="$b" 'BEGIN { printf "ratio hdal-ls(cpu) / lstopo --no-io: %.2f\n", a / b }'
[ -n "${d:-}" ] && awk -v c="$c" -v d="$d" 'BEGIN { printf "ratio hdal-ls(all) / clinfo -l: %.2f\n", c / d }'
exit 0
