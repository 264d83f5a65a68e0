#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Python package installed with pip against an installed libhdal, as a
# distribution's python3-hdal links the system's (HDAL_PYTHON_LIBHDAL=system;
# docs/python.md, "Installing with pip"; the bundled libhdal of the wheel is
# tests/python/python-wheel.sh's), offline:
#  - this build tree's libhdal, headers and hdal.pc, installed by `make install`
#    staged under DESTDIR in a temporary directory; its hdal.pc names the
#    configured prefix, which pkg-config's PKG_CONFIG_SYSROOT_DIR (made for
#    staged trees) maps into the stage;
#  - a venv of the configured interpreter (--system-site-packages: Debian's
#    setuptools, wheel, pytest and numpy), and `pip install --no-build-isolation
#    --no-index` of python/ into it; pip builds in the tree it is given, so it
#    gets a copy of python/ (with VERSION and LICENSE beside it, as in the
#    source tree), never the source tree itself (read-only under distcheck);
#  - the venv's hdal imported from the venv, its extension linked to the staged
#    libhdal through its run path, exporting PyInit__hdal alone, and the
#    package's pytest suite (python/tests) run against it with the build
#    tree's backend modules;
#  - without hdal.pc, pip install fails and says so, naming hdal.pc;
#  - with python3-build, the sdist: what it holds, and a pip install from it.
# python/setup.py builds every python/*.c; python/Makefile.am lists them: the
# two lists must agree.
# Skips (77) where configure did not build the package, in a sanitizer build,
# or without the venv module, pip, setuptools, wheel, pytest or numpy.
set -u
: "${top_srcdir:?run me from make check}" "${top_builddir:?run me from make check}"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s) status=0

src=$(cd "$top_srcdir" && pwd) && build=$(cd "$top_builddir" && pwd) || exit 1

# python/*.c against _hdal_la_SOURCES (continuation lines joined).
am_sources=$(sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$src/python/Makefile.am" | sed -n 's/^_hdal_la_SOURCES *= *//p')
[ -n "$am_sources" ] || fail "no _hdal_la_SOURCES in python/Makefile.am"
for f in "$src"/python/*.c; do
  n=${f##*/}
  case " $am_sources " in *" $n "*) ;; *) fail "python/$n: built by pip (setup.py takes python/*.c), not by python/Makefile.am (_hdal_la_SOURCES)" ;; esac
done
for n in $am_sources; do
  case $n in *.c) [ -f "$src/python/$n" ] || fail "python/Makefile.am builds $n, which is not in python/" ;; esac
done
echo "ok: python/*.c and _hdal_la_SOURCES agree: $(cd "$src/python" && echo *.c)"

[ "${HDAL_PYTHON_BUILT:-no}" = yes ] || skip "the Python package was not built (configure --enable-python)"
[ "${HDAL_SANITIZERS:-no}" = no ] || skip "a sanitizer build: its libhdal does not load into an interpreter started without ASan"
py=${PYTHON:-/usr/bin/python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/python-venv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

. "$src/tests/python/hdal-stage.sh"
python_alone
unset PKG_CONFIG_SYSROOT_DIR
HDAL_PYTHON_LIBHDAL=system
export HDAL_PYTHON_LIBHDAL

"$py" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
  { cat "$tmp/venv.log"; skip "$py -m venv failed (Debian: python3-venv)"; }
vpy=$tmp/venv/bin/python
for m in pip:python3-pip setuptools:python3-setuptools wheel:python3-wheel pytest:python3-pytest numpy:python3-numpy; do
  "$vpy" -c "import ${m%%:*}" 2>/dev/null || skip "no ${m%%:*} in the venv (Debian: ${m#*:})"
done
pip_install() {
  "$tmp/venv/bin/pip" install -v --no-build-isolation --no-index --no-cache-dir --no-deps "$@"
}

# The package's sources as a user has them: python/ with VERSION and LICENSE beside it.
mkdir "$tmp/empty" || exit 1
stage_python_sources "$tmp/src"

# Without hdal.pc (and nothing of the machine's own pkg-config directories).
PKG_CONFIG_PATH=$tmp/empty PKG_CONFIG_LIBDIR='' pip_install "$tmp/src/python" >"$tmp/nopc.log" 2>&1 &&
  { cat "$tmp/nopc.log"; fail "pip install succeeded without hdal.pc"; }
grep 'error: .*hdal\.pc' "$tmp/nopc.log" || { cat "$tmp/nopc.log"; fail "pip install without hdal.pc does not name hdal.pc"; }
ls -d "$tmp"/venv/lib/python*/site-packages/hdal 2>/dev/null && fail "a failed pip install left hdal in the venv"
echo "ok: without hdal.pc, pip install fails and names it"

# libhdal, its headers and hdal.pc staged as `make install` puts them
# (tests/python/hdal-stage.sh): what pip builds against.
stage_libhdal "$tmp/root" "$tmp/install.log"
echo "ok: libhdal staged; pkg-config hdal: $(pkg-config --cflags --libs hdal)"

pip_install "$tmp/src/python" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install python/ failed"; }
tail -n 2 "$tmp/pip.log"
grep ': warning:' "$tmp/pip.log"

# Imported from the venv, linked to the staged libhdal by the run path alone.
check_import() { # $1: what was installed
  env -u LD_LIBRARY_PATH "$vpy" - "$tmp" "$tmp/root" <<'EOF' || fail "$1: the venv's hdal is not the one installed, or not linked to the staged libhdal"
import os, sys
venv, root = (os.path.realpath(os.path.join(sys.argv[1], "venv")), os.path.realpath(sys.argv[2]))
import hdal, hdal._hdal
under = lambda p, d: os.path.realpath(p).startswith(d + os.sep)
for m in (hdal, hdal._hdal):
    assert under(m.__file__, venv), "%s is %s, not in the venv" % (m.__name__, m.__file__)
with open("/proc/self/maps") as f:
    libs = {p[5].strip() for p in (l.split(None, 5) for l in f)
            if len(p) == 6 and os.path.basename(p[5].strip()).startswith("libhdal.so")}
assert libs and all(under(p, root) for p in libs), "libhdal loaded: %s" % sorted(libs)
print("ok: %s %s from %s, with %s" % (hdal.__name__, hdal.__version__, hdal._hdal.__file__, " ".join(sorted(libs))))
EOF
}
check_import "pip install python/"
so=$(ls "$tmp"/venv/lib/python*/site-packages/hdal/_hdal*.so)
if command -v nm >/dev/null 2>&1; then
  exported=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }')
  [ "$exported" = PyInit__hdal ] || fail "the extension exports more than PyInit__hdal: $exported"
  echo "ok: the extension exports PyInit__hdal alone"
fi

# The package's suite, with the staged modules, the suite's test modules
# (tests/.libs) and python/'s test-only extensions: its check_LTLIBRARIES
# (_exchange_probe), built here as python/Makefile.am builds them before its own
# run of the suite (tests/ runs first), and found as it finds them.
printf 'python-venv-deps: $(check_LTLIBRARIES)\n' |
  MAKEFLAGS='' MFLAGS='' MAKELEVEL='' make -C "$build/python" -f Makefile -f - python-venv-deps >"$tmp/deps.log" 2>&1 ||
  { cat "$tmp/deps.log"; fail "cannot build python/'s test-only extensions"; }
(cd "$src/python/tests" &&
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  HDAL_EXCHANGE_PROBE=$build/python/.libs \
  "$vpy" -m pytest -p no:cacheprovider -q -rs .) || { echo "FAIL: the pytest suite failed in the venv"; status=1; }

# The sdist: built from the copy, holding what builds and tests the package, and installing alike.
if "$vpy" -c 'import build' 2>/dev/null; then
  "$vpy" -m build --sdist --no-isolation --outdir "$tmp/dist" "$tmp/src/python" >"$tmp/sdist.log" 2>&1 ||
    { cat "$tmp/sdist.log"; fail "python3 -m build --sdist failed"; }
  sdist=$(ls "$tmp"/dist/hdal-*.tar.gz) || fail "no sdist in $tmp/dist"
  tar tzf "$sdist" | sed 's,^[^/]*/,,' >"$tmp/sdist.list" || fail "tar tzf $sdist"
  for f in setup.py pyproject.toml PKG-INFO VERSION LICENSE pyhdal.h hdal/__init__.py hdal/__init__.pyi \
           hdal/__main__.py hdal/_hdal.pyi hdal/py.typed tools/table-sources.am \
           $(sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$tmp/src/tools/table-sources.am" |
             sed -n 's/^libhdal_ls_table_la_SOURCES *= *//p' | tr ' \t' '\n\n' | sed '/^$/d; s,^,tools/,') $(cd "$tmp/src/python" && for f in *.c tests/*; do [ -f "$f" ] && echo "$f"; done); do
    grep -qx "$f" "$tmp/sdist.list" || fail "the sdist lacks $f"
  done
  echo "ok: ${sdist##*/}: $(wc -l <"$tmp/sdist.list") entries, the sources, header, tests, VERSION and LICENSE"
  pip_install --force-reinstall "$sdist" >"$tmp/pip-sdist.log" 2>&1 || { cat "$tmp/pip-sdist.log"; fail "pip install of the sdist failed"; }
  check_import "pip install ${sdist##*/}"
else
  echo "note: no python3-build (Debian: python3-build): the sdist is not checked"
fi
echo "done in $(($(date +%s) - start)) s"
exit $status
