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

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <hwloc.h>
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

/* This rank's binding as the OS has it, "CPUSET\nPOLICY\nNODES" (a field empty when not known or none),
 * malloc'ed; NULL when out of memory.  Asked of the kernel itself (sched_getaffinity, get_mempolicy), not
 * through an hwloc topology: HWLOC_XMLFILE's would be another machine's. */
static inline char *hdal_ls_own_binding(void) {
  static const char *const policies[] = {"default", "preferred", "bind", "interleave", "local", "preferred-many",
                                         "weighted-interleave"};
  char cpu_text[1024] = "", node_text[1024] = "";
  const char *policy_word = "";
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int ncpus = 1024; set && ncpus <= 1 << 22; ncpus *= 8) {
    cpu_set_t *cpus = CPU_ALLOC(ncpus);
    if (!cpus) break;
    size_t size = CPU_ALLOC_SIZE(ncpus);
    int rc = sched_getaffinity(0, size, cpus);
    for (int i = 0; rc == 0 && i < ncpus; i++)
      if (CPU_ISSET_S(i, size, cpus)) hwloc_bitmap_set(set, (unsigned)i);
    if (rc == 0) hwloc_bitmap_snprintf(cpu_text, sizeof cpu_text, set);
    CPU_FREE(cpus);
    if (rc == 0 || errno != EINVAL) break; /* EINVAL: more CPUs than the set holds */
  }
  enum { MAX_NODES = 4096 };
  unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = {0};
  int mode;
  if (set && syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)MAX_NODES, NULL, 0UL) == 0) {
    mode &= 0xffff; /* the mode flags (MPOL_F_STATIC_NODES, ...) out */
    policy_word = mode >= 0 && (size_t)mode < sizeof policies / sizeof *policies ? policies[mode] : "other";
    hwloc_bitmap_zero(set);
    for (unsigned n = 0; n < MAX_NODES; n++)
      if (mask[n / (8 * sizeof *mask)] >> (n % (8 * sizeof *mask)) & 1) hwloc_bitmap_set(set, n);
    if (!hwloc_bitmap_iszero(set)) hwloc_bitmap_list_snprintf(node_text, sizeof node_text, set);
  }
  hwloc_bitmap_free(set);
  char *s = NULL;
  return asprintf(&s, "%s\n%s\n%s", cpu_text, policy_word, node_text) < 0 ? NULL : s;
}

/* Every rank's binding, gathered by the printing rank: its array (by rank, *n of them) there, NULL on the
 * others and in a job of one rank.  Every rank calls it, once, where its context was made. */
static inline ls_binding *hdal_ls_bindings(size_t *n) {
  *n = 0;
  if (hdal_ls_size < 2) return NULL; /* alone: what hdal-ls prints */
  char *mine = hdal_ls_own_binding();
  int len = mine ? (int)strlen(mine) + 1 : 1;
  bool printer = hdal_ls_rank == hdal_ls_printer;
  int *lens = printer ? calloc((size_t)hdal_ls_size, sizeof *lens) : NULL;
  int *at = printer ? calloc((size_t)hdal_ls_size, sizeof *at) : NULL;
  MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, hdal_ls_printer, MPI_COMM_WORLD);
  size_t total = 0;
  for (int r = 0; printer && lens && at && r < hdal_ls_size; r++) at[r] = (int)total, total += (size_t)lens[r];
  char *all = printer ? malloc(total ? total : 1) : NULL;
  MPI_Gatherv(mine ? mine : "", len, MPI_CHAR, all, lens, at, MPI_CHAR, hdal_ls_printer, MPI_COMM_WORLD);
  free(mine);
  ls_binding *b = printer && all && lens && at ? calloc((size_t)hdal_ls_size, sizeof *b) : NULL;
  for (int r = 0; b && r < hdal_ls_size; r++) {
    char *f[3] = {all + at[r], NULL, NULL};
    for (int k = 1; k < 3 && f[k - 1]; k++)
      if ((f[k] = strchr(f[k - 1], '\n'))) *f[k]++ = '\0';
    b[r].cpuset = f[0] && *f[0] ? strdup(f[0]) : NULL;
    b[r].memory = f[1] && *f[1] ? strdup(f[1]) : NULL;
    b[r].numa_nodes = f[2] && *f[2] ? strdup(f[2]) : NULL;
  }
  if (b) *n = (size_t)hdal_ls_size;
  free(all);
  free(lens);
  free(at);
  return b;
}

static inline void hdal_ls_bindings_free(ls_binding *b, size_t n) {
  for (size_t r = 0; b && r < n; r++) {
    free(b[r].cpuset);
    free(b[r].memory);
    free(b[r].numa_nodes);
  }
  free(b);
}

#endif /* HDAL_LS_MPI_H */
