# SPDX-License-Identifier: BSD-3-Clause
# This backend's configure switch, called by configure.ac for its line in
# backends/registry.
# HDAL_VULKAN: --enable-vulkan (default yes): the Vulkan backend module
# dlopens the Vulkan loader at run time and needs nothing of Vulkan to
# build.  It must never link libvulkan.
AC_DEFUN([HDAL_VULKAN], [
  AC_ARG_ENABLE([vulkan],
    [AS_HELP_STRING([--disable-vulkan], [do not build the Vulkan backend module (it needs nothing of Vulkan at build time)])],
    [], [enable_vulkan=yes])
  AS_IF([test "x$enable_vulkan" != xno], [hdal_vulkan_summary="yes (module hdal_vulkan, Vulkan loader opened at run time)"],
        [hdal_vulkan_summary=no])
  AM_CONDITIONAL([HDAL_VULKAN], [test "x$enable_vulkan" != xno])
  AS_VAR_APPEND([hdal_backend_summaries], ["
  Vulkan backend:    $hdal_vulkan_summary"])
])
