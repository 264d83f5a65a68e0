# SPDX-License-Identifier: BSD-3-Clause
# HDAL_VISIBILITY: hide every symbol but the public API (-fvisibility=hidden + HDAL_API).
AC_DEFUN([HDAL_VISIBILITY], [
  AC_MSG_CHECKING([whether $CC supports -fvisibility=hidden])
  hdal_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -fvisibility=hidden -Werror"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[__attribute__((visibility("default"))) int f(void);]], [])],
    [AC_MSG_RESULT([yes]); HDAL_VISIBILITY_CFLAGS="-fvisibility=hidden -DHDAL_HAVE_VISIBILITY=1"],
    [AC_MSG_RESULT([no]); HDAL_VISIBILITY_CFLAGS=""])
  CFLAGS=$hdal_save_CFLAGS
  AC_SUBST([HDAL_VISIBILITY_CFLAGS])
  # The one spelling of "not exported" for libhdal, its backends and libhdal-mpi (config.h).
  AH_VERBATIM([HDAL__HIDDEN], [/* Declares a symbol that stays inside its shared object. */
#define HDAL__HIDDEN __attribute__((visibility("hidden")))])
])
