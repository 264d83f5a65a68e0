# SPDX-License-Identifier: BSD-3-Clause
# This backend's configure switch, called by configure.ac for its line in
# backends/registry.
# HDAL_OPENCL: --enable-opencl[=auto]: the OpenCL backend module links the ICD loader only.
AC_DEFUN([HDAL_OPENCL], [
  AC_ARG_ENABLE([opencl],
    [AS_HELP_STRING([--enable-opencl@<:@=auto@:>@], [build the OpenCL backend module (needs the ICD loader and headers)])],
    [], [enable_opencl=auto])
  hdal_opencl_summary=no
  AS_IF([test "x$enable_opencl" != xno], [
    PKG_CHECK_MODULES([OPENCL], [OpenCL], [hdal_have_opencl=yes], [hdal_have_opencl=no])
    AS_IF([test $hdal_have_opencl = yes], [
      hdal_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $OPENCL_CFLAGS"
      AC_CHECK_HEADER([CL/cl.h], [], [hdal_have_opencl=no])
      CPPFLAGS=$hdal_save_CPPFLAGS])
    AS_IF([test $hdal_have_opencl = yes], [hdal_opencl_summary="yes (module hdal_opencl)"],
          [test "x$enable_opencl" = xyes],
          [AC_MSG_ERROR([--enable-opencl: the OpenCL ICD loader or headers are missing (Debian: ocl-icd-opencl-dev)])])
  ])
  AM_CONDITIONAL([HDAL_OPENCL], [test "x$hdal_opencl_summary" != xno])
  AS_VAR_APPEND([hdal_backend_summaries], ["
  OpenCL backend:    $hdal_opencl_summary"])
])
