#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Usage: rpm/check-rpms.sh SPEC RPM...
# Unpacks every built RPM (rpm2cpio | cpio) and checks that each file is where
# docs/packaging.md says, in the subpackage it says:
#  - every subpackage that SPEC declares was built, and nothing else;
#  - each package holds the files it must, and no file outside its own paths
#    (the library in hdal, headers and the unversioned .so in -devel, each
#    module in %{_libdir}/hdal/backends in its own package, the MPI layer under
#    the Open MPI prefix in -openmpi and -openmpi-devel, man pages beside their
#    programs);
#  - no file in two packages; no libtool archive, no static library, no file
#    under /usr/local; no ELF file with an RPATH or RUNPATH;
#  - the pkg-config files point at the directories their package uses.
set -euo pipefail
set -f # the patterns below are matched with case, never against this machine's files
[ $# -ge 2 ] || { echo "usage: $0 SPEC RPM..." >&2; exit 2; }
spec=$1; shift

ev() { rpm --eval "$1"; }
L=$(ev '%{_libdir}') I=$(ev '%{_includedir}') M=$(ev '%{_mandir}') A=$(ev '%{_arch}')
B=$(ev '%{_bindir}') D=$(ev '%{_datadir}')
ML=$L/openmpi/lib MB=$L/openmpi/bin MI=$I/openmpi-$A MM=$M/openmpi-$A

work=$(mktemp -d "${TMPDIR:-/tmp}/hdal-check-rpms.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What each package must hold (need) and may hold (allow), as shell patterns.
# Documentation and licences may go with any package.
common_allow="$D/doc/* $D/licenses/* /usr/lib/.build-id /usr/lib/.build-id/*"
need() {
  case $1 in
  hdal) echo "$L/libhdal.so.0 $L/libhdal.so.0.*" ;;
  hdal-devel) echo "$I/hdal.h $I/hdal/backend.h $I/hdal/dlpack.h $L/libhdal.so $L/pkgconfig/hdal.pc $L/cmake/hdal/hdalConfig.cmake $L/cmake/hdal/hdalConfigVersion.cmake $D/hdal/valgrind/hdal.supp $M/man7/hdal.7*" ;;
  hdal-tools) echo "$B/hdal-ls $M/man1/hdal-ls.1* $D/bash-completion/completions/hdal-ls" ;;
  hdal-backend-*) echo "$L/hdal/backends/hdal_${1#hdal-backend-}.so" ;;
  hdal-openmpi) echo "$ML/libhdal-mpi.so.0 $ML/libhdal-mpi.so.0.* $MB/hdal-ls-mpi_openmpi $MM/man1/hdal-ls-mpi_openmpi.1*" ;;
  hdal-openmpi-devel) echo "$MI/hdal/mpi.h $ML/libhdal-mpi.so $ML/pkgconfig/hdal-mpi.pc" ;;
  python3-hdal) echo "/usr/lib*/python3*/site-packages/hdal/__init__.py /usr/lib*/python3*/site-packages/hdal/_hdal*.so" ;;
  hdal-doc) echo "$D/doc/*/html/index.html" ;;
  *) echo "UNKNOWN-PACKAGE" ;;
  esac
}
allow() {
  case $1 in
  hdal) echo "$L/libhdal.so.0* $L/hdal $L/hdal/backends" ;;
  hdal-devel) echo "$I/hdal.h $I/hdal $I/hdal/* $L/libhdal.so $L/pkgconfig $L/pkgconfig/hdal.pc $M/man3 $M/man3/* $L/cmake $L/cmake/hdal $L/cmake/hdal/* $D/hdal $D/hdal/valgrind $D/hdal/valgrind/* $M/man7 $M/man7/hdal.7*" ;;
  hdal-tools) echo "$B/hdal-ls $M/man1/hdal-ls.1* $D/hdal $D/hdal/* $D/bash-completion $D/bash-completion/completions $D/bash-completion/completions/hdal-ls" ;;
  hdal-openmpi) echo "$ML/libhdal-mpi.so.0* $MB/hdal-ls-mpi_openmpi $MM/man1/hdal-ls-mpi_openmpi.1*" ;;
  hdal-openmpi-devel) echo "$MI/hdal $MI/hdal/mpi.h $ML/libhdal-mpi.so $ML/pkgconfig $ML/pkgconfig/hdal-mpi.pc" ;;
  python3-hdal) echo "/usr/lib*/python3*/site-packages/hdal /usr/lib*/python3*/site-packages/hdal/*" ;;
  *) need "$1" ;;
  esac
}
matches() { # matches FILE PATTERN...: FILE matches one of the patterns
  local f=$1 p; shift
  for p in "$@"; do
    # shellcheck disable=SC2254
    case $f in $p) return 0 ;; esac
  done
  return 1
}

# The packages that SPEC declares with this rpm's defaults, and those built.
rpmspec -q --qf '%{name}\n' "$spec" 2>/dev/null | sort >"$work/declared"
for rpm in "$@"; do rpm -qp --qf '%{name}\n' "$rpm"; done | sort >"$work/built"
if ! cmp -s "$work/declared" "$work/built"; then
  fail "the built packages are not those the spec declares (< declared, > built):"
  diff "$work/declared" "$work/built" | grep '^[<>]' || true
fi

for rpm in "$@"; do
  rpm=$(cd "$(dirname "$rpm")" && pwd)/$(basename "$rpm")
  name=$(rpm -qp --qf '%{name}' "$rpm")
  x=$work/x/$name
  mkdir -p "$x"
  (cd "$x" && rpm2cpio "$rpm" | cpio -idm --quiet --no-absolute-filenames)
  # The package's own file list, directories included, as rpm records it.
  rpm -qlp "$rpm" | grep -v '^(contains no files)$' >"$work/$name.files" || true
  need_p=$(need "$name") allow_p="$(allow "$name") $common_allow"
  [ "$need_p" = UNKNOWN-PACKAGE ] && { fail "$name: a package this check does not know"; continue; }
  for p in $need_p; do
    found=no
    while read -r f; do matches "$f" "$p" && { found=yes; break; }; done <"$work/$name.files"
    [ $found = yes ] || fail "$name: nothing matches $p"
  done
  while read -r f; do
    # shellcheck disable=SC2086
    matches "$f" $allow_p || fail "$name: $f does not belong in this package"
    case $f in
    # <hdal/mpi.h> needs <mpi.h>: it goes with the MPI build, under the MPI's include directory.
    "$I/hdal/mpi.h") fail "$name: $f is not under $MI" ;;
    *.la) fail "$name: libtool archive $f" ;;
    *.a) fail "$name: static library $f" ;;
    /usr/local/*) fail "$name: $f is under /usr/local" ;;
    esac
    p=$x$f
    if [ -f "$p" ] && [ ! -L "$p" ] && [ "$(head -c 4 "$p" | od -An -c | tr -d ' ')" = '177ELF' ] &&
       readelf -d "$p" 2>/dev/null | grep -q -E '\((RPATH|RUNPATH)\)'; then
      fail "$name: $f has a run path: $(readelf -d "$p" | grep -E '\((RPATH|RUNPATH)\)')"
    fi
  done <"$work/$name.files"
  echo "$name: $(grep -c . "$work/$name.files") paths"
done

# No file in two packages (directories may be shared).
for rpm in "$@"; do rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm"; done |
  awk '$1 !~ /^d/ {print $2}' | sort | uniq -d >"$work/dups"
[ -s "$work/dups" ] && fail "files in more than one package: $(tr '\n' ' ' <"$work/dups")"

# The pkg-config files name the directories of their own package.
pcvar() { sed -n "s|^$2=||p" "$1"; }
pc=$work/x/hdal-devel$L/pkgconfig/hdal.pc
if [ -f "$pc" ]; then
  [ "$(pcvar "$pc" libdir)" = "$L" ] || fail "hdal.pc: libdir is $(pcvar "$pc" libdir), not $L"
fi
pc=$work/x/hdal-openmpi-devel$ML/pkgconfig/hdal-mpi.pc
if [ -f "$pc" ]; then
  [ "$(pcvar "$pc" libdir)" = "$ML" ] || fail "hdal-mpi.pc: libdir is $(pcvar "$pc" libdir), not $ML"
  [ "$(pcvar "$pc" includedir)" = "$MI" ] || fail "hdal-mpi.pc: includedir is $(pcvar "$pc" includedir), not $MI"
fi
# The MPI program uses the MPI layer and the serial libhdal.
exe=$work/x/hdal-openmpi$MB/hdal-ls-mpi_openmpi
if [ -f "$exe" ]; then
  for lib in libhdal-mpi.so.0 libhdal.so.0; do
    readelf -d "$exe" | grep -q "(NEEDED).*\[$lib\]" || fail "hdal-ls-mpi_openmpi does not use $lib"
  done
fi

if [ $fails -ne 0 ]; then echo "check-rpms: $fails failures"; exit 1; fi
echo "check-rpms: $(wc -l <"$work/built") packages, every file in its place"
