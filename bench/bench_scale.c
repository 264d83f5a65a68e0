/* SPDX-License-Identifier: BSD-3-Clause */
/* The global table at scale (docs/dlpack.md, "Process tables"; docs/mpi.md), simulated in one process:
 * the cost of adding the device tables of 1, 64, 1,024 and 8,192 processes of 8
 * devices each to one context, as hdal_mpi_context_create does on each rank of
 * a job that size (MPI moves the bytes; this is the part that grows with the
 * job).  Two orders:
 *   first rank  the context is process 0, the tables come after its own devices;
 *   last rank   the context is the last process, every table comes before them.
 * Prints build time (cold: the first run of a size; warm: the median of the
 * following runs) and heap per device added, and the ratio of the warm time per
 * device to that of 64 processes: flat ratios mean linear growth. */
#include "config.h"
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <hdal.h>

enum { PER_PROCESS = 8 };
static const int sizes[] = {1, 64, 1024, 8192};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t heap_in_use(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, hdal_error *e) {
  fprintf(stderr, "bench_scale: %s: %s\n", what, hdal_error_message(e));
  exit(1);
}

static hdal_context *context_as(int index, int count) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = index, .process_count = count};
  hdal_context *ctx = NULL;
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) die("hdal_context_create", e);
  return ctx;
}

typedef struct {
  double cold_ns; /* run 0: the heap grows to this size for the first time (page faults included) */
  double ns;      /* median time to add all tables, heap warm */
  double bytes;   /* heap added per device */
} figure;

/* Adds `tables` tables to a fresh context, `last` choosing the order.  Run 0
 * measures the heap (mallinfo2 consolidates the heap, so the timed runs do
 * without it); the time is the median of the `runs` runs after it, or run 0's
 * when `runs` is 0. */
static figure measure(int tables, bool last, const void *blob, size_t len, int runs) {
  double *t = malloc((size_t)(runs + 1) * sizeof *t);
  figure f = {0, 0, 0};
  for (int r = 0; r <= runs; r++) {
    hdal_context *ctx = context_as(last ? tables : 0, tables + 1);
    size_t heap0 = r == 0 ? heap_in_use() : 0;
    double t0 = now_ns();
    for (int p = 0; p < tables; p++) {
      hdal_error *e = hdal_context_add_process(ctx, last ? p : p + 1, blob, len);
      if (e) die("hdal_context_add_process", e);
    }
    t[r] = now_ns() - t0;
    if (r == 0) f.bytes = (double)(heap_in_use() - heap0) / ((double)tables * PER_PROCESS);
    if (hdal_context_device_count(ctx) != (size_t)(tables + 1) * PER_PROCESS) {
      fprintf(stderr, "bench_scale: %zu devices, expected %d\n", hdal_context_device_count(ctx),
              (tables + 1) * PER_PROCESS);
      exit(1);
    }
    hdal_context_destroy(ctx);
  }
  f.cold_ns = t[0];
  if (runs > 0) qsort(t + 1, (size_t)runs, sizeof *t, cmp_double);
  f.ns = runs > 0 ? t[1 + runs / 2] : t[0];
  free(t);
  return f;
}

int main(void) {
  /* Warm runs reuse the heap instead of giving it back to the kernel and
   * faulting it in again (page faults cost ~11 us each on the CI machine). */
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  /* Every process: 8 NUMA nodes of 2 cores, so 8 CPU devices of 5 attributes. */
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:8 core:2 pu:1", 1);
  unsetenv("HWLOC_XMLFILE");
  hdal_context *one = context_as(0, 1);
  void *blob = NULL;
  size_t len = 0;
  hdal_error *e = hdal_context_export_devices(one, &blob, &len);
  if (e) die("hdal_context_export_devices", e);
  hdal_context_destroy(one);

  printf("process table: %zu bytes for %d devices (%.0f bytes/device)\n\n", len, PER_PROCESS,
         (double)len / PER_PROCESS);
  printf("%-10s %9s %8s %10s %10s %11s %13s %14s\n", "order", "processes", "devices", "cold ms", "warm ms",
         "ns/device", "vs 64 procs", "heap B/device");
  for (int order = 0; order < 2; order++) {
    figure f[NSIZES];
    for (int i = 0; i < NSIZES; i++) {
      /* One run where a run takes minutes (the last rank's 8,192: every add re-sorts the table). */
      int runs = sizes[i] <= 64 ? 101 : sizes[i] <= 1024 ? 21 : order == 1 ? 0 : 5;
      f[i] = measure(sizes[i], order == 1, blob, len, runs);
    }
    for (int i = 0; i < NSIZES; i++) {
      double devices = (double)sizes[i] * PER_PROCESS, per = f[i].ns / devices;
      printf("%-10s %9d %8.0f %10.3f %10.3f %11.1f %13.2f %14.0f\n", order ? "last rank" : "first rank", sizes[i],
             devices, f[i].cold_ns / 1e6, f[i].ns / 1e6, per, per / (f[1].ns / (64.0 * PER_PROCESS)), f[i].bytes);
    }
    printf("%-10s growth 1,024 -> 8,192 processes (8x the devices): %.2fx the time\n\n", order ? "last rank" : "first rank",
           f[3].ns / f[2].ns);
  }
  free(blob);
  return 0;
}
