/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walk over the device memory pools (docs/memory.md): with a
 * block already cached, a copying import that reuses it, one that allocates
 * afresh, their releases and a trim, with every fallible call failing in turn
 * (the pool's own allocations, OpenCL's).  Each failure must be an acceptable
 * error or absorbed, the statistics must stay consistent, and everything must
 * come back.  The GPUs' pools (the drivers' allocations, events, memory pool
 * and trim calls) are walked by the GPU suites (tests/gpusuite/walks.c). */
#include "config.h"
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "walk.h"

static void pool_walk(walk_result *r, long n, const char *platform) {
  char backends[32];
  snprintf(backends, sizeof backends, "cpu%s%s", platform ? "," : "", platform ? platform : "");
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends};
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_context_create(&o, &ctx);
  hdal_error_destroy(err);
  WALK_CHECK(r, ctx != NULL, "no context with backends %s", backends);
  hdal_device *dev = NULL;
  const char *want = platform ? platform : "cpu";
  for (size_t i = 0; i < hdal_context_device_count(ctx) && !dev; i++)
    if (!strcmp(hdal_device_platform(hdal_context_device(ctx, i)), want)) dev = hdal_context_device(ctx, i);
  if (!dev) {
    snprintf(r->text, sizeof r->text, "no %s device", want);
    hdal_context_destroy(ctx);
    return;
  }
  walk_pool_round(r, n, ctx, dev, "the driver");
  if (!r->ok) return;
  snprintf(r->text, sizeof r->text, "pool on %s\n", want);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

static void pool_cpu(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  pool_walk(r, n, NULL);
}
static void pool_opencl(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  pool_walk(r, n, "opencl");
}
START_TEST(walk_pool_cpu) { walk_run("pool_cpu", pool_cpu); }
END_TEST
START_TEST(walk_pool_opencl) { walk_run("pool_opencl", pool_opencl); }
END_TEST

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  unsetenv("HDAL_MEMORY_POOL");
  Suite *s = suite_create("faultinject-pool");
  TCase *tc = tcase_create("walk");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, walk_pool_cpu);
  tcase_add_test(tc, walk_pool_opencl);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
