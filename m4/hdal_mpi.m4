# HDAL_MPI: --with-mpi[=auto]: libhdal-mpi, found through pkg-config (mpi / ompi-c) or mpicc.
AC_DEFUN([HDAL_MPI], [
  AC_ARG_WITH([mpi], [AS_HELP_STRING([--with-mpi@<:@=auto@:>@], [build libhdal-mpi, the multi-process layer])],
    [], [with_mpi=auto])
  hdal_mpi_summary=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [hdal_mpi_summary="yes (Open MPI)"],
      [PKG_CHECK_MODULES([MPI], [mpich], [hdal_mpi_summary="yes (MPICH)"], [hdal_mpi_summary=no])])
    AS_IF([test "x$hdal_mpi_summary" = xno && test "x$with_mpi" = xyes],
          [AC_MSG_ERROR([--with-mpi: no MPI found (Debian: libopenmpi-dev)])])
  ])
  AC_PATH_PROG([MPIRUN], [mpirun], [])
  AM_CONDITIONAL([HDAL_MPI], [test "x$hdal_mpi_summary" != xno])
])
