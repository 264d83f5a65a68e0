#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/cmake/: the CMake project, configured on a staged install of this
# build (the libraries, headers and CMake files), builds example 1, which runs.
. "$srcdir/examples/common.sh"
command -v "${CMAKE:-cmake}" >/dev/null 2>&1 || { echo "SKIP: cmake not found (apt-get install cmake)"; exit 77; }
top_builddir=$(cd "$top_builddir" && pwd)
tmp=$(mktemp -d "$PWD/example-cmake.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s "$@" DESTDIR="$stage" >>"$tmp/install.log" 2>&1; }
mk -C "$top_builddir/lib" install && mk -C "$top_builddir" install-includeHEADERS install-hdalincludeHEADERS \
  install-cmakeDATA || { cat "$tmp/install.log"; fail "the staged install failed"; }
# The examples as installed: the project and list-devices.c one directory up.
mkdir -p "$tmp/examples/cmake" && cp "$top_srcdir/examples/list-devices.c" "$tmp/examples/" &&
  cp "$top_srcdir/examples/cmake/CMakeLists.txt" "$tmp/examples/cmake/" || exit 1
# lib64 (the RPM spec's %check, on Debian): named, as tests/release/cmake-consumer.sh says why.
where=$stage${HDAL_TEST_PREFIX:?}
case ${HDAL_TEST_LIBDIR:?} in */lib64) where="$where;$stage$HDAL_TEST_LIBDIR/cmake" ;; esac
CC="${CC:-cc}" "${CMAKE:-cmake}" -S "$tmp/examples/cmake" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$where" \
  -DCMAKE_C_FLAGS="${HDAL_TEST_CFLAGS:-}" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "cmake failed"; }
grep -q "^-- hdal $version\$" "$tmp/configure.log" || { cat "$tmp/configure.log"; fail "find_package did not find hdal $version"; }
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${CMAKE:-cmake}" --build "$tmp/build" >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log"; fail "cmake --build failed"; }
bin=$tmp/build
run list-devices
[ $rc -eq 0 ] || fail "list-devices (CMake) exited $rc"
has "^hdal $version: [0-9][0-9]* devices\$"
has '^  cpu  *ok: 1 device$'
echo "PASS"
