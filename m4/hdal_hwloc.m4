# SPDX-License-Identifier: BSD-3-Clause
# HDAL_HWLOC: hwloc >= 2.1 (hwloc_topology_set_components), for the CPU backend and NUMA locality.
AC_DEFUN([HDAL_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.1], [],
    [AC_MSG_ERROR([hwloc >= 2.1 not found (Debian: libhwloc-dev)])])
  HWLOC_VERSION=`$PKG_CONFIG --modversion hwloc`
  dnl hwloc's default plugin directory ($libdir/hwloc): test_context looks
  dnl there for the plugins hdal keeps from loading (docs/hwloc.md).
  HDAL_HWLOC_PLUGINS_DIR="`$PKG_CONFIG --variable=libdir hwloc`/hwloc"
  AC_DEFINE_UNQUOTED([HDAL_HWLOC_PLUGINS_DIR], ["$HDAL_HWLOC_PLUGINS_DIR"], [hwloc's default plugin directory])
])
