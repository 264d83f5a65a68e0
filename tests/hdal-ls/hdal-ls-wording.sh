#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --json reads each backend's state, device count and reason as data
# (hdal_context_backend_state), never from the status text: with every status
# reworded (tests/tools/reword_status.c, preloaded), the document is the same
# but for its "status" members, which show the new words.  Backends of every
# state: ok, ok with refused devices (oddities), unavailable (failing; vulkan, whose module is not on the path),
# disabled; and failed (failing, told to break).
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}"
shim="$HDAL_TEST_MODULES/reword_status.so"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset HDAL_BACKENDS HWLOC_XMLFILE HDAL_DEBUG

mkdir "$tmp/mods" || exit 99
for m in oddities failing; do ln -s "$HDAL_TEST_MODULES/mod_$m.so" "$tmp/mods/hdal_$m.so" || exit 99; done
# ls_json NAME [VAR=value...]: the document in $tmp/NAME.
ls_json() {
  out=$1; shift
  env HWLOC_SYNTHETIC="numa:2 core:1 pu:1" HDAL_BACKEND_PATH="$tmp/mods" "$@" "$HDAL_LS" -b cpu,oddities,failing,vulkan \
    --json >"$tmp/$out" 2>"$tmp/err" || fail "hdal-ls --json ($out): exit $? ($(cat "$tmp/err"))"
}
ls_json plain
# A sanitized hdal-ls wants its sanitizer's runtime first; the shim calls nothing.
ls_json reworded LD_PRELOAD="$shim" ASAN_OPTIONS="verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

grep -q '"status": "ok: 5 devices; 4 refused: negative local hardware id -1 (and 3 more)"' "$tmp/plain" ||
  fail "the plain run lacks the oddities' status: $(cat "$tmp/plain")"
n=$(grep -c '"status": "reworded: 7 devices"' "$tmp/reworded")
[ "$n" -eq "$(grep -c '"status": ' "$tmp/plain")" ] || fail "the shim reworded $n statuses: $(cat "$tmp/reworded")"
grep -v '"status": ' "$tmp/plain" >"$tmp/plain.data"
grep -v '"status": ' "$tmp/reworded" >"$tmp/reworded.data"
diff -u "$tmp/plain.data" "$tmp/reworded.data" || fail "hdal-ls --json read the status text"

# A loaded backend whose runtime broke (HDAL_INTERNAL): "failed", its status text unavailable.
ls_json broke HDAL_TEST_FAILING_INTERNAL=1
tr -d '\n ' <"$tmp/broke" | grep -q '"name":"failing","state":"failed","device_count":0,"reason":"failing:theruntimebroke","status":"unavailable:failing:theruntimebroke"' ||
  fail "the failed backend: $(cat "$tmp/broke")"
grep -q '"state": "failed"' "$tmp/plain" && fail "a backend failed in the plain run: $(cat "$tmp/plain")"

[ $fails -eq 0 ] && echo "PASS: hdal-ls --json does not read the status wording" && exit 0
exit 1
