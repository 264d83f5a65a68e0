/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walk over context creation (issue 7): every allocation,
 * thread, hwloc and OpenCL call hdal makes while creating a context fails in
 * turn.  Each must give RESOURCE_EXHAUSTED (memory) or leave the backend it hit
 * "unavailable: ..." with the rest of the table as without the failure, and
 * everything hdal took must come back when the context is destroyed. */
#include "config.h"
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "walk.h"

static void create_and_check(walk_result *r, long n, const char *baseline, const char *backends) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends};
  hdal_context *ctx;
  walk_create_context(r, n, baseline, &o, &ctx);
  if (!r->ok) return;
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

static void context_cpu(walk_result *r, long n, const char *baseline) {
  create_and_check(r, n, baseline, "cpu");
}

/* With HDAL_DEBUG the diagnostics allocate too; they may be lost, nothing else. */
static void context_cpu_debug(walk_result *r, long n, const char *baseline) {
  setenv("HDAL_DEBUG", "1", 1);
  if (!freopen("/dev/null", "w", stderr)) return;
  create_and_check(r, n, baseline, "cpu");
}

/* Every backend of the suite's module path: cpu, cuda (no driver here, or the
 * test's), opencl on PoCL when built, the IFRT-native test module. */
static void context_all(walk_result *r, long n, const char *baseline) {
  create_and_check(r, n, baseline, NULL);
}

/* A topology read from XML: hwloc's XML path, two NUMA nodes. */
static void context_xml(walk_result *r, long n, const char *baseline) {
  char xml[4096];
  snprintf(xml, sizeof xml, "%s/topologies/two-numa.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  create_and_check(r, n, baseline, "cpu");
}

/* The walk can fail: an error object left undestroyed is a leak of two allocations. */
static void leaky(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  walk_arm(n);
  hdal_error *err = hdal_context_create(NULL, NULL);
  walk_disarm();
  WALK_CHECK(r, err != NULL, "no error for a NULL out");
  walk_leaks(r);
}

START_TEST(interposer_finds_a_leak) {
  static walk_result r;
  walk_child(leaky, 0, "", &r);
  ck_assert_int_eq(r.ok, 0);
  ck_assert_str_eq(r.why, "leak: hdal still holds 2 allocation(s) and 0 hwloc/OpenCL/driver object(s)");
  walk_child(leaky, 1, "", &r); /* the error's own allocation fails: the static out-of-memory error */
  ck_assert_int_eq(r.ok, 1);
  ck_assert_int_eq(r.rep.injected_at, 1);
  ck_assert_str_eq(r.rep.function, "malloc");
  ck_assert_ptr_nonnull(strstr(r.rep.caller, "libhdal.so"));
}
END_TEST

START_TEST(walk_context_cpu) { walk_run("context_cpu", context_cpu); }
END_TEST
START_TEST(walk_context_cpu_debug) { walk_run("context_cpu_debug", context_cpu_debug); }
END_TEST
START_TEST(walk_context_xml) { walk_run("context_xml", context_xml); }
END_TEST
START_TEST(walk_context_all) { walk_run("context_all", context_all); }
END_TEST

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  Suite *s = suite_create("faultinject-context");
  TCase *tc = tcase_create("walk");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, interposer_finds_a_leak);
  tcase_add_test(tc, walk_context_cpu);
  tcase_add_test(tc, walk_context_cpu_debug);
  tcase_add_test(tc, walk_context_xml);
  tcase_add_test(tc, walk_context_all);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
