#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The CMake package as a C developer uses it (issue 38, item 4): hdal is
# installed into a staging directory (make install DESTDIR=, the libraries,
# headers, modules and the package files only), then a small CMake project
# asks for find_package(hdal MAJOR.MINOR CONFIG REQUIRED) with the version
# VERSION says, builds a program on hdal::hdal and runs it: it must list this
# machine's devices from the staged libhdal and modules.  The version rule of
# hdalConfigVersion.cmake (docs/api-policy.md) is checked on the same
# install, the staged tree is moved and found again (the package is
# relocatable), and with libhdal-mpi built, a program on hdal::hdal-mpi is
# built too.  No cmake: exit 77.
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?}"
command -v "${CMAKE:-cmake}" >/dev/null 2>&1 || { echo "SKIP: cmake not found (apt-get install cmake)"; exit 77; }
cmake=${CMAKE:-cmake}
fail() { echo "FAIL: $*"; exit 1; }

version=$(sed -n 's/^version=//p' "$top_srcdir/VERSION")
case $version in [0-9]*.[0-9]*.[0-9]*) ;; *) fail "VERSION: no version ($version)" ;; esac
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
want=$major.$minor

top_builddir=$(cd "$top_builddir" && pwd)
tmp=$(mktemp -d "$PWD/cmake-consumer.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage

# A staged install, as a packager makes one.  The test's make is not the
# suite's: it takes no part in the suite's job server.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s "$@" DESTDIR="$stage" >>"$tmp/install.log" 2>&1; }
mk -C "$top_builddir/lib" install || { cat "$tmp/install.log"; fail "make install (lib) failed"; }
mk -C "$top_builddir" install-includeHEADERS install-hdalincludeHEADERS install-pkgconfigDATA install-cmakeDATA \
  || { cat "$tmp/install.log"; fail "make install (headers, pkg-config, CMake files) failed"; }
for d in "$top_builddir"/backends/*/; do
  [ -f "$d/Makefile" ] || continue
  mk -C "$d" install || { cat "$tmp/install.log"; fail "make install ($d) failed"; }
done
if [ "${HDAL_TEST_MPI_BUILT:-no}" = yes ]; then
  mk -C "$top_builddir/mpi" install || { cat "$tmp/install.log"; fail "make install (mpi) failed"; }
fi

config=$(find "$stage" -name hdalConfig.cmake)
[ -n "$config" ] && [ "$(echo "$config" | wc -l)" -eq 1 ] || fail "one hdalConfig.cmake expected in the staged install: '$config'"
[ -f "${config%/*}/hdalConfigVersion.cmake" ] || fail "no hdalConfigVersion.cmake next to $config"
prefix=$stage${HDAL_TEST_PREFIX:?}
libdir=$stage${HDAL_TEST_LIBDIR:?}
[ "$config" = "$libdir/cmake/hdal/hdalConfig.cmake" ] || fail "hdalConfig.cmake is at $config, not in \$(libdir)/cmake/hdal"

mkdir "$tmp/src"
cat >"$tmp/src/list_devices.c" <<'EOC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <hdal.h>
#include <stdio.h>

int main(void) {
  Dl_info where;
  if (dladdr((void *)hdal_context_create, &where) && where.dli_fname) printf("libhdal: %s\n", where.dli_fname);
  printf("version: %s\n", hdal_version_string());
  hdal_context *ctx;
  hdal_error *err = hdal_context_create(NULL, &ctx);
  if (err) {
    fprintf(stderr, "%s\n", hdal_error_message(err));
    hdal_error_destroy(err);
    return 1;
  }
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    printf("device %d %s %s\n", hdal_device_id(d), hdal_device_platform(d), hdal_device_kind(d));
  }
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    printf("backend %s: %s\n", hdal_context_backend_name(ctx, i), hdal_context_backend_status(ctx, i));
  hdal_context_destroy(ctx);
  return 0;
}
EOC
cat >"$tmp/src/mpi_app.c" <<'EOC'
#include <hdal/mpi.h>
int main(void) { return hdal_mpi_context_create == 0; }
EOC
cat >"$tmp/src/CMakeLists.txt" <<'EOC'
cmake_minimum_required(VERSION 3.10)
project(hdal_consumer C)
find_package(hdal ${HDAL_WANT} CONFIG REQUIRED ${HDAL_EXTRA})
add_executable(list_devices list_devices.c)
target_link_libraries(list_devices PRIVATE hdal::hdal)
if(HDAL_MPI)
  find_package(hdal ${HDAL_WANT} CONFIG REQUIRED COMPONENTS mpi)
  add_executable(mpi_app mpi_app.c)
  target_link_libraries(mpi_app PRIVATE hdal::hdal-mpi)
endif()
message(STATUS "hdal_VERSION=${hdal_VERSION}")
EOC

# configure NAME PREFIX ARGS...: a fresh build directory of the project.
# A libdir of lib64 (the RPM spec's %check, on Debian) is one Debian's CMake
# does not search under a prefix (FIND_LIBRARY_USE_LIB64_PATHS is off where
# libraries go to lib/<arch>): its cmake folder is named as well there.
configure() {
  name=$1 where=$2; shift 2
  rm -rf "$tmp/$name"
  case ${HDAL_TEST_LIBDIR##*/} in lib64) where="$where;$where${HDAL_TEST_LIBDIR#"$HDAL_TEST_PREFIX"}/cmake" ;; esac
  CC="${CC:-cc}" "$cmake" -S "$tmp/src" -B "$tmp/$name" -DCMAKE_PREFIX_PATH="$where" \
    -DCMAKE_C_FLAGS="${HDAL_TEST_CFLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${HDAL_TEST_LDFLAGS:-}" "$@" >"$tmp/$name.log" 2>&1
}

mpi=OFF
[ "${HDAL_TEST_MPI_BUILT:-no}" = yes ] && mpi=ON
configure build "$prefix" -DHDAL_WANT="$want" -DHDAL_MPI=$mpi \
  || { cat "$tmp/build.log"; fail "find_package(hdal $want CONFIG REQUIRED) failed on the staged install"; }
grep -q "hdal_VERSION=$version\$" "$tmp/build.log" || { cat "$tmp/build.log"; fail "hdal_VERSION is not $version"; }
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$cmake" --build "$tmp/build" >"$tmp/build.out" 2>&1 \
  || { cat "$tmp/build.out"; fail "the CMake project does not build"; }
# The program finds libhdal by the run path CMake gives it from the imported
# target, the modules in the staged module directory; a caller's
# LD_LIBRARY_PATH (the RPM spec's %check names the build tree's) would win.
env -u LD_LIBRARY_PATH HDAL_BACKEND_PATH=$libdir/hdal/backends "$tmp/build/list_devices" >"$tmp/run.out" 2>&1 \
  || { cat "$tmp/run.out"; fail "the program built with CMake failed"; }
cat "$tmp/run.out"
grep -q "^libhdal: $libdir/libhdal.so" "$tmp/run.out" || fail "the program did not run the staged libhdal"
grep -q "^version: $version\$" "$tmp/run.out" || fail "hdal_version_string() is not $version"
grep -q '^device 0 cpu ' "$tmp/run.out" || fail "no CPU device listed"
grep -q '^backend cpu: ok' "$tmp/run.out" || fail "the CPU backend is not ok"
if [ -f "$libdir/hdal/backends/hdal_opencl.so" ] && grep -q '^backend opencl:.*not found' "$tmp/run.out"; then
  fail "the staged OpenCL module was not found"
fi
if [ $mpi = ON ]; then
  [ -x "$tmp/build/mpi_app" ] || fail "hdal::hdal-mpi: the MPI program was not built"
fi

# Versions (hdalConfigVersion.cmake): the exact version is taken; the next
# minor is not, nor (for 0.y) the previous one, nor the next major.
configure exact "$prefix" -DHDAL_WANT="$version" -DHDAL_EXTRA=EXACT || { cat "$tmp/exact.log"; fail "find_package(hdal $version EXACT) failed"; }
configure newer "$prefix" -DHDAL_WANT="$major.$((minor + 1))" && fail "find_package(hdal $major.$((minor + 1))) took $version"
grep -q "$version" "$tmp/newer.log" || { cat "$tmp/newer.log"; fail "the refusal of $major.$((minor + 1)) does not name $version"; }
configure major "$prefix" -DHDAL_WANT="$((major + 1)).0" && fail "find_package(hdal $((major + 1)).0) took $version"
if [ "$major" -eq 0 ] && [ "$minor" -gt 0 ]; then
  configure older "$prefix" -DHDAL_WANT="0.$((minor - 1))" && fail "find_package(hdal 0.$((minor - 1))) took $version: 0.y releases are not compatible with each other"
fi
configure range "$prefix" -DHDAL_WANT="$want...$((major + 1)).0" || { cat "$tmp/range.log"; fail "find_package(hdal $want...$((major + 1)).0) failed"; }
configure component "$prefix" -DHDAL_WANT="$want" -DHDAL_EXTRA="COMPONENTS;nosuch" && fail "find_package(hdal COMPONENTS nosuch) succeeded"

# Relocatable: the whole staged tree moved elsewhere is found there.
mv "$stage" "$tmp/elsewhere"
configure moved "$tmp/elsewhere${HDAL_TEST_PREFIX}" -DHDAL_WANT="$want" \
  || { cat "$tmp/moved.log"; fail "the moved install is not found"; }
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$cmake" --build "$tmp/moved" >"$tmp/moved.out" 2>&1 \
  || { cat "$tmp/moved.out"; fail "the moved install does not build the program"; }
env -u LD_LIBRARY_PATH HDAL_BACKEND_PATH=$tmp/elsewhere${HDAL_TEST_LIBDIR}/hdal/backends "$tmp/moved/list_devices" >"$tmp/moved.run" 2>&1 \
  || { cat "$tmp/moved.run"; fail "the program built on the moved install failed"; }
grep -q "^libhdal: $tmp/elsewhere${HDAL_TEST_LIBDIR}/libhdal.so" "$tmp/moved.run" || { cat "$tmp/moved.run"; fail "the program on the moved install did not run its libhdal"; }
echo "PASS: find_package(hdal $want CONFIG REQUIRED) on a staged and a moved install (cmake $("$cmake" --version | sed -n '1s/.* //p'))"
