#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# <hdal.h> and <hdal/backend.h> with the <dlpack/dlpack.h> of every DLPack
# release hdal supports (include/hdal/dlpack.h): for each release, with the
# stand-in header tests/dlpack/dlpack-headers/standin (written from the specification,
# the release chosen by -DHDAL_STANDIN_DLPACK), compile the
# headers and the consumer tests/dlpack/dlpack-headers/consumer.c, which uses what a
# DLPack 1.3 consumer uses and checks values and layout at compile time; as
# C11 and C17 with -Wall -Wextra -Werror, the headers alone as C99 too, and
# the consumer as C++ where a C++ compiler is found ($CXX, else c++).
# Nothing is linked or run.
set -u
: "${top_srcdir:?run me from make check}"
: "${top_builddir:=.}"
cc=${CC:-cc}
cxx=${CXX:-}
[ -n "$cxx" ] || { command -v c++ >/dev/null 2>&1 && cxx=c++; }
here=$top_srcdir/tests/dlpack/dlpack-headers
inc="-I$top_builddir/include -I$top_srcdir/include"
warn="-Wall -Wextra -Werror"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dlpack-headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; sed 's/^/  /' "$tmp/out"; failed=1; }

printf '#include <hdal.h>\n#include <hdal/backend.h>\nint hdal_headers_only;\n' >"$tmp/headers.c"
for v in 0.6 0.8 1.0 1.1 1.2 1.3; do
  major=${v%%.*}
  minor=${v#*.}
  expect=$((major * 100 + minor))
  std="-I$here/standin -DHDAL_STANDIN_DLPACK=$expect $inc -DEXPECT_HEADER_VERSION=$expect"
  ok=1
  for s in c99 c11 c17; do
    $cc -std=$s $warn $std -c "$tmp/headers.c" -o "$tmp/h.o" >"$tmp/out" 2>&1 ||
      { fail "DLPack $v: <hdal.h> and <hdal/backend.h> as -std=$s"; ok=0; }
  done
  for s in c11 c17; do
    $cc -std=$s $warn $std -c "$here/consumer.c" -o "$tmp/c.o" >"$tmp/out" 2>&1 ||
      { fail "DLPack $v: the consumer as -std=$s"; ok=0; }
  done
  if [ -n "$cxx" ]; then
    $cxx -std=c++11 $warn $std -x c++ -c "$here/consumer.c" -o "$tmp/cxx.o" >"$tmp/out" 2>&1 ||
      { fail "DLPack $v: the consumer as C++11 ($cxx)"; ok=0; }
  fi
  [ $ok = 1 ] && echo "ok: DLPack $v (HDAL_DLPACK_HEADER_VERSION $expect): headers and consumer${cxx:+, C and C++}"
done
# An older header than 0.6 is refused by name, not by a cascade of errors.
if $cc -std=c11 -I"$here/standin" -DHDAL_STANDIN_DLPACK=5 $inc -c "$tmp/headers.c" -o "$tmp/h.o" >"$tmp/out" 2>&1; then
  fail "a DLPack 0.5 header is taken"
elif ! grep -q 'DLPack 0.6 or newer' "$tmp/out"; then
  fail "a DLPack 0.5 header: not the error that names the versions"
else
  echo "ok: a DLPack 0.5 header stops the compilation with hdal's error"
fi
exit $failed
