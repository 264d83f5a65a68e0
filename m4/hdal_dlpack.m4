# SPDX-License-Identifier: BSD-3-Clause
# HDAL_DLPACK: the DLPack header (libdlpack-dev); include/hdal/dlpack.h adds what a 0.x header lacks.
AC_DEFUN([HDAL_DLPACK], [
  AC_CHECK_HEADER([dlpack/dlpack.h], [],
    [AC_MSG_ERROR([dlpack/dlpack.h not found: install the DLPack headers (Debian: libdlpack-dev)])])
])
