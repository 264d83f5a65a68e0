# SPDX-License-Identifier: BSD-3-Clause
# HDAL_MPI: --with-mpi[=auto|yes|no|openmpi|mpich]: libhdal-mpi, the multi-process layer.
#
# Open MPI is found through pkg-config ompi-c, MPICH through pkg-config mpich
# (Debian's libopenmpi-dev and libmpich-dev ship both).  MPI_CFLAGS / MPI_LIBS
# given on the command line win, as with any PKG_CHECK_MODULES.  Whatever was
# found must compile and link an MPI program; the implementation is then told
# by its header (OMPI_MAJOR_VERSION, MPICH_VERSION), not by the package name,
# and the launcher of that same implementation is looked for in its bin
# directory first (Debian installs mpirun.openmpi and mpiexec.mpich next to an
# alternatives link that may point at the other one).
#
# Substitutes MPI_CFLAGS, MPI_LIBS, MPI_FLAVOR (openmpi, mpich or other),
# MPIRUN (empty when no launcher was found: the MPI tests then skip) and
# HDAL_MPI_PC_REQUIRES (the MPI's pkg-config module, for hdal-mpi.pc).
AC_DEFUN([HDAL_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=auto|openmpi|mpich|no@:>@],
                    [build libhdal-mpi, the multi-process layer (default: auto, Open MPI first)])],
    [], [with_mpi=auto])
  AC_ARG_VAR([MPIRUN], [MPI launcher for the tests (default: the one of the MPI found)])
  AS_CASE([$with_mpi],
    [yes|auto|openmpi|mpich|no], [],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: expected auto, yes, no, openmpi or mpich])])

  hdal_mpi_found=no
  hdal_mpi_pkg=
  AS_IF([test "x$with_mpi" != xno && test "x$with_mpi" != xmpich], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [hdal_mpi_found=yes; hdal_mpi_pkg=ompi-c], [:])
  ])
  AS_IF([test "x$hdal_mpi_found" = xno && test "x$with_mpi" != xno && test "x$with_mpi" != xopenmpi], [
    PKG_CHECK_MODULES([MPI], [mpich], [hdal_mpi_found=yes; hdal_mpi_pkg=mpich], [:])
  ])

  MPI_FLAVOR=
  AS_IF([test "x$hdal_mpi_found" = xyes], [
    hdal_save_CFLAGS=$CFLAGS
    hdal_save_LIBS=$LIBS
    CFLAGS="$CFLAGS $MPI_CFLAGS"
    LIBS="$MPI_LIBS $LIBS"
    AC_MSG_CHECKING([whether an MPI program links with $hdal_mpi_pkg])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stddef.h>
#include <mpi.h>]],
        [[int n; MPI_Comm c = MPI_COMM_WORLD; MPI_Init(NULL, NULL); MPI_Comm_size(c, &n);
          MPI_Allgatherv(NULL, 0, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, c); MPI_Finalize();]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); hdal_mpi_found=no])
    AS_IF([test "x$hdal_mpi_found" = xyes], [
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef OMPI_MAJOR_VERSION
#error not Open MPI
#endif]], [])], [MPI_FLAVOR=openmpi],
        [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifndef MPICH_VERSION
#error not MPICH
#endif]], [])], [MPI_FLAVOR=mpich], [MPI_FLAVOR=other])])
    ])
    CFLAGS=$hdal_save_CFLAGS
    LIBS=$hdal_save_LIBS
  ])
  AS_IF([test "x$hdal_mpi_found" = xno && test "x$with_mpi" != xno && test "x$with_mpi" != xauto],
        [AC_MSG_ERROR([--with-mpi=$with_mpi: no usable MPI found (Debian: libopenmpi-dev or libmpich-dev)])])

  hdal_mpi_summary=no
  AS_IF([test "x$hdal_mpi_found" = xyes], [
    hdal_mpi_bindir=
    AS_IF([test -n "$hdal_mpi_pkg"], [hdal_mpi_bindir=`$PKG_CONFIG --variable=prefix $hdal_mpi_pkg 2>/dev/null`/bin])
    AS_CASE([$MPI_FLAVOR],
      [openmpi], [hdal_mpi_launchers="mpirun.openmpi orterun mpirun mpiexec"],
      [mpich], [hdal_mpi_launchers="mpiexec.hydra mpiexec.mpich mpirun.mpich mpiexec mpirun"],
      [hdal_mpi_launchers="mpiexec mpirun"])
    AC_PATH_PROGS([MPIRUN], [$hdal_mpi_launchers], [], [$hdal_mpi_bindir$PATH_SEPARATOR$PATH])
    hdal_mpi_version=
    AS_IF([test -n "$hdal_mpi_pkg"], [hdal_mpi_version=" "`$PKG_CONFIG --modversion $hdal_mpi_pkg 2>/dev/null`])
    AS_CASE([$MPI_FLAVOR],
      [openmpi], [hdal_mpi_summary="yes (Open MPI$hdal_mpi_version)"],
      [mpich], [hdal_mpi_summary="yes (MPICH$hdal_mpi_version)"],
      [hdal_mpi_summary="yes"])
    AS_IF([test -z "$MPIRUN"], [hdal_mpi_summary="$hdal_mpi_summary, no launcher: MPI tests skip"],
          [hdal_mpi_summary="$hdal_mpi_summary, tests with $MPIRUN"])
  ])
  # hdal-mpi.pc requires the MPI's own module, so that <hdal/mpi.h> (which
  # includes <mpi.h>) compiles with pkg-config's flags alone.
  HDAL_MPI_PC_REQUIRES=
  AS_IF([test "x$hdal_mpi_found" = xyes && test -n "$hdal_mpi_pkg" && $PKG_CONFIG --exists "$hdal_mpi_pkg"],
        [HDAL_MPI_PC_REQUIRES=$hdal_mpi_pkg])
  AC_SUBST([HDAL_MPI_PC_REQUIRES])
  AC_SUBST([MPI_FLAVOR])
  AM_CONDITIONAL([HDAL_MPI], [test "x$hdal_mpi_found" = xyes])
])
