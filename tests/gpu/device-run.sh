#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck disable=SC2086,SC2317 # flags and libraries are word lists; the steps' functions run through bash -c
# device-run.sh: hdal's real-GPU checks on a lent GPU machine, from a bundle
# made by tests/gpu/device-bundle.sh on the build machine:
#   device-run.sh [--dry-run] BUNDLE_DIR
# Run from a checkout's root (or anywhere: it uses the bundle's own sources).
# Steps, each under its own time limit (`timeout`), each ending in one line
#   STEP <name>: PASS|FAIL|SKIP (<seconds>s) [why]
# and none able to stop the ones after it:
#   unpack   the bundle's tree at its fixed path (BUILD-INFO's root)
#   facts    the machine: GPUs, driver, glibc, compiler, python3 and its torch,
#            jax and cupy (never fails)
#   python   the hdal package built for this machine's python3 ($PYTHON):
#            pip install --target against the bundle's installed libhdal (pip
#            and setuptools with the interpreter's headers), else one cc
#            command (with the bundle's Python 3.12 headers where the
#            interpreter has none), else the package built for 3.12 on the
#            build machine; then imported
#   real     tests/gpu/run-real.sh cuda: test_cuda_probe, test_cuda,
#            test_cuda_buffers on the real driver, torch-cuda.py, hdal-ls
#   pyls     python3 -m hdal, the package's device table
#   interop  tests/gpu/interop-real.py: jax, torch and cupy through hdal
# The bundled libraries are put on LD_LIBRARY_PATH only where the machine lacks
# them (HDAL_GPU_LIBS=all: all of them).  Logs go to $OUT/hdal-gpu/ when OUT is
# set (else a directory under /tmp), the summary too (summary.txt).
# --dry-run: the suite's fake CUDA driver with two devices instead of the real
# one (HDAL_CUDA_LIBRARY, FAKECUDA_DEVICES), for a rehearsal on a machine
# without a GPU; the Python checks then skip.
# Exit status: 0 when no step failed, 1 otherwise.
set -u

dry=
if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
[ $# -eq 1 ] || { echo "usage: device-run.sh [--dry-run] BUNDLE_DIR" >&2; exit 2; }
bundle=$(cd "$1" 2>/dev/null && pwd) || { echo "device-run.sh: no bundle at $1" >&2; exit 2; }
[ -f "$bundle/hdal-gpu.tar.gz" ] && [ -f "$bundle/BUILD-INFO" ] || { echo "device-run.sh: $bundle has no hdal-gpu.tar.gz and BUILD-INFO" >&2; exit 2; }
root=$(sed -n 's/^root \([^ ]*\).*/\1/p' "$bundle/BUILD-INFO")
[ -n "$root" ] || { echo "device-run.sh: BUILD-INFO names no root" >&2; exit 2; }
PY=${PYTHON:-python3}
start=$(date +%s)

if [ -n "${OUT:-}" ]; then logs=$OUT/hdal-gpu; else logs=$(mktemp -d /tmp/hdal-gpu-logs.XXXXXX); fi
mkdir -p "$logs" || { echo "device-run.sh: cannot make $logs" >&2; exit 2; }
summary=$logs/summary.txt
: >"$summary"
failed=0

# step NAME LIMIT LINES COMMAND...: runs COMMAND under `timeout LIMIT`, its
# output in $logs/NAME.log, its last LINES lines shown (SHOW_LINES: that many
# for every step); exit 0 PASS, 77 SKIP, else FAIL.
step() {
  name=$1 limit=$2 show=$3
  shift 3
  echo
  echo "======== $name (limit ${limit}s)"
  t0=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1 </dev/null
  rc=$?
  t=$(( $(date +%s) - t0 ))
  tail -n "${SHOW_LINES:-$show}" "$logs/$name.log"
  case $rc in
    0) verdict=PASS why= ;;
    77) verdict=SKIP why=$(grep '^SKIP' "$logs/$name.log" | tail -n1 | cut -c1-160) ;;
    124|137) verdict=FAIL why="timed out after ${limit}s"; failed=1 ;;
    *) verdict=FAIL why="exit $rc"; failed=1 ;;
  esac
  line="STEP $name: $verdict (${t}s)${why:+ $why}"
  echo "$line"
  echo "$line" >>"$summary"
}

# ---- unpack (skipped when the same tree is there already)
do_unpack() {
  if [ -f "$root/BUILD-INFO" ] && cmp -s "$root/BUILD-INFO" "$bundle/BUILD-INFO"; then
    echo "$root holds this bundle already"
  else
    rm -rf "$root" && mkdir -p "$(dirname "$root")" && tar -C "$(dirname "$root")" -xzf "$bundle/hdal-gpu.tar.gz" || return 1
  fi
  cat "$root/BUILD-INFO"
}
export root bundle PY
export -f do_unpack
step unpack 30 10 bash -c do_unpack
build=$root/src/_build

# ---- the bundled libraries the machine lacks
mkdir -p "$root/ld" && rm -f "$root"/ld/*
for f in "$root"/lib/*; do
  [ -e "$f" ] || continue
  n=$(basename "$f")
  if [ "${HDAL_GPU_LIBS:-}" != all ] && ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$n (.*x86-64"; then continue; fi
  ln -s "$f" "$root/ld/$n"
done
echo "bundled libraries used: $(cd "$root/ld" && ls | tr '\n' ' ')"
export LD_LIBRARY_PATH="$root/ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -n "$dry" ]; then
  export HDAL_CUDA_LIBRARY="$build/tests/.libs/fakecuda.so" FAKECUDA_DEVICES=2
  echo "DRY RUN: the fake CUDA driver ($HDAL_CUDA_LIBRARY, 2 devices)"
fi

# ---- facts
do_facts() {
  echo "host: $(uname -srm); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>/dev/null | head -n1)"
  echo "cc: $(command -v cc || echo none) $(cc --version 2>/dev/null | head -n1)"
  echo "pkg-config: $(command -v pkg-config || echo none)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
  else
    echo "nvidia-smi: none"
  fi
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1 |libOpenCL\.so\.1 |libhwloc\.so\.15 ' | sed 's/^/ldconfig: /'
  echo "python: $(command -v "$PY") $("$PY" -c 'import sys, sysconfig, os; print(sys.version.split()[0], sys.prefix, "headers:", os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>&1)"
  "$PY" - <<'EOF' 2>&1
import importlib, os
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
for m in ("numpy", "setuptools", "pip", "pytest", "torch", "jax", "jaxlib", "cupy"):
    try:
        v = importlib.import_module(m).__version__
    except Exception as e:
        v = "absent (%s)" % type(e).__name__
    print("  %s %s" % (m, v))
try:
    import torch
    print("  torch: CUDA %s, available %s, %d device(s), table %s" % (
        torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count(),
        hasattr(torch.Tensor, "__dlpack_c_exchange_api__")))
except Exception as e:
    print("  torch:", e)
try:
    import jax
    print("  jax devices:", jax.devices())
except Exception as e:
    print("  jax devices:", e)
try:
    import cupy
    print("  cupy: runtime %s, driver %s, %d device(s)" % (cupy.cuda.runtime.runtimeGetVersion(),
          cupy.cuda.runtime.driverGetVersion(), cupy.cuda.runtime.getDeviceCount()))
except Exception as e:
    print("  cupy:", e)
EOF
  return 0
}
export -f do_facts
step facts 60 30 bash -c do_facts

# ---- the package for this python3
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
pkg=$root/py-$pyver
do_python() {
  rm -rf "$pkg" "$root/src/python/build" "$root/src/python/hdal.egg-info"
  mkdir -p "$pkg"
  inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  flags="$("$root/bin/pkg-config-hdal" --cflags)"
  libs="$("$root/bin/pkg-config-hdal" --libs)"
  how="" force=${HDAL_GPU_PYBUILD:-}
  [ -z "$force" ] || echo "-- HDAL_GPU_PYBUILD=$force"
  if [ "$force" = bundled ] || [ "$force" = prebuilt ]; then inc=/nonexistent; fi
  if [ -f "$inc/Python.h" ] && [ "$force" != cc ]; then
    echo "-- pip install --target (the interpreter's headers, $inc)"
    if (cd "$root/src/python" && PKG_CONFIG="$root/bin/pkg-config-hdal" "$PY" -m pip install --no-build-isolation \
          --no-deps --no-index --no-cache-dir --target "$pkg" .); then
      how=pip
    else
      echo "-- pip failed; cc instead"
    fi
  elif [ -f "$inc/Python.h" ]; then
    :
  elif [ "$pyver" = 3.12 ] && [ -f "$root/py3.12/include/Python.h" ] && [ "$force" != prebuilt ]; then
    inc=$root/py3.12/include
    echo "-- no Python.h with the interpreter: the bundle's Python 3.12 headers"
  else
    inc=
  fi
  if [ -z "$how" ] && [ -n "$inc" ] && command -v cc >/dev/null; then
    rm -rf "$pkg" && mkdir -p "$pkg/hdal" &&
    cp "$root"/src/python/hdal/*.py "$root"/src/python/hdal/*.pyi "$root/src/python/hdal/py.typed" "$pkg/hdal/" &&
    cc -shared -fPIC -O2 -fvisibility=hidden -fno-strict-aliasing -I"$inc" $flags \
      -I"$root/src/_build" -I"$root/src/tools" "$root"/src/python/*.c \
      $(for f in ls_table.c ls_view.c ls_hardware.c text.c json.c; do echo "$root/src/tools/$f"; done) -o "$pkg/hdal/_hdal$suffix" $libs -Wl,-rpath,"$root/inst/lib" && how=cc
  fi
  if [ -z "$how" ] && [ "$pyver" = 3.12 ] && [ -d "$root/prebuilt/cp312/hdal" ]; then
    echo "-- nothing compiled here: the package built for Python 3.12 on the build machine"
    rm -rf "$pkg" && cp -r "$root/prebuilt/cp312" "$pkg" && how=prebuilt
  fi
  [ -n "$how" ] || { echo "no way to build the package for Python $pyver here"; return 1; }
  # The tests' C consumer of hdal's exchange table (torch-cuda.py uses it when importable).
  if [ "$how" != prebuilt ] && command -v cc >/dev/null; then
    cc -shared -fPIC -O2 -fno-strict-aliasing -I"$inc" $flags "$root/src/python/tests/exchange_probe.c" \
      -o "$pkg/_exchange_probe$suffix" || echo "(no _exchange_probe: torch-cuda.py skips its checks)"
  fi
  echo "-- built by $how into $pkg"
  ls -l "$pkg"/hdal/_hdal*.so
  ldd "$pkg"/hdal/_hdal*.so | grep -E 'hdal|not found'
  PYTHONPATH=$pkg "$PY" -c 'import hdal, sys; print("import hdal:", hdal.__version__, hdal.__file__); print(hdal.default_context().backends())'
}
export pkg pyver
export -f do_python
step python 90 12 bash -c do_python

# ---- run-real.sh cuda (C suites on the real driver, torch-cuda.py, hdal-ls)
step real 120 40 env top_builddir="$build" HDAL_TEST_PYTHONPATH="$pkg" PYTHON="$PY" sh "$root/src/tests/gpu/run-real.sh" cuda

# ---- python3 -m hdal
step pyls 30 15 env PYTHONPATH="$pkg" "$PY" -m hdal

# ---- jax, torch and cupy through hdal
step interop 180 60 env PYTHONPATH="$pkg" "$PY" "$root/src/tests/gpu/interop-real.py"

echo
echo "======== summary ($(( $(date +%s) - start ))s in all; logs in $logs)"
cat "$summary"
exit $failed
