/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the suites that run under mpirun (test_mpi*.c).  MPI is
 * initialised once per process and may not be used in a forked child, so these
 * suites run without Check's fork (CK_NOFORK) between MPI_Init and
 * MPI_Finalize; the top of test_mpi.c says how a rank failing an assertion
 * leaves none of the others waiting. */
#ifndef HDAL_MPI_TESTUTIL_H
#define HDAL_MPI_TESTUTIL_H

#include <stdarg.h>
#include <mpi.h>
#include "testutil.h"

/* MPI_Init, then this process's rank in MPI_COMM_WORLD and its size; every
 * rank's machine is then the one its test sets up (HWLOC_SYNTHETIC or the
 * host's), never an HWLOC_XMLFILE of the environment. */
static inline void test_mpi_init(int *argc, char ***argv, int *rank, int *size) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  unsetenv("HWLOC_XMLFILE");
}

/* Runs suite s with its test case tc in this process, then MPI_Finalize: the
 * program's exit status. */
static inline int test_mpi_run(Suite *s, TCase *tc) {
  suite_add_tcase(s, tc);
  int status = test_run_suite_in_process(s);
  MPI_Finalize();
  return status;
}

/* Ends before any test: rank 0 says why on stderr, then MPI_Finalize; returns
 * status (77: skipped, 99: a usage error). */
__attribute__((format(printf, 3, 4))) static inline int test_mpi_leave(int rank, int status, const char *fmt, ...) {
  if (rank == 0) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
  MPI_Finalize();
  return status;
}

#endif
