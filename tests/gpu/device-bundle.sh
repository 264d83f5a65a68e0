#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck disable=SC2086 # flags and libraries are word lists
# device-bundle.sh: makes a self-contained bundle of hdal for a lent GPU
# machine that has no hdal build dependencies and no network (tests/gpu/
# device-run.sh runs it there).  Run from a source tree on the build machine
# (Debian 12, with build-aux/debian-deps installed):
#   tests/gpu/device-bundle.sh BUNDLE_DIR
# The bundle folder then holds:
#   hdal-gpu.tar.gz  the tree $HDAL_GPU_ROOT (default /opt/hdal-gpu), built at
#                    that absolute path so that libtool's wrappers, run paths
#                    and the compiled-in module directory work unchanged once
#                    device-run.sh unpacks it at the same path there:
#                      src/          the sources (tracked and untracked files
#                                    git does not ignore), built in src/_build
#                      inst/         `make install` of that build, plus
#                                    inst/include/dlpack/dlpack.h
#                      lib/          this system's shared libraries the binaries
#                                    need beyond glibc, libstdc++ and libgcc_s
#                                    (hwloc, the OpenCL ICD loader, check, ...)
#                      wheelhouse/   the Python wheel (`make wheel`), which
#                                    the GPU machine's own Python installs
#                      BUILD-INFO    what was built, from which commit, where
#   device-run.sh    a copy of this tree's, so that the bundle runs from a
#                    checkout that lacks it (it runs the tree's other scripts:
#                    run-real.sh, torch-cuda.py, interop-real.py)
#   BUILD-INFO       the same facts, readable without unpacking
# Environment: HDAL_GPU_ROOT (the fixed path), JOBS (make -j, default 2),
# CONFIGURE_FLAGS (added to configure's).  `make wheel` takes its pinned
# auditwheel from the package index (python/wheel-tools.txt).
# HDAL_GPU_ROOT is emptied first; it must not exist or hold an earlier bundle's tree.
set -u
set -o pipefail

die() { echo "device-bundle.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: device-bundle.sh BUNDLE_DIR"
bundle=$1
root=${HDAL_GPU_ROOT:-/opt/hdal-gpu}
jobs=${JOBS:-2}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ -f "$top/configure.ac" ] && [ -f "$top/python/setup.py" ] || die "$top is not hdal's source tree"
case $root in /*) ;; *) die "HDAL_GPU_ROOT must be absolute: $root" ;; esac
mkdir -p "$bundle" || die "cannot make $bundle"
bundle=$(cd "$bundle" && pwd)
case $bundle/ in "$root"/*) die "the bundle cannot be inside $root" ;; esac

# ---- 1. the sources at the fixed path
if [ -e "$root" ]; then
  [ -f "$root/BUILD-INFO" ] || die "$root exists and is not an earlier bundle's tree: remove it yourself"
  rm -rf "$root" || die "cannot empty $root"
fi
mkdir -p "$root/src" "$root/lib" || die "cannot make $root"
echo "== sources -> $root/src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$top" && git ls-files -z -c -o --exclude-standard | tar --null -T - -cf -) | tar -C "$root/src" -xf - ||
    die "cannot copy the sources"
  rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
else
  (cd "$top" && tar --exclude=./_build --exclude=./.git -cf - .) | tar -C "$root/src" -xf - || die "cannot copy the sources"
  rev="not a git checkout"
fi
# Stale files of the tree the sources came from (an in-tree build) would not match.
[ ! -e "$root/src/config.status" ] || die "the source tree holds an in-tree build (config.status): make distclean first"

# ---- 2. configure, build, install at the fixed path
echo "== build in $root/src/_build (make -j$jobs)"
cd "$root/src" || die "no $root/src"
log=$root/build.log
{
  autoreconf -fi &&
  mkdir -p _build && cd _build &&
  ../configure --prefix="$root/inst" --without-mpi --disable-doc PYTHON=/usr/bin/python3 ${CONFIGURE_FLAGS:-} &&
  make -j"$jobs" &&
  make -j"$jobs" install &&
  make -j"$jobs" -C tests test_cuda_probe test_cuda test_cuda_buffers fakecuda.la &&
  make -j"$jobs" -C bench bench_gpu_copy &&
  make -j"$jobs" -C python _exchange_probe.la &&
  make wheel
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "build failed (whole log: $log)"; }
build=$root/src/_build
for f in tests/test_cuda_probe tests/test_cuda tests/test_cuda_buffers tests/.libs/fakecuda.so tools/hdal-ls; do
  [ -e "$build/$f" ] || die "the build made no $f"
done
# The wheel is the Python package on the GPU machine (device-run.sh); what made it goes.
mv "$build/wheelhouse" "$root/wheelhouse" && rm -rf "$build/python/wheel-build" || die "make wheel made no wheelhouse"
wheel=$(cd "$root/wheelhouse" && ls hdal-*.whl) || die "no wheel in $root/wheelhouse"
[ -f /usr/include/dlpack/dlpack.h ] || die "no /usr/include/dlpack/dlpack.h (Debian: libdlpack-dev)"
mkdir -p "$root/inst/include/dlpack" && cp /usr/include/dlpack/dlpack.h "$root/inst/include/dlpack/" ||
  die "cannot copy dlpack.h"

# ---- 3. this system's libraries that the binaries need
echo "== shared libraries"
objs=$(find "$root/inst" "$build" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) 2>/dev/null |
       while read -r f; do head -c 4 "$f" 2>/dev/null | grep -q ELF && echo "$f"; done)
# glibc's libraries, the C++ runtime and the compiler's: every Linux machine has
# its own, newer ones (a copy from here would shadow them); Python's is the interpreter's.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|libcrypt|libstdc\+\+|libgcc_s|libpython[0-9.]*)\.so'
libs=$(for f in $objs; do ldd "$f" 2>/dev/null; done |
       sed -n 's/^[[:space:]]*\([^[:space:]]*\) => \(\/[^[:space:]]*\) .*/\1 \2/p' | sort -u |
       while read -r name path; do
         case $path in "$root"/*) continue ;; esac
         echo "$name" | grep -Eq "$skip" && continue
         echo "$name $path"
       done)
missing=$(for f in $objs; do ldd "$f" 2>/dev/null; done | grep 'not found' | sort -u)
[ -z "$missing" ] || die "unresolved libraries in the build: $missing"
echo "$libs" | while read -r name path; do
  [ -n "$name" ] || continue
  cp -L "$path" "$root/lib/$name" && strip --strip-debug "$root/lib/$name" 2>/dev/null
  echo "   $name ($path)"
done

# ---- 4. smaller: objects and debug information the device does not need
find "$build" -name '*.o' -delete
find "$root/inst" "$build" -type f \( -name '*.so' -o -name '*.so.*' -o -name '*.a' -o -perm -u+x \) | while read -r f; do
  head -c 4 "$f" 2>/dev/null | grep -q ELF && strip --strip-debug "$f" 2>/dev/null
done
rm -rf "$root/src/autom4te.cache"

cat >"$root/BUILD-INFO" <<EOF
hdal $(sed -n 's/^version=//p' "$top/VERSION"), source $rev
built $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") ($(ldd --version | sed -n '1s/.* //p') glibc), $(uname -m)
root $root (sources src/, build src/_build, prefix inst/)
bundled libraries: $(cd "$root/lib" && echo *)
Python package: wheelhouse/$wheel
EOF

# ---- 5. the bundle
echo "== bundle -> $bundle"
rm -f "$bundle/hdal-gpu.tar.gz"
tar -C "$(dirname "$root")" -czf "$bundle/hdal-gpu.tar.gz" "$(basename "$root")" || die "cannot write the tarball"
cp "$here/device-run.sh" "$bundle/" && cp "$root/BUILD-INFO" "$bundle/" || die "cannot copy the scripts"
cat "$root/BUILD-INFO"
du -sh "$bundle"
