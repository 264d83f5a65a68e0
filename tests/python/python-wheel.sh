#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The wheel, as a Python user gets it (docs/python.md, "The wheel"):
#  - `make wheel` of this build tree: the sdist, the wheel built from it,
#    repaired by auditwheel (pinned, from the package index) and checked by
#    python/wheel-check.py (name and tag, manylinux_2_34 or older, as
#    `auditwheel show` says; libhdal-py.so.0 and every module inside, hwloc and
#    the ICD loader with their licences, no vendor runtime, at most 5 MiB);
#  - installed by pip, with no index, into a venv of the configured
#    interpreter, and used from a folder outside the tree with no hdal
#    variable set: `python -m hdal` lists PoCL's device through the wheel's own
#    ICD loader and module; a numpy round trip is zero-copy; libhdal, hwloc,
#    the ICD loader and every module mapped are the wheel's;
#  - `pip install` of the release's python/ (make wheel's copy of the
#    tarball's files) with no libhdal installed: libhdal built and bundled the
#    same way, from the source tree;
#  - two copies in one process: a libhdal.so.0 staged as `make install` puts
#    it, loaded first (ctypes), and then the wheel's: each lists its devices
#    and loads the modules beside itself (HDAL_DEBUG names every module file).
# Skips (77) where configure did not build the Python package, in a sanitizer
# build, or where the package index cannot be reached for auditwheel, unless
# HDAL_WHEEL_REQUIRED=1 (CI), which makes that a failure; and with HDAL_WHEEL=0
# (.ci/run's steps after the first, which ran it).
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?run me from make check}"
skip() {
  [ "${HDAL_WHEEL_REQUIRED:-0}" = 1 ] && { echo "FAIL (HDAL_WHEEL_REQUIRED=1): $*"; exit 1; }
  echo "SKIP: $*"; exit 77
}
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s)

src=$(cd "$top_srcdir" && pwd) && build=$(cd "$top_builddir" && pwd) || exit 1
[ "${HDAL_WHEEL:-1}" != 0 ] || { echo "SKIP: HDAL_WHEEL=0"; exit 77; }
[ "${HDAL_PYTHON_BUILT:-no}" = yes ] || skip "the Python package was not built (configure --enable-python)"
[ "${HDAL_SANITIZERS:-no}" = no ] || skip "a sanitizer build: the wheel is built without sanitizers"
py=${PYTHON:-/usr/bin/python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/python-wheel.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
. "$src/tests/python/hdal-stage.sh"
python_alone
unset HDAL_PYTHON_LIBHDAL HDAL_PYTHON_LIMITED_API

# ---- make wheel
MAKEFLAGS='' MFLAGS='' MAKELEVEL='' make -C "$build" wheel >"$tmp/wheel.log" 2>&1 || {
  grep -q 'cannot install the pinned tools from the package index' "$tmp/wheel.log" &&
    { tail -n 5 "$tmp/wheel.log"; skip "auditwheel cannot be installed from the package index"; }
  grep -q 'gives symbols newer than' "$tmp/wheel.log" &&
    { tail -n 3 "$tmp/wheel.log"; skip "this machine's glibc cannot make a manylinux_2_34 wheel (Debian 12 makes it)"; }
  tail -n 40 "$tmp/wheel.log"; fail "make wheel failed"
}
sed -n '/^wheel: hdal-/,$p' "$tmp/wheel.log"
wheel=$(ls "$build"/wheelhouse/hdal-*.whl) || fail "make wheel wrote no wheel into $build/wheelhouse"
echo "ok: make wheel: ${wheel##*/}"

# ---- installed by pip, used from outside the tree
"$py" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; fail "$py -m venv failed"; }
vpy=$tmp/venv/bin/python
"$vpy" -c 'import numpy' 2>/dev/null || skip "no numpy for $py (Debian: python3-numpy)"
"$vpy" -m pip install -q --no-index --no-deps "$wheel" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install ${wheel##*/} failed"; }
mkdir "$tmp/elsewhere" && cd "$tmp/elsewhere" || exit 1
# The suite's PoCL (tests/icd: PoCL alone, two CPU devices) through the wheel's ICD loader.
user() { env -u HDAL_BACKEND_PATH -u HDAL_BACKENDS -u LD_LIBRARY_PATH -u HDAL_TEST_MODULES "$@"; }
user "$vpy" -m hdal >"$tmp/ls.out" 2>&1 || { cat "$tmp/ls.out"; fail "python -m hdal failed"; }
cat "$tmp/ls.out"
grep -Eq '^[0-9]+ +0 +opencl +.* pjrt ' "$tmp/ls.out" || fail "python -m hdal lists no OpenCL device through the wheel"
grep -Eq '^  opencl +ok: ' "$tmp/ls.out" || fail "the wheel's opencl backend is not ok"
user HDAL_DEBUG=1 "$vpy" - "$tmp/venv" 2>"$tmp/debug.err" <<'EOF' || { cat "$tmp/debug.err"; fail "the wheel, used from a venv"; }
import os, sys
import numpy as np
import hdal
venv = os.path.realpath(sys.argv[1])
a = np.arange(12, dtype=np.float32).reshape(3, 4)
b = hdal.from_dlpack(a)
c = np.from_dlpack(b)
assert b.is_view and c.ctypes.data == a.ctypes.data, "not zero-copy: %x %x" % (c.ctypes.data, a.ctypes.data)
a[1, 2] = 42.0  # numpy 1.24 gives DLPack imports read-only: written through the source
assert c[1, 2] == 42.0, "a write into the source is not seen through the round trip"
cl = [d for d in hdal.devices() if d.platform == "opencl"]
assert cl, "no OpenCL device"
back = np.from_dlpack(hdal.from_dlpack(a, device=cl[0]).to_device(hdal.devices()[0]))
assert (back == a).all() and back.ctypes.data != a.ctypes.data, "the round trip through PoCL"
with open("/proc/self/maps") as f:
    maps = sorted({l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6})
inside = lambda p: os.path.realpath(p).startswith(venv + os.sep)
ours = [p for p in maps if any(k in os.path.basename(p) for k in ("libhdal", "hdal_"))]
outside = [p for p in ours if not inside(p)]
assert not outside, "hdal mapped from outside the wheel: %s" % outside
assert any("libhdal-py.so.0" in p for p in ours), ours
# hwloc and the ICD loader: the wheel's copies (PoCL, a driver of the system,
# brings the system's hwloc along for itself: that one is PoCL's).
for lib in ("libhwloc-", "libOpenCL-"):
    mine = [p for p in maps if os.path.basename(p).startswith(lib) and inside(p)]
    assert mine, "the wheel's %s* is not mapped: %s" % (lib, maps)
    ours += mine
assert not [p for p in maps if os.path.basename(p).startswith("libOpenCL.so")], "the system's ICD loader is mapped"
print("ok: zero-copy round trip (%x), PoCL round trip, mapped from the wheel: %s" %
      (a.ctypes.data, " ".join(os.path.basename(p) for p in ours)))
EOF
grep '^hdal: .*loading ' "$tmp/debug.err" | sed 's/^/  /'
n=$(grep -c "^hdal: [a-z]*: loading $tmp/venv/lib/python[0-9.]*/site-packages/hdal/lib/hdal/backends/hdal_[a-z]*\.so$" "$tmp/debug.err")
[ "$n" -ge 5 ] || fail "the wheel's modules were not loaded from its hdal/lib/hdal/backends (HDAL_DEBUG)"
echo "ok: $n modules loaded from the wheel's hdal/lib/hdal/backends"

# ---- the package's own suite against the wheel: its extension is the
# limited-API (abi3) build, the autotools build's the full API; with the
# suite's modules and test modules (HDAL_BACKEND_PATH wins over the wheel's)
# and python/'s test-only extension, built as python/Makefile.am builds it.
printf 'python-wheel-deps: $(check_LTLIBRARIES)\n' |
  MAKEFLAGS='' MFLAGS='' MAKELEVEL='' make -C "$build/python" -f Makefile -f - python-wheel-deps >"$tmp/deps.log" 2>&1 ||
  { cat "$tmp/deps.log"; fail "cannot build python/'s test-only extensions"; }
if "$vpy" -c 'import pytest' 2>/dev/null; then
  ext=$(cd "$src/python/tests" && "$vpy" -c 'import hdal._hdal as m; print(m.__file__)') || fail "import hdal in python/tests"
  case $ext in "$tmp"/venv/*/hdal/_hdal.abi3.so) ;; *) fail "python/tests imports $ext, not the wheel's extension" ;; esac
  (cd "$src/python/tests" && HDAL_EXCHANGE_PROBE=$build/python/.libs "$vpy" -m pytest -p no:cacheprovider -q -rs . \
    >"$tmp/pytest.log" 2>&1) || { cat "$tmp/pytest.log"; fail "the package's suite failed against the wheel"; }
  echo "ok: the package's suite against the wheel's abi3 extension: $(tail -n 1 "$tmp/pytest.log")"
else
  echo "note: no pytest (Debian: python3-pytest): the package's suite is not run against the wheel"
fi

# ---- pip install of the release's python/, no libhdal installed
rel=$build/python/wheel-build/src
[ -f "$rel/python/setup.py" ] || fail "make wheel left no copy of the release's files in $rel"
cp -R "$rel" "$tmp/rel" || fail "cannot copy $rel"
"$py" -m venv --system-site-packages "$tmp/venv2" >/dev/null 2>&1 || fail "$py -m venv failed"
"$tmp/venv2/bin/pip" install -v --no-build-isolation --no-index --no-deps "$tmp/rel/python" >"$tmp/pip2.log" 2>&1 ||
  { tail -n 40 "$tmp/pip2.log"; fail "pip install of the release's python/ failed"; }
grep '^ *hdal: bundled' "$tmp/pip2.log" || { tail -n 30 "$tmp/pip2.log"; fail "pip install of python/ bundled no libhdal"; }
user "$tmp/venv2/bin/python" -c 'import hdal, os; print("ok: pip install python/: hdal", hdal.__version__, [d.platform for d in hdal.devices()]); assert os.path.exists(os.path.join(os.path.dirname(hdal.__file__), "lib", "libhdal-py.so.0"))' ||
  fail "the package pip built from python/ does not work"
# ---- two copies in one process: a system libhdal.so.0, then the wheel's
stage_libhdal "$tmp/root" "$tmp/install.log"
for m in "$build"/backends/*/.libs/hdal_*.so; do
  [ -f "$m" ] && mkdir -p "$libdir/hdal/backends" && cp "$m" "$libdir/hdal/backends/"
done
user HDAL_DEBUG=1 "$vpy" - "$libdir" "$tmp/venv" 2>"$tmp/two.err" <<'EOF' || { cat "$tmp/two.err"; fail "two copies of libhdal in one process"; }
import ctypes, os, sys
libdir, venv = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
system = ctypes.CDLL(os.path.join(libdir, "libhdal.so.0"))  # as another library would load it: first
system.hdal_context_create.restype = ctypes.c_void_p
for f in ("hdal_context_backend_name", "hdal_context_backend_status"):
    getattr(system, f).restype = ctypes.c_char_p
    getattr(system, f).argtypes = [ctypes.c_void_p, ctypes.c_size_t]
system.hdal_context_backend_count.argtypes = system.hdal_context_device_count.argtypes = [ctypes.c_void_p]
system.hdal_context_backend_count.restype = system.hdal_context_device_count.restype = ctypes.c_size_t
ctx = ctypes.c_void_p()
assert system.hdal_context_create(None, ctypes.byref(ctx)) is None, "the system copy's hdal_context_create failed"
status = {system.hdal_context_backend_name(ctx, i).decode(): system.hdal_context_backend_status(ctx, i).decode()
          for i in range(system.hdal_context_backend_count(ctx))}
import hdal  # the wheel's, after it
theirs = dict(hdal.default_context().backends())
assert status["opencl"].startswith("ok") and theirs["opencl"].startswith("ok"), (status, theirs)
with open("/proc/self/maps") as f:
    libs = sorted({os.path.realpath(l.split(None, 5)[5].strip()) for l in f
                   if len(l.split(None, 5)) == 6 and "libhdal" in l})
assert any(p.startswith(libdir + os.sep) for p in libs) and any(p.startswith(venv + os.sep) for p in libs), libs
print("ok: two copies, %d devices in the system's, %d in the wheel's: %s" %
      (system.hdal_context_device_count(ctx), len(hdal.devices()), " ".join(libs)))
EOF
grep '^hdal: .*loading ' "$tmp/two.err" | sed 's/^/  /'
grep -q "^hdal: opencl: loading $libdir/hdal/backends/hdal_opencl.so$" "$tmp/two.err" ||
  fail "the system copy did not load the module beside itself"
grep -q "^hdal: opencl: loading $tmp/venv/lib/python[0-9.]*/site-packages/hdal/lib/hdal/backends/hdal_opencl.so$" "$tmp/two.err" ||
  fail "the wheel's copy did not load the module beside itself"
[ "$(grep -c '^hdal: opencl: loading ' "$tmp/two.err")" = 2 ] || fail "a copy loaded another's module"
echo "ok: each copy loaded the modules beside itself"

echo "done in $(($(date +%s) - start)) s"
