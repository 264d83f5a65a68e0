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
#   python   the hdal package from the bundle's wheel (`make wheel`), as a
#            user installs it: this machine's python3 ($PYTHON) and its pip
#            (`pip install --target`, no index), else the wheel unpacked (a
#            wheel is a zip file) where the interpreter has no pip; then
#            imported, and its libhdal and modules checked to be the wheel's
#   real     tests/gpu/run-real.sh cuda: test_cuda_probe, test_cuda,
#            test_cuda_buffers on the real driver, torch-cuda.py, hdal-ls
#   pyls     python3 -m hdal, the package's device table
#   interop  tests/gpu/interop-real.py: jax, torch and cupy through hdal
#   topo     tests/gpu/topology-real.py: each GPU's locality and every pair's
#            link against `nvidia-smi topo -m`, a thread bound near GPU 0
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
  rm -rf "$pkg"
  mkdir -p "$pkg"
  wheel=$(ls "$root"/wheelhouse/hdal-*.whl 2>/dev/null | head -n1)
  [ -n "$wheel" ] || { echo "the bundle has no wheel ($root/wheelhouse)"; return 1; }
  if "$PY" -m pip --version >/dev/null 2>&1; then
    echo "-- pip install --target $pkg ${wheel##*/}"
    "$PY" -m pip install --no-deps --no-index --no-cache-dir --disable-pip-version-check --target "$pkg" "$wheel" || return 1
  else
    echo "-- no pip for $PY: ${wheel##*/} unpacked into $pkg"
    "$PY" -m zipfile -e "$wheel" "$pkg" || return 1
  fi
  # The tests' C consumer of hdal's exchange table (torch-cuda.py uses it when importable).
  inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  if [ -f "$inc/Python.h" ] && command -v cc >/dev/null; then
    cc -shared -fPIC -O2 -fno-strict-aliasing -I"$inc" -I"$root/inst/include" "$root/src/python/tests/exchange_probe.c" \
      -o "$pkg/_exchange_probe$suffix" || echo "(no _exchange_probe: torch-cuda.py skips its checks)"
  fi
  ls -l "$pkg"/hdal/_hdal*.so "$pkg"/hdal/lib/hdal/backends
  # The wheel's own libhdal and modules, whatever else the machine has.
  PYTHONPATH=$pkg "$PY" - "$pkg" <<'EOF'
import os, sys
import hdal
pkg = os.path.realpath(sys.argv[1])
print("import hdal:", hdal.__version__, hdal.__file__)
print(hdal.default_context().backends())
with open("/proc/self/maps") as f:
    maps = {l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6}
mine = sorted(p for p in maps if "libhdal" in os.path.basename(p) or "/hdal/backends/" in p)
print("\n".join(mine))
assert mine and all(os.path.realpath(p).startswith(pkg + os.sep) for p in mine), "a libhdal or module from outside the wheel"
EOF
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

# ---- the GPUs' locality and links against nvidia-smi topo -m, a thread bound near GPU 0
step topo 60 40 env PYTHONPATH="$pkg" "$PY" "$root/src/tests/gpu/topology-real.py" "$build/tools/hdal-ls"

echo
echo "======== summary ($(( $(date +%s) - start ))s in all; logs in $logs)"
cat "$summary"
exit $failed
