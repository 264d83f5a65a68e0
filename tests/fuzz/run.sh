#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds hdal's libFuzzer harnesses with clang (-fsanitize=fuzzer,address,undefined),
# outside the autotools build, and runs each for SECONDS (default 60).
#   tests/fuzz/run.sh [SECONDS]
# Environment: CC (default: clang, else clang-14), HDAL_FUZZ_BUILD (build directory;
# default: a temporary one, removed afterwards), HDAL_FUZZ_JOBS (parallel jobs, default 1).
# Exit status: 0 when every harness ran clean, else the first failure's.
set -eu
seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if [ -z "${CC:-}" ]; then
  if command -v clang >/dev/null 2>&1; then CC=clang; else CC=clang-14; fi
fi
build=${HDAL_FUZZ_BUILD:-}
cleanup=
if [ -z "$build" ]; then
  build=$(mktemp -d "${TMPDIR:-/tmp}/hdal-fuzz.XXXXXX")
  cleanup=$build
fi
trap '[ -n "$cleanup" ] && rm -rf "$cleanup"' EXIT
mkdir -p "$build"
version=$(sed -n 's/^version=//p' "$top/VERSION")
# What configure defines and these sources use (m4/hdal_hwloc.m4, m4/hdal_visibility.m4,
# configure.ac's backends of backends/registry).
known=$("$top/build-aux/registry" names "$top") || exit 1
cat > "$build/config.h" <<EOC
#define _GNU_SOURCE 1
#define PACKAGE_VERSION "$version"
#define HDAL_HWLOC_PLUGINS_DIR "$(pkg-config --variable=libdir hwloc)/hwloc"
#define HDAL__HIDDEN __attribute__((visibility("hidden")))
#define HDAL__KNOWN_BACKENDS $(echo "$known" | sed 's/[a-z0-9_][a-z0-9_]*/"&"/g; s/ /, /g')
#define HDAL__NKNOWN_BACKENDS $(echo "$known" | wc -w)
EOC
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
hwloc=$(pkg-config --cflags --libs hwloc)
lib_sources="$top/lib/*.c $top/backends/cpu/*.c"
# The OpenCL backend module, for fuzz_import's imports onto PoCL's devices,
# with PoCL's vendor directory (tests/fakes/cl/make-vendors.sh); without the ICD
# loader's headers or PoCL, fuzz_import runs on the CPU devices alone.
unset HDAL_FUZZ_MODULES
if pkg-config --exists OpenCL 2>/dev/null && sh "$top/tests/fakes/cl/make-vendors.sh" "$build/icd" >/dev/null &&
   [ -f "$build/icd/pocl-devices" ]; then
  mkdir -p "$build/modules"
  echo "fuzz: building the OpenCL module"
  # shellcheck disable=SC2086
  $CC -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
    -shared -fPIC -fvisibility=hidden -I"$build" -I"$top/include" -o "$build/modules/hdal_opencl.so" \
    "$top"/backends/opencl/*.c $(pkg-config --cflags --libs OpenCL)
  HDAL_FUZZ_MODULES=$build/modules OCL_ICD_VENDORS=$build/icd/pocl POCL_DEVICES=$(cat "$build/icd/pocl-devices")
  POCL_CACHE_DIR=$build/pocl-cache
  export HDAL_FUZZ_MODULES OCL_ICD_VENDORS POCL_DEVICES POCL_CACHE_DIR
fi
# PoCL's worker threads have alternate signal stacks of their own; the
# sanitizer's __tls_get_addr hook misreads some dynamic-TLS blocks (PoCL's,
# LLVM's) and LeakSanitizer then dies at a leak check (both: tests/Makefile.am).
ASAN_OPTIONS="use_sigaltstack=0:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export ASAN_OPTIONS
# fuzz_process_table also renders what it accepts through hdal-ls's writers:
# every file of the tool but its main (hdal-ls.c), so that a new one comes along.
tools_sources=$(ls "$top"/tools/ls_*.c "$top"/tools/json.c "$top"/tools/text.c | tr '\n' ' ')
for h in import process_table; do
  echo "fuzz: building fuzz_$h"
  extra=
  [ "$h" = process_table ] && extra="-I$top/tools $tools_sources"
  # shellcheck disable=SC2086
  $CC $flags -I"$build" -I"$top/include" -I"$top/lib" -DHDAL_BUILDING -DHDAL_MODULE_DIR='"/nonexistent"' -DHDAL_MODULE_SUBDIR='"hdal/backends"' \
    -o "$build/fuzz_$h" "$here/fuzz_$h.c" $extra $lib_sources $hwloc -lpthread -ldl
done
status=0
if [ "$seconds" = replay ]; then
  replayed=0
  for h in import process_table; do
    set -- "$here/corpus/$h"/*
    [ -e "$1" ] || continue
    if ! ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=1 HDAL_BACKENDS=cpu "$build/fuzz_$h" -timeout=20 "$@" >"$build/replay_$h.log" 2>&1; then
      echo "fuzz: replay of fuzz_$h FAILED; the log's tail:"
      tail -40 "$build/replay_$h.log"
      exit 1
    fi
    echo "fuzz: fuzz_$h: $# corpus inputs replayed clean"
    replayed=$((replayed + $#))
  done
  echo "fuzz corpus: $replayed inputs replayed"
  exit 0
fi
for h in import process_table; do
  corpus="$build/corpus_$h"
  mkdir -p "$corpus"
  cp "$here/corpus/$h"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: running fuzz_$h for ${seconds}s"
  # Corpus growth goes to the build directory; the committed seeds stay as they are.
  if ! ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=1 HDAL_BACKENDS=cpu "$build/fuzz_$h" -max_total_time="$seconds" \
      -jobs="${HDAL_FUZZ_JOBS:-1}" -workers="${HDAL_FUZZ_JOBS:-1}" -print_final_stats=1 \
      -artifact_prefix="$build/crash_$h-" "$corpus" > "$build/fuzz_$h.log" 2>&1; then
    echo "fuzz: fuzz_$h FAILED; the log's tail:"
    tail -40 "$build/fuzz_$h.log"
    ls "$build"/crash_"$h"-* 2>/dev/null && cleanup=  # keep the reproducer
    [ $status -eq 0 ] && status=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$build/fuzz_$h.log" | tail -2 | sed "s/^/fuzz: fuzz_$h: /"
  fi
done
exit $status
