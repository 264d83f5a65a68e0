/* SPDX-License-Identifier: BSD-3-Clause */
/* Context creation: the cost of hdal_context_create + destroy with the CPU
 * backend only (hwloc topology load, one device per NUMA node), next to a bare
 * hwloc topology load of the same machine in the same run. */
#include "config.h"
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <hdal.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { RUNS = 51 };

static double median(double *v) {
  qsort(v, RUNS, sizeof *v, cmp_double);
  return v[RUNS / 2];
}

int main(void) {
  double ctx_us[RUNS], hwloc_us[RUNS];
  for (int i = 0; i < RUNS; i++) {
    double t0 = now_us();
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    hwloc_topology_load(t);
    hwloc_topology_destroy(t);
    hwloc_us[i] = now_us() - t0;

    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
    hdal_context *ctx;
    t0 = now_us();
    hdal_error *e = hdal_context_create(&o, &ctx);
    if (e) {
      fprintf(stderr, "hdal_context_create: %s\n", hdal_error_message(e));
      return 1;
    }
    hdal_context_destroy(ctx);
    ctx_us[i] = now_us() - t0;
  }
  double c = median(ctx_us), h = median(hwloc_us);
  printf("%-44s %12s %12s %8s\n", "operation (median of 51)", "hdal us", "baseline us", "ratio");
  printf("%-44s %12.1f %12.1f %8.2f\n", "context create+destroy, cpu only vs hwloc load", c, h, c / h);
  return 0;
}
