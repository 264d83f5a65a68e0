# SPDX-License-Identifier: BSD-3-Clause
# HDAL_CHECK: the Check unit-test framework for make check (optional to build, required to test).
AC_DEFUN([HDAL_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.11], [hdal_check_summary=yes],
    [hdal_check_summary="no (make check will fail; Debian: check)"])
  AM_CONDITIONAL([HDAL_HAVE_CHECK], [test "x$hdal_check_summary" = xyes])
  AC_PATH_PROG([JQ], [jq], [])
])
