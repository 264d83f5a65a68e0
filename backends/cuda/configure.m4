# SPDX-License-Identifier: BSD-3-Clause
# This backend's configure switch, called by configure.ac for its line in
# backends/registry.
# HDAL_CUDA: --enable-cuda (default yes): the CUDA backend module dlopens the driver at
# run time and needs nothing of CUDA to build.  It must never link the CUDA libraries.
AC_DEFUN([HDAL_CUDA], [
  AC_ARG_ENABLE([cuda],
    [AS_HELP_STRING([--disable-cuda], [do not build the CUDA backend module (it needs no CUDA at build time)])],
    [], [enable_cuda=yes])
  AS_IF([test "x$enable_cuda" != xno], [hdal_cuda_summary="yes (module hdal_cuda, driver loaded at run time)"],
        [hdal_cuda_summary=no])
  AM_CONDITIONAL([HDAL_CUDA], [test "x$enable_cuda" != xno])
  AS_VAR_APPEND([hdal_backend_summaries], ["
  CUDA backend:      $hdal_cuda_summary"])
])
