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
#                      bin/pkg-config-hdal  answers setup.py's two questions
#                                    (--cflags/--libs hdal) where pkg-config is absent
#                      py3.12/include  Python 3.12's headers, where this machine
#                                    has a Python 3.12 (for a device interpreter
#                                    without its headers)
#                      prebuilt/cp312  the package built here for Python 3.12,
#                                    the last resort when nothing compiles there
#                      BUILD-INFO    what was built, from which commit, where
#   device-run.sh    a copy of this tree's, so that the bundle runs from a
#                    checkout that lacks it (it runs the tree's other scripts:
#                    run-real.sh, torch-cuda.py, interop-real.py)
#   BUILD-INFO       the same facts, readable without unpacking
# Environment: HDAL_GPU_ROOT (the fixed path), JOBS (make -j, default 2),
# PYTHON312 (a Python 3.12 interpreter with its headers; default: the first
# python3.12 found that has them), CONFIGURE_FLAGS (added to configure's).
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
mkdir -p "$root/src" "$root/lib" "$root/bin" || die "cannot make $root"
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
  make -j"$jobs" -C python _exchange_probe.la
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "build failed (whole log: $log)"; }
build=$root/src/_build
for f in tests/test_cuda_probe tests/test_cuda tests/test_cuda_buffers tests/.libs/fakecuda.so tools/hdal-ls; do
  [ -e "$build/$f" ] || die "the build made no $f"
done
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

# ---- 4. Python: pkg-config's answers, Python 3.12's headers, a package built here for 3.12
pcdir=$root/inst/lib/pkgconfig
cflags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags hdal) && libs_pc=$(PKG_CONFIG_PATH=$pcdir pkg-config --libs hdal) ||
  die "pkg-config does not find the installed hdal.pc"
cat >"$root/bin/pkg-config-hdal" <<EOF
#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pkg-config's answers about the installed hdal (made by device-bundle.sh), for
# python/setup.py (PKG_CONFIG=this) where pkg-config is absent.
for a; do
  case \$a in
    --cflags) echo "$cflags" ;;
    --libs) echo "$libs_pc" ;;
    --modversion) echo "$(sed -n 's/^version=//p' "$top/VERSION")" ;;
    --exists|hdal) ;;
    --*) echo "pkg-config-hdal: \$a: unknown" >&2; exit 1 ;;
    *) echo "pkg-config-hdal: only hdal is known" >&2; exit 1 ;;
  esac
done
EOF
chmod +x "$root/bin/pkg-config-hdal"

py312=${PYTHON312:-}
if [ -z "$py312" ]; then
  for p in $(type -ap python3.12) /usr/bin/python3.12 /usr/local/bin/python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    [ -x "$p" ] || continue
    inc=$("$p" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
    [ -f "$inc/Python.h" ] && { py312=$p; break; }
  done
fi
py312_info="none (no Python 3.12 with its headers here)"
if [ -n "$py312" ]; then
  inc=$("$py312" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || die "$py312 does not run"
  mkdir -p "$root/py3.12" && cp -r "$inc" "$root/py3.12/include" || die "cannot copy $inc"
  suffix=$("$py312" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  pre=$root/prebuilt/cp312
  mkdir -p "$pre/hdal"
  echo "== the package for Python 3.12 ($py312, $suffix)"
  # python/setup.py's flags, by hand (setuptools may be absent from that interpreter).
  # hdal-ls's table is built into the extension (python/setup.py: TABLE_SOURCES),
  # with the build tree's config.h.
  cc -shared -fPIC -O2 -fvisibility=hidden -fno-strict-aliasing -I"$root/py3.12/include" $cflags \
    -I"$root/src/_build" -I"$root/src/tools" "$root"/src/python/*.c \
    $(for f in ls_table.c ls_view.c ls_hardware.c text.c json.c; do echo "$root/src/tools/$f"; done) -o "$pre/hdal/_hdal$suffix" $libs_pc -Wl,-rpath,"$root/inst/lib" >>"$log" 2>&1 &&
  cc -shared -fPIC -O2 -fno-strict-aliasing -I"$root/py3.12/include" $cflags \
    "$root/src/python/tests/exchange_probe.c" -o "$pre/_exchange_probe$suffix" >>"$log" 2>&1 ||
    die "cannot build the package for Python 3.12 (log: $log)"
  cp "$root"/src/python/hdal/*.py "$root"/src/python/hdal/*.pyi "$root/src/python/hdal/py.typed" "$pre/hdal/"
  py312_info="$("$py312" -c 'import platform; print(platform.python_version())') ($suffix)"
fi

# ---- 5. smaller: objects and debug information the device does not need
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
Python 3.12 headers and prebuilt package: $py312_info
EOF

# ---- 6. the bundle
echo "== bundle -> $bundle"
rm -f "$bundle/hdal-gpu.tar.gz"
tar -C "$(dirname "$root")" -czf "$bundle/hdal-gpu.tar.gz" "$(basename "$root")" || die "cannot write the tarball"
cp "$here/device-run.sh" "$bundle/" && cp "$root/BUILD-INFO" "$bundle/" || die "cannot copy the scripts"
cat "$root/BUILD-INFO"
du -sh "$bundle"
