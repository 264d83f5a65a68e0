#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Bad input through hdal-ls (issue 7): every case gives a clear message and a
# meaningful exit status (0 with the backend's status saying what went wrong,
# 1 with hdal's error on stderr), never a signal or a core dump.  The one
# exception is a module that crashes in its discovery: it runs in the process
# and takes the process down; what hdal promises then is tested at the end.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# No core file, whatever the machine's settings.
ulimit -c 0

unset HDAL_BACKENDS HWLOC_XMLFILE HWLOC_SYNTHETIC HDAL_DEBUG
HDAL_BACKEND_PATH=/nonexistent/hdal-modules; export HDAL_BACKEND_PATH

# run ARGS...: hdal-ls's stdout, stderr and status in $tmp/out, $tmp/err, $rc.
run() { "$HDAL_LS" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
# expect RC WHAT: the status, and never death by signal.
expect() {
  if [ "$rc" -ge 128 ]; then fail "$2: killed by signal $((rc - 128))"; return; fi
  [ "$rc" -eq "$1" ] || fail "$2: exit $rc, expected $1 (stderr: $(head -c 300 "$tmp/err"))"
}
# status NAME TEXT WHAT: backend NAME's status line in the table is exactly TEXT.
status() {
  got=$(sed -n "s/^  $1 *//p" "$tmp/out")
  [ "$got" = "$2" ] || fail "$3: status of $1 is '$got', expected '$2'"
}
stderr_is() { [ "$(cat "$tmp/err")" = "$1" ] || fail "$2: stderr '$(cat "$tmp/err")', expected '$1'"; }

# ---- hwloc inputs ----
HWLOC_XMLFILE=/nonexistent/topology.xml run -b cpu
expect 0 "unreadable HWLOC_XMLFILE"
status cpu "unavailable: hwloc could not use HWLOC_XMLFILE=/nonexistent/topology.xml (unreadable or malformed)" \
  "unreadable HWLOC_XMLFILE"

mkdir "$tmp/dir.xml"
HWLOC_XMLFILE="$tmp/dir.xml" run -b cpu
expect 0 "HWLOC_XMLFILE is a directory"
status cpu "unavailable: hwloc could not use HWLOC_XMLFILE=$tmp/dir.xml (unreadable or malformed)" "directory"

for bad in '<topology version="2.0">' '<?xml version="1.0"?><root/>' 'not xml at all' ''; do
  printf '%s' "$bad" >"$tmp/bad.xml"
  HWLOC_XMLFILE="$tmp/bad.xml" run -b cpu
  expect 0 "malformed XML '$bad'"
  # hwloc either refuses the file (and hdal names it) or fails to load from it.
  got=$(sed -n "s/^  cpu *//p" "$tmp/out")
  case $got in
  "unavailable: hwloc could not use HWLOC_XMLFILE=$tmp/bad.xml (unreadable or malformed)") ;;
  "unavailable: hwloc could not load the topology (check HWLOC_XMLFILE / HWLOC_SYNTHETIC)") ;;
  *) fail "malformed XML '$bad': status of cpu is '$got'" ;;
  esac
done
# Binary garbage, 64 KiB of it.
head -c 65536 /dev/urandom >"$tmp/bad.xml" 2>/dev/null || dd if=/dev/urandom of="$tmp/bad.xml" bs=1024 count=64 2>/dev/null
HWLOC_XMLFILE="$tmp/bad.xml" run -b cpu
expect 0 "binary HWLOC_XMLFILE"
status cpu "unavailable: hwloc could not use HWLOC_XMLFILE=$tmp/bad.xml (unreadable or malformed)" "binary XML"

HWLOC_SYNTHETIC="numa:0 core:-3 garbage" run -b cpu
expect 0 "malformed HWLOC_SYNTHETIC"
status cpu "unavailable: hwloc could not use HWLOC_SYNTHETIC=numa:0 core:-3 garbage (unreadable or malformed)" \
  "malformed HWLOC_SYNTHETIC"

# The same through --json: still one valid document.
HWLOC_XMLFILE=/nonexistent/topology.xml run --json -b cpu
expect 0 "unreadable HWLOC_XMLFILE, --json"
if [ -n "${JQ:-}" ] && command -v "$JQ" >/dev/null 2>&1; then
  s=$("$JQ" -r '.backends[] | select(.name == "cpu") | .status' "$tmp/out" 2>/dev/null)
  case $s in "unavailable: hwloc could not use HWLOC_XMLFILE="*) ;; *) fail "--json status of cpu: '$s'" ;; esac
fi

# ---- HDAL_BACKENDS ----
msg_chars="expected names separated by commas, each optionally preceded by '-' (e.g. \"cpu,opencl\" or \"-cuda\")"
for bad in 'cpu;rm -rf /' 'cpu,opencl*' "$(printf 'cpu\001')" 'cpu,ö' 'cpu/../x' 'a=b'; do
  HDAL_BACKENDS=$bad run
  expect 1 "HDAL_BACKENDS='$bad'"
  stderr_is "hdal-ls: invalid backend list \"$bad\": $msg_chars (INVALID_ARGUMENT)" "HDAL_BACKENDS='$bad'"
  [ ! -s "$tmp/out" ] || fail "HDAL_BACKENDS='$bad': output on stdout"
done
HDAL_BACKENDS='cpu,-' run
expect 1 "HDAL_BACKENDS='cpu,-'"
stderr_is "hdal-ls: invalid backend list \"cpu,-\": '-' without a name (INVALID_ARGUMENT)" "HDAL_BACKENDS='cpu,-'"

# Well-formed but unknown: a name that is no first-party backend and no module
# on the path is refused, with the known names (docs/reference.md, "Backend
# names"); to keep or to leave out alike; case counts, and a name that differs
# only in case, '-' or '_' gets the right one suggested.
known="known: $("$top_srcdir/build-aux/registry" names "$top_srcdir" | sed 's/ /, /g')" # backends/registry
HDAL_BACKENDS='nosuch' run
expect 1 "unknown backend"
stderr_is "hdal-ls: HDAL_BACKENDS: unknown backend 'nosuch'; $known (INVALID_ARGUMENT)" "unknown backend"
[ ! -s "$tmp/out" ] || fail "unknown backend: output on stdout"
HDAL_BACKENDS='cpu,-openCL' run
expect 1 "a misspelt exclusion"
stderr_is "hdal-ls: HDAL_BACKENDS: unknown backend 'openCL' (did you mean 'opencl'?); $known (INVALID_ARGUMENT)" "a misspelt exclusion"
run -b 'cpu,Level_Zero'
expect 2 "-b with a misspelt name"
stderr_is "hdal-ls: hdal_context_options: backends: unknown backend 'Level_Zero' (did you mean 'levelzero'?); $known
Try 'hdal-ls --help' for more information." "-b with a misspelt name"
# A first-party name is known without its module: the status says where it was looked for
# (the module path replaces the install directory, docs/backend-abi.md).
HDAL_BACKENDS='cpu,levelzero' run
expect 0 "first-party backend without its module"
status levelzero "unavailable: module hdal_levelzero.so not found (searched /nonexistent/hdal-modules)" "first-party backend without its module"
# Commas and blanks are fine.
HDAL_BACKENDS=' , ,cpu,,, ' HWLOC_SYNTHETIC="numa:2 pu:1" run
expect 0 "blanks and empty items"
status cpu "ok: 2 devices" "blanks and empty items"
HDAL_BACKENDS='-cpu,-cuda,-opencl' run
expect 0 "everything excluded"
status cpu "disabled" "everything excluded"

# A very long list of names: the first unknown one is named, no crash.
long=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "%sm%d", i ? "," : "", i }')
HDAL_BACKENDS="cpu,$long" HWLOC_SYNTHETIC="numa:1 pu:1" run
expect 1 "300 unknown backends"
stderr_is "hdal-ls: HDAL_BACKENDS: unknown backend 'm0'; $known (INVALID_ARGUMENT)" "300 unknown backends"
# A name of 64 KiB: shown to 64 characters.
huge=$(head -c 65536 /dev/zero | tr '\0' 'x')
HDAL_BACKENDS="$huge" run
expect 1 "a 64 KiB backend name"
stderr_is "hdal-ls: HDAL_BACKENDS: unknown backend '$(head -c 64 /dev/zero | tr '\0' 'x')...'; $known (INVALID_ARGUMENT)" "a 64 KiB backend name"

# ---- HDAL_BACKEND_PATH ----
mods="$tmp/mods"; mkdir "$mods"
: >"$mods/hdal_empty.so"
echo "not an ELF object" >"$mods/hdal_text.so"
mkdir "$mods/hdal_adir.so"
ln -s hdal_loop.so "$mods/hdal_loop.so"
ln -s "$HDAL_TEST_MODULES/mod_nosym.so" "$mods/hdal_nosym.so"
ln -s "$HDAL_TEST_MODULES/mod_badabi.so" "$mods/hdal_badabi.so"
: >"$mods/hdal_.so"; : >"$mods/hdal_UPPER.so"; : >"$mods/hdal_x.so.1"
HDAL_BACKEND_PATH="$(printf '\001\002'):::/nonexistent::$mods:/etc/passwd:$mods" HWLOC_SYNTHETIC="numa:1 pu:1" run
expect 0 "garbage in HDAL_BACKEND_PATH"
status cpu "ok: 1 device" "garbage in HDAL_BACKEND_PATH"
status adir "unavailable: $mods/hdal_adir.so: not a regular file" "module that is a directory"
for m in empty text loop; do
  grep -q "^  $m *unavailable: .*hdal_$m.so" "$tmp/out" || fail "module $m: $(grep "^  $m " "$tmp/out")"
done
status nosym "unavailable: $mods/hdal_nosym.so: missing symbol hdal_nosym_backend" "module without descriptor"
abi=$(sed -n 's/^#define HDAL_BACKEND_ABI_VERSION \([0-9]*\)u$/\1/p' "${top_srcdir:-$srcdir/..}/include/hdal/backend.h")
status badabi "unavailable: $mods/hdal_badabi.so: module ABI version 42, this hdal needs $abi" "module of another ABI"
# Names that are not module names are not modules.
for m in '' UPPER x; do grep -q "^  $m " "$tmp/out" && fail "hdal_$m.so taken for a module"; done
# A path of 100 KiB of colons (the kernel takes 128 KiB per variable).
big=$(head -c 102400 /dev/zero | tr '\0' ':')
HDAL_BACKEND_PATH="$big/" HWLOC_SYNTHETIC="numa:1 pu:1" run -b cpu
expect 0 "a 100 KiB HDAL_BACKEND_PATH"
status cpu "ok: 1 device" "a 100 KiB HDAL_BACKEND_PATH"

# ---- files that are not regular files, where a library is expected ----
# dlopen would block for ever opening a FIFO: each run has 10 s, a hang fails.
# run_briefly ARGS...: run, killed after 10 s (exit 124).
run_briefly() { timeout 10 "$HDAL_LS" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
expect_brief() {
  if [ "$rc" -eq 124 ]; then fail "$1: hdal-ls still running after 10 s"; else expect 0 "$1"; fi
}
fifos="$tmp/fifos"; mkdir "$fifos"
mkfifo "$fifos/hdal_fifo.so" "$tmp/fifo"
ln -s hdal_fifo.so "$fifos/hdal_linked.so"
HDAL_BACKEND_PATH=$fifos HWLOC_SYNTHETIC="numa:1 pu:1" run_briefly
expect_brief "a FIFO in HDAL_BACKEND_PATH"
status fifo "unavailable: $fifos/hdal_fifo.so: not a regular file" "a FIFO in HDAL_BACKEND_PATH"
status linked "unavailable: $fifos/hdal_linked.so: not a regular file" "a symlink to a FIFO in HDAL_BACKEND_PATH"
status cpu "ok: 1 device" "a FIFO in HDAL_BACKEND_PATH"
modules=$(dirname "$HDAL_LS")/../backends
for lib in "$tmp/fifo" "$fifos/hdal_linked.so" "$tmp/dir.xml" /dev/null; do
  HDAL_CUDA_LIBRARY=$lib HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH=$modules/cuda/.libs run_briefly -b cpu,cuda
  expect_brief "HDAL_CUDA_LIBRARY=$lib"
  status cuda "unavailable: $lib: not a regular file" "HDAL_CUDA_LIBRARY=$lib"
  [ -f "$modules/rocm/.libs/hdal_rocm.so" ] || continue
  HDAL_ROCM_LIBRARY=$lib HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH=$modules/rocm/.libs run_briefly -b cpu,rocm
  expect_brief "HDAL_ROCM_LIBRARY=$lib"
  status rocm "unavailable: $lib: not a regular file" "HDAL_ROCM_LIBRARY=$lib"
done

# ---- HDAL_CUDA_LIBRARY that is not a CUDA driver ----
for lib in /nonexistent/libcuda.so.1 /etc/passwd libc.so.6; do
  HDAL_CUDA_LIBRARY=$lib HWLOC_SYNTHETIC="numa:1 pu:1" HDAL_BACKEND_PATH=$(dirname "$HDAL_LS")/../backends/cuda/.libs run -b cpu,cuda
  expect 0 "HDAL_CUDA_LIBRARY=$lib"
  grep -q '^  cuda *unavailable: ' "$tmp/out" || fail "HDAL_CUDA_LIBRARY=$lib: $(grep '^  cuda' "$tmp/out")"
done

# ---- a module that crashes in discovery ----
# It runs in hdal-ls's process: the process dies of the module's signal (no
# hang, no core file here).  hdal promises: HDAL_DEBUG names the module before
# it runs, and excluding it by name gives a working hdal-ls again.
ln -s "$HDAL_TEST_MODULES/mod_crashing.so" "$mods/hdal_crashing.so"
rm -f "$mods/hdal_loop.so"
cd "$tmp" || exit 99
HDAL_BACKEND_PATH=$mods HDAL_DEBUG=1 HWLOC_SYNTHETIC="numa:1 pu:1" run -b cpu,crashing
# Under --enable-sanitizers, ASan catches the SEGV itself, reports it and exits 1.
if grep -q '^==[0-9]*==ERROR: AddressSanitizer: SEGV' "$tmp/err"; then
  [ "$rc" -eq 1 ] || fail "crashing module: exit $rc after ASan's SEGV report, expected 1"
else
  [ "$rc" -eq $((128 + 11)) ] || fail "crashing module: exit $rc, expected death by SIGSEGV (139)"
fi
grep -q "^hdal: crashing: loading $mods/hdal_crashing.so$" "$tmp/err" ||
  fail "crashing module: HDAL_DEBUG does not name it: $(cat "$tmp/err")"
ls "$tmp"/core* >/dev/null 2>&1 && fail "crashing module: a core file was written"
HDAL_BACKEND_PATH=$mods HWLOC_SYNTHETIC="numa:1 pu:1" run -b -crashing
expect 0 "crashing module excluded"
status crashing "disabled" "crashing module excluded"
status cpu "ok: 1 device" "crashing module excluded"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all bad-input cases passed"
