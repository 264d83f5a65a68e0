#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ROCm backend on the system's own HIP runtime (Debian's libamdhip64-5,
# build-aux/debian-deps) on a machine without an AMD GPU.  Without /dev/kfd (no
# amdgpu driver) the runtime is not even loaded, and the status says so; with
# a /dev/kfd (faked under HDAL_FSROOT, docs/rocm.md) the runtime is loaded,
# hipInit fails, and the backend says so in its status.  Either way it lists
# nothing, prints nothing on stderr, and hdal-ls exits 0.  Skipped (77)
# without the runtime, or with a GPU (tests/gpu/run-rocm-tests.sh covers that
# machine).
set -u
: "${HDAL_LS:?run me from make check}" "${top_builddir:=..}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset HDAL_ROCM_LIBRARY HDAL_DEBUG HWLOC_XMLFILE HDAL_FSROOT
# In a sanitizer build: the runtime's own memory is not hdal's (the file says why).
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=${srcdir:-.}/rocm/lsan-hip.supp:print_suppressions=0"; export LSAN_OPTIONS
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

# ld.so's list of the files it opens (LD_DEBUG=files, on stderr: $tmp/ld).
loads_runtime() { grep -q 'file=libamdhip64\.so' "$tmp/ld"; }

# No amdgpu driver: an empty root, or the machine's own where it has none.
mkdir "$tmp/empty"
for root in "$tmp/empty" ""; do
  [ -n "$root" ] || [ ! -e /dev/kfd ] || continue
  HDAL_FSROOT=$root HDAL_BACKENDS=cpu,rocm HWLOC_SYNTHETIC="pack:1 numa:1 core:2 pu:1" LD_DEBUG=files \
    "$HDAL_LS" >"$tmp/out" 2>"$tmp/ld"
  rc=$?
  [ $rc -eq 0 ] || fail "no /dev/kfd (root '$root'): hdal-ls exited $rc"
  grep -q '^  rocm      unavailable: no AMD GPU driver (/dev/kfd absent)$' "$tmp/out" ||
    fail "no /dev/kfd (root '$root'): the rocm status line: $(grep '^  rocm' "$tmp/out")"
  loads_runtime && fail "no /dev/kfd (root '$root'): the HIP runtime was loaded"
done

# A /dev/kfd (an empty file under HDAL_FSROOT): the system's runtime is
# loaded and its hipInit finds no device, as on a machine with the driver
# but no GPU.
mkdir -p "$tmp/root/dev" && : >"$tmp/root/dev/kfd" || exit 99
HDAL_FSROOT=$tmp/root; export HDAL_FSROOT
HDAL_BACKENDS=cpu,rocm HWLOC_SYNTHETIC="pack:1 numa:1 core:2 pu:1" "$HDAL_LS" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
[ $rc -eq 0 ] || fail "hdal-ls exited $rc"
[ ! -s "$tmp/err" ] || fail "hdal-ls wrote on stderr: $(cat "$tmp/err")"
HDAL_BACKENDS=cpu,rocm HWLOC_SYNTHETIC="pack:1 numa:1 core:2 pu:1" LD_DEBUG=files "$HDAL_LS" >/dev/null 2>"$tmp/ld"
loads_runtime || fail "a /dev/kfd under HDAL_FSROOT: the HIP runtime was not loaded"
grep -q '^  rocm      unavailable: no ROCm device (hipInit: hipError[A-Za-z]*)$' "$tmp/out" || fail "the rocm status line"
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
