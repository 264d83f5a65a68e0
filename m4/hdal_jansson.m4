# HDAL_JANSSON: jansson writes hdal-ls --json.
AC_DEFUN([HDAL_JANSSON], [
  PKG_CHECK_MODULES([JANSSON], [jansson >= 2.10], [],
    [AC_MSG_ERROR([jansson not found (Debian: libjansson-dev)])])
])
