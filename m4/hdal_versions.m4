# SPDX-License-Identifier: BSD-3-Clause
# HDAL_LIB_VERSIONS: libtool -version-info of each library, from VERSION.
AC_DEFUN([HDAL_LIB_VERSIONS], [
  LIBHDAL_SO_VERSION=`sed -n 's/^libhdal_so_version=//p' $srcdir/VERSION`
  LIBHDAL_MPI_SO_VERSION=`sed -n 's/^libhdal_mpi_so_version=//p' $srcdir/VERSION`
  AC_SUBST([LIBHDAL_SO_VERSION])
  AC_SUBST([LIBHDAL_MPI_SO_VERSION])
])
