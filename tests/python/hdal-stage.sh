# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/python/python-venv.sh and tests/interop/lab.sh: hdal as pip builds
# it (docs/python.md, "Installing with pip"), from this build tree.
#  stage_python_sources DIR  python/ with VERSION, LICENSE and tools/ (hdal-ls's
#                            table, built into the extension, and its list of
#                            files, table-sources.am) beside it, as in
#                            the source tree, copied to DIR (pip builds in the
#                            tree it is given, never the read-only sources);
#  stage_libhdal ROOT LOG    libhdal, its headers and hdal.pc staged as `make
#                            install DESTDIR=ROOT` puts them (not this make's
#                            jobs or variables; nothing else: the build's other
#                            directories may have been made with variables this
#                            make does not know), the make's output in LOG;
#                            exports PKG_CONFIG_PATH, PKG_CONFIG_LIBDIR and
#                            PKG_CONFIG_SYSROOT_DIR (the staged hdal.pc names
#                            the configured prefix, which the sysroot maps into
#                            the stage) and HDAL_PYTHON_LIBHDAL=system (pip
#                            links that libhdal, not one of its own), and sets
#                            libdir to the staged libdir.
#  python_alone              nothing of the caller's pip configuration, user
#                            site or PYTHONPATH (the build tree's package)
#                            comes into the pip and Python runs that follow.
# The caller defines src, build (absolute) and fail().
stage_python_sources() {
  mkdir -p "$1/tools" && cp -R "$src/python" "$1/" && cp "$src/VERSION" "$src/LICENSE" "$1/" &&
    cp "$src"/tools/*.[ch] "$src"/tools/table-sources.am "$1/tools/" && chmod -R u+w "$1" ||
    fail "cannot copy python/ to $1"
}
stage_libhdal() {
  _stage_root=$1 _stage_log=$2
  _stage() { MAKEFLAGS='' MFLAGS='' MAKELEVEL='' make "$@" DESTDIR="$_stage_root" >>"$_stage_log" 2>&1; }
  _stage -C "$build/lib" install &&
    _stage -C "$build" install-includeHEADERS install-hdalincludeHEADERS install-pkgconfigDATA ||
    { tail -n 30 "$_stage_log"; fail "make install DESTDIR=$_stage_root of lib/, the headers and hdal.pc failed"; }
  pcdir=$(find "$_stage_root" -path '*/pkgconfig/hdal.pc' | sed 's,/hdal\.pc$,,')
  [ -n "$pcdir" ] && [ -f "$pcdir/hdal.pc" ] || fail "make install staged no hdal.pc"
  libdir=${pcdir%/pkgconfig}
  ls "$libdir"/libhdal.so* >/dev/null 2>&1 || fail "no libhdal.so in $libdir, where hdal.pc lives"
  PKG_CONFIG_PATH=$pcdir PKG_CONFIG_LIBDIR='' PKG_CONFIG_SYSROOT_DIR=$_stage_root HDAL_PYTHON_LIBHDAL=system
  export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR HDAL_PYTHON_LIBHDAL
}
python_alone() {
  for _v in $(env | sed -n 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$_v"; done
  PIP_CONFIG_FILE=/dev/null PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1
  export PIP_CONFIG_FILE PYTHONNOUSERSITE PYTHONDONTWRITEBYTECODE
  unset PYTHONPATH PYTHONHOME
}
