#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ROCm backend on the system's own HIP runtime (Debian's libamdhip64-5,
# build-aux/debian-deps) on a machine without an AMD GPU: hipInit fails, and
# the backend says so in its status, lists nothing, prints nothing on stderr,
# and hdal-ls exits 0.  Skipped (77) without the runtime, or with a GPU
# (tests/gpu/run-rocm-tests.sh covers that machine).
set -u
: "${HDAL_LS:?run me from make check}" "${top_builddir:=..}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset HDAL_ROCM_LIBRARY HDAL_DEBUG HWLOC_XMLFILE
probe=$("$top_builddir/tests/test_rocm_probe" 2>&1)
case $? in
  0) echo "SKIP: this machine has an AMD GPU ($probe)"; exit 77 ;;
esac
case $probe in
  *"cannot open shared object"*) echo "SKIP: no HIP runtime installed ($probe)"; exit 77 ;;
esac
echo "system HIP runtime: $probe"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

HDAL_BACKENDS=cpu,rocm HWLOC_SYNTHETIC="pack:1 numa:1 core:2 pu:1" "$HDAL_LS" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
[ $rc -eq 0 ] || fail "hdal-ls exited $rc"
[ ! -s "$tmp/err" ] || fail "hdal-ls wrote on stderr: $(cat "$tmp/err")"
grep -q '^  rocm     unavailable: no ROCm device (hipInit: hipError[A-Za-z]*)$' "$tmp/out" || fail "the rocm status line"
grep -q '^[0-9].* rocm ' "$tmp/out" && fail "a rocm device listed"
# Every backend of the build, as a user runs it: exit 0, nothing on stderr
# but what the other runtimes (PoCL) may say.
"$HDAL_LS" --json >"$tmp/json" 2>"$tmp/err" || fail "hdal-ls --json exited $?"
if [ -n "${JQ:-}" ]; then
  "$JQ" -e '(.backends[] | select(.name == "rocm") | .status | startswith("unavailable: no ROCm device (hipInit: "))
            and ([.devices[] | select(.platform == "rocm")] | length == 0)' "$tmp/json" >/dev/null \
    || fail "hdal-ls --json: $(cat "$tmp/json")"
fi
grep -i -E 'hip|rocm|hsa' "$tmp/err" && fail "the HIP runtime wrote on stderr"
exit $((fails != 0))
