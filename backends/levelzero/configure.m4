# SPDX-License-Identifier: BSD-3-Clause
# This backend's configure switch, called by configure.ac for its line in
# backends/registry.
# HDAL_LEVELZERO: --enable-levelzero (default yes): the Level Zero backend module
# dlopens the Level Zero loader at run time and needs nothing of Level Zero to
# build.  It must never link libze_loader.
AC_DEFUN([HDAL_LEVELZERO], [
  AC_ARG_ENABLE([levelzero],
    [AS_HELP_STRING([--disable-levelzero], [do not build the Level Zero backend module (it needs nothing of Level Zero at build time)])],
    [], [enable_levelzero=yes])
  AS_IF([test "x$enable_levelzero" != xno], [hdal_levelzero_summary="yes (module hdal_levelzero, Level Zero loader opened at run time)"],
        [hdal_levelzero_summary=no])
  AM_CONDITIONAL([HDAL_LEVELZERO], [test "x$enable_levelzero" != xno])
  AS_VAR_APPEND([hdal_backend_summaries], ["
  Level Zero backend: $hdal_levelzero_summary"])
])
