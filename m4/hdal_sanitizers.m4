# SPDX-License-Identifier: BSD-3-Clause
# HDAL_SANITIZERS: --enable-sanitizers builds everything with ASan and UBSan.
AC_DEFUN([HDAL_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
    [], [enable_sanitizers=no])
  AS_IF([test "x$enable_sanitizers" = xyes], [
    SANITIZER_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    CFLAGS="$CFLAGS $SANITIZER_CFLAGS"
    LDFLAGS="$LDFLAGS -fsanitize=address,undefined"
  ])
  AM_CONDITIONAL([HDAL_SANITIZERS], [test "x$enable_sanitizers" = xyes])
])
