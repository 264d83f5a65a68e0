# SPDX-License-Identifier: BSD-3-Clause
# HDAL_RPM: rpm/hdal.spec, the RPM spec (Fedora, openSUSE), from
# rpm/hdal.spec.in with this release's version.  It is shipped in the tarball,
# so that `rpmbuild -ta hdal-<version>.tar.xz` builds the packages.
#
# A spec declares its subpackages before anything is built, so the spec is
# told which optional parts these sources have: a part is there when its
# sources are in the tree, whatever this machine's configure run chose to
# build (the spec's own %bcond switches then turn a part that is there off).
AC_DEFUN([HDAL_RPM], [
  AS_IF([test -f "$srcdir/python/Makefile.am"], [HDAL_RPM_HAVE_PYTHON=1], [HDAL_RPM_HAVE_PYTHON=0])
  AS_IF([test -f "$srcdir/backends/rocm/Makefile.am"], [HDAL_RPM_HAVE_ROCM=1], [HDAL_RPM_HAVE_ROCM=0])
  AS_IF([test -f "$srcdir/backends/levelzero/Makefile.am"], [HDAL_RPM_HAVE_LEVELZERO=1], [HDAL_RPM_HAVE_LEVELZERO=0])
  AS_IF([test -f "$srcdir/backends/vulkan/Makefile.am"], [HDAL_RPM_HAVE_VULKAN=1], [HDAL_RPM_HAVE_VULKAN=0])
  HDAL_RPM_HAVE_DOC=0
  for hdal_f in "$srcdir"/Doxyfile* "$srcdir"/doc*/Doxyfile* "$srcdir"/doc*/*/Doxyfile*; do
    AS_IF([test -f "$hdal_f"], [HDAL_RPM_HAVE_DOC=1])
  done
  AC_SUBST([HDAL_RPM_HAVE_PYTHON])
  AC_SUBST([HDAL_RPM_HAVE_ROCM])
  AC_SUBST([HDAL_RPM_HAVE_LEVELZERO])
  AC_SUBST([HDAL_RPM_HAVE_VULKAN])
  AC_SUBST([HDAL_RPM_HAVE_DOC])
  AC_CONFIG_FILES([rpm/hdal.spec])
])
