# SPDX-License-Identifier: BSD-3-Clause
# HDAL_PYTHON: --enable-python[=auto] builds the Python package hdal, a C
# extension on the CPython C API, for the interpreter in PYTHON.
#
# PYTHON is honoured as AM_PATH_PYTHON honours it.  When it is not given and
# Debian's own interpreter (/usr/bin/python3) exists, that one is used rather
# than the first python3 on PATH: a pyenv or venv interpreter there usually
# lacks the python3-numpy and python3-torch the tests run against.
# auto: on when the interpreter and its headers (Python.h) are found, and off in
# a --enable-sanitizers build (an ASan extension cannot load into an
# interpreter that was not started with the ASan runtime).
AC_DEFUN([HDAL_PYTHON], [
  AC_ARG_ENABLE([python],
    [AS_HELP_STRING([--enable-python@<:@=auto@:>@],
      [build the Python package hdal (needs Python 3 and its headers; Debian: python3-dev)])],
    [], [enable_python=auto])
  AC_ARG_VAR([PYTHON], [the Python 3 interpreter to build the hdal package for (default: /usr/bin/python3 when present, else the first python3 on PATH)])
  hdal_python_summary=no
  hdal_python_built=no
  AS_IF([test "x$enable_python" = xauto && test "x$enable_sanitizers" = xyes], [
    hdal_python_summary="no (--enable-sanitizers)"
    enable_python=no])
  AS_IF([test "x$enable_python" != xno], [
    AS_IF([test -z "$PYTHON" && test -x /usr/bin/python3], [PYTHON=/usr/bin/python3])
    AM_PATH_PYTHON([3.7], [hdal_have_python=yes], [hdal_have_python=no])
    dnl Debian's interpreter reads dist-packages, never site-packages, under
    dnl every prefix (/usr/local/lib/python3.X/dist-packages included):
    dnl install where it will look.  dh_python3 moves /usr's to lib/python3.
    AS_IF([test $hdal_have_python = yes &&
           $PYTHON -c 'import sys; sys.exit(not any(p.endswith("/dist-packages") for p in sys.path))' 2>/dev/null], [
      pythondir=`echo "$pythondir" | sed 's,/site-packages$,/dist-packages,'`
      pyexecdir=`echo "$pyexecdir" | sed 's,/site-packages$,/dist-packages,'`])
    AS_IF([test $hdal_have_python = yes], [
      AC_MSG_CHECKING([for the include directory of $PYTHON])
      hdal_python_inc=`$PYTHON -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null`
      AC_MSG_RESULT([$hdal_python_inc])
      PYTHON_CPPFLAGS="-I$hdal_python_inc"
      hdal_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $PYTHON_CPPFLAGS"
      AC_CHECK_HEADER([Python.h], [], [hdal_have_python=no])
      CPPFLAGS=$hdal_save_CPPFLAGS])
    AS_IF([test $hdal_have_python = yes], [hdal_python_built=yes; hdal_python_summary="yes ($PYTHON, $pyexecdir)"],
          [test "x$enable_python" = xyes],
          [AC_MSG_ERROR([--enable-python: no Python 3 interpreter with its headers (Debian: python3-dev)])],
          [PYTHON=:])
  ])
  AC_SUBST([PYTHON_CPPFLAGS])
  AC_SUBST([hdal_python_built])
  AM_CONDITIONAL([HDAL_PYTHON], [test $hdal_python_built = yes])
])
