# SPDX-License-Identifier: BSD-3-Clause
# This backend's configure switch, called by configure.ac for its line in
# backends/registry.
# HDAL_ROCM: --enable-rocm (default yes): the ROCm backend module dlopens the HIP
# runtime at run time and needs nothing of ROCm to build.  It must never link
# libamdhip64.
AC_DEFUN([HDAL_ROCM], [
  AC_ARG_ENABLE([rocm],
    [AS_HELP_STRING([--disable-rocm], [do not build the ROCm backend module (it needs no ROCm at build time)])],
    [], [enable_rocm=yes])
  AS_IF([test "x$enable_rocm" != xno], [hdal_rocm_summary="yes (module hdal_rocm, HIP runtime loaded at run time)"],
        [hdal_rocm_summary=no])
  AM_CONDITIONAL([HDAL_ROCM], [test "x$enable_rocm" != xno])
  AS_VAR_APPEND([hdal_backend_summaries], ["
  ROCm backend:      $hdal_rocm_summary"])
])
