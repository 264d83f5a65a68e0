# SPDX-License-Identifier: BSD-3-Clause
# HDAL_WARNINGS: -Wall -Wextra and friends, in HDAL_CFLAGS (not in CFLAGS, which is the user's).
AC_DEFUN([HDAL_WARNINGS], [
  HDAL_CFLAGS="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
  AC_ARG_ENABLE([werror], [AS_HELP_STRING([--enable-werror], [treat warnings as errors])])
  AS_IF([test "x$enable_werror" = xyes], [HDAL_CFLAGS="$HDAL_CFLAGS -Werror"])
  AC_SUBST([HDAL_CFLAGS])
])
