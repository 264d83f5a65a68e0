/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls-mpi — the hooks of hdal-ls.c for the global view under MPI (see
 * ls_context.h): every rank of MPI_COMM_WORLD joins hdal_mpi_context_create,
 * one rank prints (--rank N, default 0).  The others send their standard output
 * to /dev/null from the start, so that --help and --version print once too.
 * The ranks agree on every failure (bad usage is the same argv, a failed
 * global view the same error), so the printing rank alone reports it
 * (hdal_ls_stderr()) and alone exits with its status: a launcher that ends
 * the job once a rank fails (Open MPI 5's PRRTE) may drop what the other ranks
 * wrote but it has not read yet, and a copy of the message per rank is noise.
 * Their standard error stays open for what MPI and the libraries say. */
#ifndef HDAL_LS_MPI_H
#define HDAL_LS_MPI_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hdal/mpi.h>

#define HDAL_LS_NAME "hdal-ls-mpi"
#define HDAL_LS_EXTRA_HELP \
  "      --rank N           print from rank N of MPI_COMM_WORLD (default 0); the other ranks print nothing\n"
enum { HDAL_LS_OPT_RANK = 0x100 };
#define HDAL_LS_EXTRA_OPTIONS {"rank", required_argument, NULL, HDAL_LS_OPT_RANK},

static int hdal_ls_rank, hdal_ls_size, hdal_ls_printer;
static FILE *hdal_ls_quiet; /* /dev/null, for the tool's own messages on the other ranks */

static inline FILE *hdal_ls_stderr(void) {
  return hdal_ls_rank == hdal_ls_printer || !hdal_ls_quiet ? stderr : hdal_ls_quiet;
}

/* Every rank leaves through here, once, by the same path.  What a rank
 * printed is flushed and the ranks wait for one another; then the printing
 * rank exits with the status and the others with 0 (the launcher's status is
 * the failed rank's: mpirun's and srun's are the printing rank's). */
static inline int hdal_ls_exit(int rc) {
  fflush(stdout);
  fflush(stderr);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return hdal_ls_rank == hdal_ls_printer ? rc : 0;
}

/* The rank named by `arg`, or -1. */
static inline int hdal_ls_parse_rank(const char *arg) {
  char *end;
  long v = strtol(arg, &end, 10);
  return *arg && !*end && v >= 0 && v < hdal_ls_size ? (int)v : -1;
}

/* The value of --rank before getopt sees it (any unambiguous prefix: --r, --ra,
 * ...), so that the silent ranks are silent before anything prints. */
static inline const char *hdal_ls_prescan_rank(int argc, char **argv) {
  const char *value = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) break;
    size_t n = strcspn(a, "=");
    if (n < 3 || n > 6 || strncmp(a, "--rank", n)) continue;
    if (a[n] == '=') value = a + n + 1;
    else if (i + 1 < argc) value = argv[++i];
  }
  return value;
}

static inline void hdal_ls_init(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &hdal_ls_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &hdal_ls_size);
  const char *value = hdal_ls_prescan_rank(*argc, *argv);
  int printer = value ? hdal_ls_parse_rank(value) : 0;
  hdal_ls_printer = printer < 0 ? 0 : printer; /* a bad value: rank 0 reports it, in hdal_ls_option */
  if (hdal_ls_rank != hdal_ls_printer && !freopen("/dev/null", "w", stdout)) fclose(stdout);
  hdal_ls_quiet = fopen("/dev/null", "w");
}

static inline bool hdal_ls_option(int c, const char *arg) {
  if (c != HDAL_LS_OPT_RANK) return false;
  int r = hdal_ls_parse_rank(arg);
  if (r < 0) {
    if (hdal_ls_rank == hdal_ls_printer)
      fprintf(stderr, "%s: --rank '%s': expected a rank of MPI_COMM_WORLD, 0 to %d\nTry '%s --help' for more information.\n",
              HDAL_LS_NAME, arg, hdal_ls_size - 1, HDAL_LS_NAME);
    exit(hdal_ls_exit(2));
  }
  hdal_ls_printer = r;
  return true;
}

static inline hdal_error *hdal_ls_context_create(const hdal_context_options *o, hdal_context **ctx) {
  return hdal_mpi_context_create(MPI_COMM_WORLD, o, ctx);
}

static inline bool hdal_ls_should_print(hdal_context *ctx) {
  return hdal_context_process_index(ctx) == hdal_ls_printer;
}

#endif /* HDAL_LS_MPI_H */
