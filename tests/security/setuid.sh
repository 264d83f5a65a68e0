#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Variables that load code are not trusted in setuid programs (docs/design.md):
# a setuid-root copy of test_setuid_probe (tests/security/setuid_probe.c), run
# as an unprivileged user through setpriv, with HDAL_BACKEND_PATH,
# HDAL_BACKENDS, HDAL_DEBUG and HDAL_CUDA_LIBRARY naming the user's module
# (tests/modules/marker.c, whose constructor writes a marker file).  The same copy without the setuid bit, run
# the same way, loads it: the test can see a load.  Skips (77) when not root,
# without setpriv, where the file system ignores the setuid bit (nosuid), or
# where an unprivileged user cannot read the build tree.
set -u
probe=${top_builddir:-..}/tests/test_setuid_probe
marker_so=${HDAL_TEST_MODULES:-.libs}/mod_marker.so
[ "$(id -u)" = 0 ] || { echo "SKIP: making a setuid-root program needs root"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: no setpriv"; exit 77; }
[ -x "$probe" ] && [ -r "$marker_so" ] || { echo "FAIL: $probe or $marker_so missing"; exit 1; }
nobody=65534
work=$(mktemp -d "${TMPDIR:-/tmp}/hdal-setuid.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/bin" "$work/user" "$work/out"
cp "$probe" "$work/bin/probe-setuid"
cp "$probe" "$work/bin/probe-plain"
chown 0:0 "$work/bin/probe-setuid" && chmod 4755 "$work/bin/probe-setuid"
chmod 755 "$work/bin/probe-plain"
cp "$marker_so" "$work/user/hdal_marker.so"
chown -R "$nobody" "$work/user" "$work/out"

# As the unprivileged user, with only the variables given.
as_user() {
  setpriv --reuid=$nobody --regid=$nobody --clear-groups \
    env -i PATH=/usr/bin:/bin HWLOC_SYNTHETIC="pack:1 numa:1 core:1 pu:1" \
    HDAL_TEST_MARKER="$work/out/marker" "$@"
}
fail=0
check() { # what, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}

# The probes find libhdal and the modules in the build tree: an unprivileged
# user must be able to read it (a package build in a private directory cannot).
lib=$(cd "${top_builddir:-..}/lib/.libs" 2>/dev/null && pwd)
if [ -z "$lib" ] || ! as_user test -r "$lib/libhdal.so.0"; then
  echo "SKIP: the build tree ($lib) is not readable by an unprivileged user"
  exit 77
fi
euid=$(as_user "$work/bin/probe-setuid" euid)
if [ "$euid" != "euid=0" ]; then
  echo "SKIP: the setuid bit has no effect under $work ($euid): nosuid file system?"
  exit 77
fi

for kind in plain setuid; do
  rm -f "$work/out/marker"
  as_user HDAL_BACKEND_PATH="$work/user" HDAL_BACKENDS=cpu,marker HDAL_DEBUG=1 \
    "$work/bin/probe-$kind" env >"$work/out/$kind.env" 2>"$work/out/$kind.env.err"
  echo "-- probe-$kind env:"; cat "$work/out/$kind.env" "$work/out/$kind.env.err"
  [ -f "$work/out/marker" ] && echo "marker: $(cat "$work/out/marker")"
  if [ $kind = plain ]; then
    check "the plain program loads the user's module" '[ -f "$work/out/marker" ]'
    check "the plain program takes HDAL_BACKENDS" 'grep -qx "marker: ok: 0 devices" "$work/out/$kind.env" && grep -qx "opencl: disabled" "$work/out/$kind.env"'
    check "the plain program takes HDAL_DEBUG" 'grep -q "^hdal: " "$work/out/$kind.env.err"'
  else
    check "the setuid program does not load the user's module" '[ ! -f "$work/out/marker" ]'
    check "the setuid program ignores HDAL_BACKENDS and HDAL_BACKEND_PATH" '! grep -q "^marker:" "$work/out/$kind.env" && ! grep -q ": disabled$" "$work/out/$kind.env"'
    check "the setuid program ignores HDAL_DEBUG" '! grep -q "^hdal: " "$work/out/$kind.env.err"'
  fi
  rm -f "$work/out/marker"
  as_user HDAL_CUDA_LIBRARY="$work/user/hdal_marker.so" \
    "$work/bin/probe-$kind" cuda >"$work/out/$kind.cuda" 2>&1
  echo "-- probe-$kind cuda:"; cat "$work/out/$kind.cuda"
  if [ $kind = plain ]; then
    check "the plain program opens HDAL_CUDA_LIBRARY" '[ -f "$work/out/marker" ] && grep -q "^cuda: unavailable: .*hdal_marker.so" "$work/out/$kind.cuda"'
  else
    check "the setuid program does not open HDAL_CUDA_LIBRARY" '[ ! -f "$work/out/marker" ] && grep -q "^cuda: " "$work/out/$kind.cuda" && ! grep -q "hdal_marker" "$work/out/$kind.cuda"'
  fi
done
exit $fail
