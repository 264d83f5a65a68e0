# SPDX-License-Identifier: BSD-3-Clause
# HDAL_CMAKE: what cmake/hdalConfig.cmake.in needs (the CMake package,
# installed in $(libdir)/cmake/hdal; docs/api-policy.md and README.md).
# The package is relocatable: the installed file finds the prefix from its own
# location, going up HDAL_CMAKE_UP ("../../.." for $(prefix)/lib/cmake/hdal),
# and the libraries and headers below it.  A libdir or includedir outside the
# prefix (--libdir=/opt/x/lib with --prefix=/usr) is written as an absolute
# path instead, and that part does not move.
AC_DEFUN([HDAL_CMAKE], [
  AC_CHECK_SIZEOF([void *])
  hdal_cmake_save_prefix=$prefix
  hdal_cmake_save_exec_prefix=$exec_prefix
  test "x$prefix" = xNONE && prefix=$ac_default_prefix
  test "x$exec_prefix" = xNONE && exec_prefix=$prefix
  hdal_cmake_libdir=$libdir
  while :; do case $hdal_cmake_libdir in *'$'*) eval "hdal_cmake_libdir=\"$hdal_cmake_libdir\"" ;; *) break ;; esac; done
  hdal_cmake_includedir=$includedir
  while :; do case $hdal_cmake_includedir in *'$'*) eval "hdal_cmake_includedir=\"$hdal_cmake_includedir\"" ;; *) break ;; esac; done
  hdal_cmake_prefix=`echo "$prefix" | sed 's,//*,/,g; s,/$,,'`
  # Going up from $libdir/cmake/hdal: one step per component of libdir below the prefix, and two.
  case $hdal_cmake_libdir in
    "$hdal_cmake_prefix"/*)
      hdal_cmake_rel=${hdal_cmake_libdir#"$hdal_cmake_prefix"/}
      HDAL_CMAKE_UP=`echo "$hdal_cmake_rel/cmake/hdal" | sed 's,//*,/,g; s,/$,,; s,[[^/]][[^/]]*,..,g'`
      HDAL_CMAKE_LIBDIR="\${_hdal_prefix}/$hdal_cmake_rel" ;;
    *)
      HDAL_CMAKE_UP=
      HDAL_CMAKE_LIBDIR=$hdal_cmake_libdir ;;
  esac
  case $hdal_cmake_includedir in
    "$hdal_cmake_prefix"/*) HDAL_CMAKE_INCLUDEDIR="\${_hdal_prefix}/${hdal_cmake_includedir#"$hdal_cmake_prefix"/}" ;;
    *) HDAL_CMAKE_INCLUDEDIR=$hdal_cmake_includedir ;;
  esac
  AS_IF([test -z "$HDAL_CMAKE_UP"], [AC_MSG_WARN([libdir $hdal_cmake_libdir is outside the prefix: the CMake package will not be relocatable])])
  prefix=$hdal_cmake_save_prefix
  exec_prefix=$hdal_cmake_save_exec_prefix
  HDAL_CMAKE_SIZEOF_VOID_P=$ac_cv_sizeof_void_p
  HDAL_CMAKE_PREFIX=$hdal_cmake_prefix
  HDAL_CMAKE_MPI=no
  test "x$hdal_mpi_found" = xyes && HDAL_CMAKE_MPI=yes
  HDAL_VERSION_MAJOR_MINOR=`echo "$PACKAGE_VERSION" | sed 's/\.[[^.]]*$//'`
  HDAL_CMAKE_DIR=$hdal_cmake_libdir/cmake/hdal
  AC_SUBST([HDAL_CMAKE_UP])
  AC_SUBST([HDAL_CMAKE_LIBDIR])
  AC_SUBST([HDAL_CMAKE_INCLUDEDIR])
  AC_SUBST([HDAL_CMAKE_SIZEOF_VOID_P])
  AC_SUBST([HDAL_CMAKE_PREFIX])
  AC_SUBST([HDAL_CMAKE_MPI])
  AC_SUBST([HDAL_VERSION_MAJOR_MINOR])
  AC_SUBST([HDAL_CMAKE_DIR])
])
