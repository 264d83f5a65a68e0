# SPDX-License-Identifier: BSD-3-Clause
# HDAL_DOXYGEN: the API reference (man3 pages and HTML) from the public headers
# with doxygen.  --enable-doc=auto (default) builds it when doxygen is found,
# yes fails without doxygen, no leaves it out.  A release tarball carries no
# pre-built reference: a build without doxygen installs no man3 pages
# (docs/packaging.md).
AC_DEFUN([HDAL_DOXYGEN], [
  AC_ARG_ENABLE([doc],
    [AS_HELP_STRING([--enable-doc@<:@=auto@:>@],
      [API reference, man3 pages and HTML, built with doxygen (default: auto, when doxygen is found)])],
    [], [enable_doc=auto])
  AC_ARG_VAR([DOXYGEN], [the doxygen program])
  AS_IF([test "x$enable_doc" != xno], [AC_PATH_PROG([DOXYGEN], [doxygen])])
  AS_CASE([$enable_doc],
    [no], [hdal_doc=no; hdal_doc_summary="no (--disable-doc)"],
    [yes], [AS_IF([test -n "$DOXYGEN"], [hdal_doc=yes],
                  [AC_MSG_ERROR([--enable-doc=yes: doxygen not found (Debian: doxygen)])])],
    [AS_IF([test -n "$DOXYGEN"], [hdal_doc=yes], [hdal_doc=no; hdal_doc_summary="no (doxygen not found)"])])
  AS_IF([test "x$hdal_doc" = xyes], [hdal_doc_summary="yes (`$DOXYGEN --version 2>/dev/null`: man3 pages and HTML)"])
  AM_CONDITIONAL([HDAL_DOC], [test "x$hdal_doc" = xyes])
  AC_CONFIG_FILES([docs/api/Doxyfile])
])
