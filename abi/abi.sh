#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hdal's ABI baselines (issue 7): libhdal and libhdal-mpi as abidw saw them at
# the libtool versions recorded in abi/versions, and the backend module ABI
# (include/hdal/backend.h, docs/backend-abi.md) as the OpenCL module's
# descriptor reaches it, at the HDAL_BACKEND_ABI_VERSION recorded there too:
# any change of those tables needs a new module ABI number.
#
#   abi/abi.sh check  [BUILD_DIR]   compare the build's libraries with the baselines (CI)
#   abi/abi.sh update [BUILD_DIR]   rewrite the baselines from the build, after VERSION was bumped
#
# BUILD_DIR defaults to _build.  Needs abidiff/abidw (Debian: abigail-tools).
# A library the build lacks (libhdal-mpi without MPI) is reported and skipped.
# Exit status: 0 same ABI; 1 the ABI changed (the message says what to do);
# 2 usage or tool errors.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-check}
build=$(cd "${2:-$top/_build}" && pwd)
libs="lib/libhdal mpi/libhdal-mpi backends/opencl/hdal_opencl"

command -v abidiff >/dev/null || { echo "abidiff not found (apt-get install abigail-tools)" >&2; exit 2; }

# libtool current:revision:age from VERSION, and as the baselines recorded it.
so_version() { sed -n "s/^$1=//p" "$2"; }
var_of() {
  case $1 in
  */libhdal) echo libhdal_so_version ;; */libhdal-mpi) echo libhdal_mpi_so_version ;; *) echo hdal_backend_abi_version ;;
  esac
}
# The versions as the tree says them: VERSION, and the module ABI from its header.
versions_now() {
  grep -E '^libhdal(_mpi)?_so_version=' "$top/VERSION"
  sed -n 's/^#define HDAL_BACKEND_ABI_VERSION \([0-9]*\)u$/hdal_backend_abi_version=\1/p' "$top/include/hdal/backend.h"
}
# A module carries the module ABI: its baseline is named for it.
name_of() { case $1 in */hdal_opencl) echo hdal-backend ;; *) basename "$1" ;; esac; }

# The library file: libtool puts it under .libs; the soname's major is current - age.
lib_file() {
  local base=$1 v c a
  case $base in */hdal_opencl) echo "$build/$(dirname "$base")/.libs/hdal_opencl.so"; return ;; esac
  v=$(so_version "$(var_of "$base")" "$top/VERSION")
  c=${v%%:*}; a=${v##*:}
  echo "$build/$(dirname "$base")/.libs/$(basename "$base").so.$((c - a))"
}

# abidw output without paths of this machine: no corpus path, no compilation
# directory, no source locations; only types reachable from the public headers.
dump() {
  local only=
  case $1 in */hdal_opencl.so) only=--drop-undefined-syms ;; esac
  abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "$top/include" \
    --drop-private-types $only --out-file "$2" "$1"
}
# What to change in the tree for a change of base's ABI ($2: "compatible" or not).
advice() {
  case $1 in
  */hdal_opencl) echo "in include/hdal/backend.h, HDAL_BACKEND_ABI_VERSION += 1 (modules of another number are refused)" ;;
  *) if [ "${2:-}" = compatible ]; then echo "in VERSION, $(var_of "$1"): current += 1, revision = 0, age += 1"
     else echo "in VERSION, $(var_of "$1"): current += 1, revision = 0, age = 0"; fi ;;
  esac
}
version_of() { versions_now | sed -n "s/^$(var_of "$1")=//p"; }

status=0
case $mode in
check)
  for base in $libs; do
    name=$(name_of "$base")
    so=$(lib_file "$base")
    baseline="$top/abi/$name.abi"
    if [ ! -f "$so" ]; then echo "$name: not built in $build, skipped"; continue; fi
    [ -f "$baseline" ] || { echo "$name: no baseline $baseline" >&2; exit 2; }
    current=$(mktemp)
    dump "$so" "$current"
    rc=0
    abidiff "$baseline" "$current" >"$current.diff" || rc=$?
    if [ $((rc & 3)) -ne 0 ]; then
      echo "$name: abidiff failed ($rc)" >&2; cat "$current.diff" >&2; status=2
    elif [ $((rc & 8)) -ne 0 ]; then
      cat "$current.diff"
      echo "$name: INCOMPATIBLE ABI change. If intended: $(advice "$base"); then abi/abi.sh update"
      status=1
    elif [ $((rc & 4)) -ne 0 ]; then
      cat "$current.diff"
      echo "$name: the ABI changed compatibly (additions). If intended: $(advice "$base" compatible); then abi/abi.sh update"
      status=1
    else
      echo "$name: ABI unchanged ($(version_of "$base"))"
      if [ "$(version_of "$base")" != "$(so_version "$(var_of "$base")" "$top/abi/versions")" ]; then
        echo "$name: the version changed without an ABI change: abi/abi.sh update"; status=1
      fi
    fi
    rm -f "$current" "$current.diff"
  done
  ;;
update)
  for base in $libs; do
    name=$(name_of "$base")
    so=$(lib_file "$base")
    var=$(var_of "$base")
    [ -f "$so" ] || { echo "$name: not built in $build" >&2; exit 2; }
    now=$(version_of "$base")
    was=$(so_version "$var" "$top/abi/versions" 2>/dev/null || true)
    new=$(mktemp)
    dump "$so" "$new"
    if [ -f "$top/abi/$name.abi" ] && ! abidiff "$top/abi/$name.abi" "$new" >/dev/null && [ "$now" = "$was" ] &&
       [ "${FORCE:-}" != 1 ]; then
      echo "$name: the ABI changed but $var is still $now, as the baseline: $(advice "$base") first" >&2
      rm -f "$new"; exit 1
    fi
    mv "$new" "$top/abi/$name.abi"
    chmod 644 "$top/abi/$name.abi"
    echo "$name: baseline written for $var=$now"
  done
  { echo "# versions the baselines in this directory were taken at (abi/abi.sh update)."
    versions_now; } >"$top/abi/versions"
  ;;
*)
  echo "usage: $0 check|update [BUILD_DIR]" >&2; exit 2 ;;
esac
exit $status
