#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A backend is one folder and one line of backends/registry (docs/new-backend.md).
# In a copy of this checkout (what git tracks and does not ignore, as it stands
# now), makes the template backend "acme" from the document's code blocks, adds
# its registry line, builds, and checks that hdal-ls (table, --json, the
# completion), the backend selection, the device selector, DLPack routing and
# the tests that read the registry know it, with a fake Acme runtime
# (tests/fakes/acme/), and that nothing else in the copy changed (git status).
set -u
: "${top_srcdir:?run me from make check}"
src=$(cd "$top_srcdir" && pwd)
CC=${CC:-cc}
# The copy is a build of its own: none of make check's settings (its TESTS=) reach its makes.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
for tool in git autoreconf make jq bash; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done
src=$(cd "$src" && pwd -P)
[ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ] ||
  { echo "SKIP: $src is not a git checkout (a release tarball): the copy is checked against git"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap '[ -n "${HDAL_TEST_KEEP:-}" ] || { chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; }' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
die() { echo "ERROR: $*"; exit 99; }

# The copy, committed as it is, so that git status there shows what the new backend changed.
copy=$tmp/tree
mkdir "$copy" || exit 99
(cd "$src" && git ls-files -z -co --exclude-standard | tar --null -cf - -T - --ignore-failed-read 2>/dev/null) |
  tar -C "$copy" -xf - || die "copying the tree"
cd "$copy" || exit 99
git init -q && git add -A && git -c user.name=hdal -c user.email=hdal@invalid commit -qm base ||
  die "git in the copy"

# The template: the document's blocks named backends/acme/..., and its registry line.
mkdir backends/acme || exit 99
awk -v top="$copy" '
  /^```[a-z0-9]+ backends\// { file = top "/" $2; append = ($2 == "backends/registry"); next }
  /^```/ && file { close(file); file = ""; next }
  file && append { print >> file; next }
  file { print > file }' "$src/docs/new-backend.md" || die "reading docs/new-backend.md"
for f in acme.c Makefile.am configure.m4; do
  [ -s "backends/acme/$f" ] && ok || fail "docs/new-backend.md has no block for backends/acme/$f"
done
expect_status() {
  got=$(git status --porcelain | LC_ALL=C sort)
  [ "$got" = " M backends/registry
?? backends/acme/" ] && ok || fail "$1: more than the folder and the registry line changed: $got"
}
expect_status "the template"
[ "$(git diff --numstat backends/registry)" = "1	0	backends/registry" ] && ok ||
  fail "the registry: not one line added: $(git diff backends/registry)"

# Built as a user builds: the tree's own configure, the library, the module and the tools.
log=$tmp/build.log
{ autoreconf -fi && mkdir _build && cd _build && ../configure --disable-python && make -j2; } >"$log" 2>&1 ||
  { tail -40 "$log"; die "building the copy"; }
cd "$copy" || exit 99
expect_status "after the build"
"$CC" -shared -fPIC -o "$tmp/libacme.so.1" "$src/tests/fakes/acme/fakeacme.c" || die "building the fake Acme runtime"

build=$copy/_build
ls=$build/tools/hdal-ls
HDAL_BACKEND_PATH=$build/backends/acme/.libs HDAL_ACME_LIBRARY=$tmp/libacme.so.1
export HDAL_BACKEND_PATH HDAL_ACME_LIBRARY
unset HDAL_BACKENDS HDAL_DEVICE_SELECTOR
names=$(build-aux/registry names)
[ "${names##* }" = acme ] && ok || fail "build-aux/registry names: $names"

# hdal-ls: the table lists the devices and the backend last, as the registry orders it.
out=$("$ls") || fail "hdal-ls: exit $?"
printf '%s\n' "$out" | grep -q '^[0-9]*  *0  *acme  *Acme A1 #1  *pjrt  *yes .* kDLExtDev:1$' && ok ||
  fail "hdal-ls: no row for Acme device 1: $out"
[ "$(printf '%s\n' "$out" | sed -n '/^Backends:$/,$p' | sed -n 's/^  \([a-z0-9_]*\) .*/\1/p' | tr '\n' ' ')" = "$names " ] &&
  ok || fail "hdal-ls: backends not in the registry's order: $out"
printf '%s\n' "$out" | grep -q '^  acme  *ok: 2 devices$' && ok || fail "hdal-ls: acme's status: $out"
# --json.
"$ls" --json >"$tmp/json" || fail "hdal-ls --json: exit $?"
jq -e --arg names "$names" '
  [.backends[].name] == ($names | split(" ")) and
  .backends[-1] == {"name":"acme","state":"ok","device_count":2,"reason":null,"status":"ok: 2 devices"} and
  ([.devices[] | select(.platform == "acme") | [.kind, .local_hardware_id, .runtime_class, .dlpack_device.device_type_name]] ==
   [["Acme A1 #0", 0, "pjrt", "kDLExtDev"], ["Acme A1 #1", 1, "pjrt", "kDLExtDev"]])' "$tmp/json" >/dev/null && ok ||
  fail "hdal-ls --json: $(cat "$tmp/json")"
# The completion, made from the registry.
got=$(bash -c '. "$1/tools/completion/hdal-ls"
  c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hdal_ls; printf "%s|" "${COMPREPLY[@]}"; echo; }
  c hdal-ls -b ac; c hdal-ls -p cpu,a; c hdal-ls -b cpu,-a' sh "$build")
[ "$got" = "acme|
cpu,acme|
cpu,-acme|" ] && ok || fail "completion: $got"

# The backend selection and the device selector.
out=$(HDAL_BACKENDS=-acme "$ls") && printf '%s\n' "$out" | grep -q '^  acme  *disabled$' && ok ||
  fail "HDAL_BACKENDS=-acme: $out"
"$ls" -b Acme >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && [ "$(head -1 "$tmp/err")" = "hdal-ls: hdal_context_options: backends: unknown backend 'Acme' (did you mean 'acme'?); known: $(echo "$names" | sed 's/ /, /g')" ] &&
  ok || fail "-b Acme: $(cat "$tmp/err")"
out=$(HDAL_DEVICE_SELECTOR='acme:1' "$ls" -p acme) &&
  [ "$(printf '%s\n' "$out" | grep -c 'Acme A1')" -eq 1 ] && printf '%s\n' "$out" | grep -q 'Acme A1 #1' &&
  printf '%s\n' "$out" | grep -q '^  acme  *ok: 1 of 2 devices selected by HDAL_DEVICE_SELECTOR$' && ok ||
  fail "HDAL_DEVICE_SELECTOR=acme:1: $out"

# DLPack routing: kDLExtDev is the template's; bytes through its buffers; an import routed back to it.
"$CC" -I"$copy/include" -I"$build" -o "$tmp/route" "$src/tests/fakes/acme/route.c" -L"$build/lib/.libs" -lhdal \
  -Wl,-rpath,"$build/lib/.libs" || die "building route.c"
out=$("$tmp/route")
[ "$out" = "kDLExtDev:1 -> acme 1 (Acme A1 #1)
bytes: 1 2 3 4
import of kDLExtDev:1 -> acme 1" ] && ok || fail "routing: $out"

# The tests that read the registry, in the copy.
# (Only their programs are built: check_PROGRAMS given, the test modules and fakes as ever.)
registry_tests='test_context test_modules test_selector test_rocm test_levelzero'
(unset HDAL_BACKEND_PATH HDAL_ACME_LIBRARY; cd "$build/tests" &&
  make -j2 check check_PROGRAMS="$registry_tests" \
    TESTS="$registry_tests hardening/badinput.sh opencl/test_opencl_topology.sh") >"$log" 2>&1 && ok ||
  { grep -h -E '^(FAIL|ERROR)|FAIL:|:F:' "$log" "$build"/tests/*.log "$build"/tests/*/*.log 2>/dev/null | head -20
    fail "the copy's tests that read the registry"; }

expect_status "at the end"
echo "new-backend: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
