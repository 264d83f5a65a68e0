/* SPDX-License-Identifier: BSD-3-Clause */
/* Context, device model and the CPU backend on hwloc (docs/reference.md). */
#include <pthread.h>
#include "testutil.h"

#define SYNTH_4NODES "pack:2 numa:2 core:4 pu:2"

static hdal_context *cpu_only(const char *synthetic) {
  if (synthetic) setenv("HWLOC_SYNTHETIC", synthetic, 1);
  return test_context_with("cpu");
}

START_TEST(create_and_destroy) {
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(NULL, &ctx));
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  ck_assert_uint_ge(hdal_context_device_count(ctx), 1); /* this machine's NUMA node(s) at least */
  ck_assert_ptr_null(hdal_context_device(ctx, hdal_context_device_count(ctx)));
  ck_assert_str_eq(hdal_context_backend_name(ctx, 0), "cpu");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 1), "cuda");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 2), "opencl");
  ck_assert_ptr_null(hdal_context_backend_name(ctx, hdal_context_backend_count(ctx)));
  ck_assert_ptr_null(hdal_context_backend_status(ctx, hdal_context_backend_count(ctx)));
  ck_assert_int_eq(strncmp(test_backend_status(ctx, "cpu"), "ok: ", 4), 0);
  hdal_context_destroy(ctx);
  hdal_context_destroy(NULL);
}
END_TEST

START_TEST(synthetic_numa_nodes_are_cpu_devices) {
  hdal_context *ctx = cpu_only(SYNTH_4NODES);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 4 devices");
  static const char *const cpusets[] = {"0-7", "8-15", "16-23", "24-31"};
  for (size_t i = 0; i < 4; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), 0);
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_str_eq(hdal_device_platform(d), "cpu");
    ck_assert_str_eq(hdal_device_kind(d), "cpu");
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert_int_eq(hdal_device_numa_node(d), (int)i);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLCPU);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, 0);
    ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "4");
    ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "8");
    ck_assert_str_eq(hdal_device_attribute_get(d, "cpuset"), cpusets[i]);
    ck_assert_ptr_null(hdal_device_attribute_get(d, "no_such_key"));
    const char *k, *v;
    size_t n = hdal_device_attribute_count(d);
    ck_assert_uint_ge(n, 3);
    ck_assert(hdal_device_attribute(d, 0, &k, &v));
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(v);
    ck_assert(!hdal_device_attribute(d, n, &k, &v));
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(synthetic_memory_per_node) {
  hdal_context *ctx = cpu_only("pack:1 numa:2(memory=1073741824) core:2 pu:1");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  for (size_t i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(1073741824));
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "1073741824");
    ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "2");
    ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "2");
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(no_numa_information_gives_one_device) {
  hdal_context *ctx = cpu_only("pack:2 core:3 pu:2");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_device *d = hdal_context_device(ctx, 0);
  ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "6");
  ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "12");
  ck_assert_str_eq(hdal_device_attribute_get(d, "cpuset"), "0-11");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(xml_topology) {
  char path[4096];
  snprintf(path, sizeof path, "%s/topologies/two-numa.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  setenv("HWLOC_XMLFILE", path, 1);
  unsetenv("HWLOC_SYNTHETIC");
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  hdal_device *d0 = hdal_context_device(ctx, 0), *d1 = hdal_context_device(ctx, 1);
  ck_assert_str_eq(hdal_device_kind(d0), "Test CPU Model 9000");
  ck_assert_uint_eq(hdal_device_memory_bytes(d0), UINT64_C(17179869184));
  ck_assert_uint_eq(hdal_device_memory_bytes(d1), UINT64_C(34359738368));
  ck_assert_str_eq(hdal_device_attribute_get(d0, "cpuset"), "0-3");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "cpuset"), "4-7");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "cores"), "2");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "pus"), "4");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(unreadable_xml_makes_cpu_unavailable_not_a_failure) {
  setenv("HWLOC_XMLFILE", "/nonexistent/topology.xml", 1);
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"),
                   "unavailable: hwloc could not use HWLOC_XMLFILE=/nonexistent/topology.xml (unreadable or malformed)");
  hdal_context_destroy(ctx);
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "bogus:3", 1);
  ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"),
                   "unavailable: hwloc could not use HWLOC_SYNTHETIC=bogus:3 (unreadable or malformed)");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(backends_selection) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "disabled");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "disabled");
  ck_assert_str_eq(test_backend_status(ctx, "ifrttest"), "disabled");
  hdal_context_destroy(ctx);

  ctx = test_context_with("-cpu,-cuda,-opencl,-ifrttest");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "disabled");
  hdal_context_destroy(ctx);

  /* The environment variable is read when the options leave it open. */
  setenv("HDAL_BACKENDS", "-cpu", 1);
  hdal_context *c2 = NULL;
  ck_assert_ok(hdal_context_create(NULL, &c2));
  ck_assert_str_eq(test_backend_status(c2, "cpu"), "disabled");
  hdal_context_destroy(c2);
  /* ... and the options win over it. */
  ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(unknown_backend_is_listed_unavailable) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  hdal_context *ctx = test_context_with("cpu,nosuchbackend");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  const char *st = test_backend_status(ctx, "nosuchbackend");
  ck_assert_ptr_nonnull(st);
  ck_assert_msg(strncmp(st, "unavailable: module hdal_nosuchbackend.so not found (searched ", 62) == 0, "%s", st);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(bad_backend_lists_refused) {
  static const char *const bad[] = {"cpu;opencl", "cpu,-", "c/pu", "cpu\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = bad[i]};
    hdal_context *ctx = NULL;
    hdal_error *e = hdal_context_create(&o, &ctx);
    ck_assert_msg(e != NULL, "'%s' accepted", bad[i]);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    ck_assert_ptr_null(ctx);
    hdal_error_destroy(e);
  }
  /* Empty entries and spaces are fine; spaces separate like commas. */
  hdal_context *ctx = test_context_with(" cpu, ,");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "disabled");
  hdal_context_destroy(ctx);
  ctx = test_context_with("cpu opencl cuda ifrttest  -opencl x y z");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "disabled");
  ck_assert_ptr_nonnull(test_backend_status(ctx, "z"));
  hdal_context_destroy(ctx);
}
END_TEST

static void *create_destroy_many(void *arg) {
  for (int i = 0; i < 8; i++) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
    hdal_context *ctx;
    hdal_error *e = hdal_context_create(&o, &ctx);
    if (e) {
      hdal_error_destroy(e);
      return (void *)1;
    }
    if (hdal_context_device_count(ctx) != 4) return (void *)2;
    hdal_context_destroy(ctx);
  }
  return NULL;
}

START_TEST(contexts_created_concurrently) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, create_destroy_many, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    ck_assert_ptr_null(r);
  }
}
END_TEST

START_TEST(process_place_from_options) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 2, .process_count = 3};
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_int_eq(hdal_context_process_index(ctx), 2);
  ck_assert_int_eq(hdal_context_process_count(ctx), 3);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    ck_assert_int_eq(hdal_device_process_index(hdal_context_device(ctx, i)), 2);
    ck_assert(hdal_device_is_addressable(hdal_context_device(ctx, i)));
    ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, i)), (int)i);
  }
  hdal_context_destroy(ctx);
  o.process_index = 3;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: process_index 3 is not in [0, process_count 3)");
  o.process_index = -1;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: process_index -1 is not in [0, process_count 3)");
}
END_TEST

/* Before concurrent discovery, HWLOC_PLUGINS_PATH is defined (to hwloc's own
 * default), so that a vendor library setting it meanwhile (PoCL) replaces it
 * in place instead of reallocating the environment under hwloc's getenv.  The
 * process's first context defines it, whatever its backends, before hdal reads
 * the environment (threads creating first contexts at once); later, one
 * backend alone (no concurrency) changes nothing.  A user's value is kept. */
START_TEST(environment_settled_before_concurrent_discovery) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  unsetenv("HWLOC_PLUGINS_PATH");
  hdal_context_destroy(test_context_with("cpu"));
  ck_assert_pstr_eq(getenv("HWLOC_PLUGINS_PATH"), HDAL_HWLOC_PLUGINS_DIR);
  unsetenv("HWLOC_PLUGINS_PATH");
  hdal_context_destroy(test_context_with("cpu"));
  ck_assert_ptr_null(getenv("HWLOC_PLUGINS_PATH"));
  hdal_context_destroy(test_context_with("cpu,ifrttest"));
  ck_assert_pstr_eq(getenv("HWLOC_PLUGINS_PATH"), HDAL_HWLOC_PLUGINS_DIR);
  setenv("HWLOC_PLUGINS_PATH", "/users/own", 1);
  hdal_context_destroy(test_context_with("cpu,ifrttest"));
  ck_assert_pstr_eq(getenv("HWLOC_PLUGINS_PATH"), "/users/own");
}
END_TEST

int main(void) {
  Suite *s = suite_create("context");
  TCase *tc = tcase_create("context");
  unsetenv("HDAL_BACKENDS");
  tcase_add_test(tc, create_and_destroy);
  tcase_add_test(tc, synthetic_numa_nodes_are_cpu_devices);
  tcase_add_test(tc, synthetic_memory_per_node);
  tcase_add_test(tc, no_numa_information_gives_one_device);
  tcase_add_test(tc, xml_topology);
  tcase_add_test(tc, unreadable_xml_makes_cpu_unavailable_not_a_failure);
  tcase_add_test(tc, backends_selection);
  tcase_add_test(tc, unknown_backend_is_listed_unavailable);
  tcase_add_test(tc, bad_backend_lists_refused);
  tcase_add_test(tc, contexts_created_concurrently);
  tcase_add_test(tc, process_place_from_options);
  tcase_add_test(tc, environment_settled_before_concurrent_discovery);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
