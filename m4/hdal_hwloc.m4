# HDAL_HWLOC: hwloc >= 2.1 (hwloc_topology_set_components), for the CPU backend and NUMA locality.
AC_DEFUN([HDAL_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.1], [],
    [AC_MSG_ERROR([hwloc >= 2.1 not found (Debian: libhwloc-dev)])])
  HWLOC_VERSION=`$PKG_CONFIG --modversion hwloc`
])
