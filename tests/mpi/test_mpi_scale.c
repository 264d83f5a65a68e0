/* SPDX-License-Identifier: BSD-3-Clause */
/* The global table at scale, simulated without MPI (docs/dlpack.md, "Process tables"; docs/mpi.md): one
 * context takes the tables of 1,023 other processes of 8 devices each, as
 * hdal_mpi_context_create does for a job of 1,024 ranks.  Not timed: the
 * figures are bench/bench_scale's. */
#include "testutil.h"

enum { PROCESSES = 1024, PER_PROCESS = 8 };

/* This process's context: 8 CPU devices (8 NUMA nodes of 2 cores), index 0 of `count`. */
static hdal_context *context_of(int count) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:8 core:2 pu:1", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 0, .process_count = count};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_uint_eq(hdal_context_device_count(ctx), PER_PROCESS);
  return ctx;
}

START_TEST(table_of_1024_processes_of_8_devices) {
  hdal_context *ctx = context_of(PROCESSES);
  void *blob = NULL;
  size_t len = 0;
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
  ck_assert_uint_gt(len, 0);
  /* Added in an order other than the final one: the table sorts itself. */
  for (int p = PROCESSES - 1; p >= 1; p--) ck_assert_ok(hdal_context_add_process(ctx, p, blob, len));
  free(blob);

  ck_assert_uint_eq(hdal_context_device_count(ctx), (size_t)PROCESSES * PER_PROCESS);
  for (size_t i = 0; i < (size_t)PROCESSES * PER_PROCESS; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    int p = (int)(i / PER_PROCESS), j = (int)(i % PER_PROCESS);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), p);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), j);
    ck_assert_int_eq(hdal_device_is_addressable(d), p == 0);
    ck_assert_str_eq(hdal_device_platform(d), "cpu");
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_int_eq(hdal_device_numa_node(d), j);
    ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "2");
  }
  ck_assert_ptr_null(hdal_context_device(ctx, (size_t)PROCESSES * PER_PROCESS));
  hdal_context_destroy(ctx);
}
END_TEST

/* The whole table again from the last process's point of view: only its own 8 devices are addressable. */
START_TEST(table_seen_from_the_last_process) {
  hdal_context *first = context_of(PROCESSES);
  void *blob = NULL;
  size_t len = 0;
  ck_assert_ok(hdal_context_export_devices(first, &blob, &len));
  hdal_context_destroy(first);

  setenv("HWLOC_SYNTHETIC", "pack:1 numa:8 core:2 pu:1", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = PROCESSES - 1,
                            .process_count = PROCESSES};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  for (int p = 0; p < PROCESSES - 1; p++) ck_assert_ok(hdal_context_add_process(ctx, p, blob, len));
  free(blob);
  ck_assert_uint_eq(hdal_context_device_count(ctx), (size_t)PROCESSES * PER_PROCESS);
  size_t own = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), (int)(i / PER_PROCESS));
    if (hdal_device_is_addressable(d)) {
      ck_assert_int_eq(hdal_device_process_index(d), PROCESSES - 1);
      own++;
    }
  }
  ck_assert_uint_eq(own, PER_PROCESS);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("mpi_scale");
  TCase *tc = tcase_create("scale");
  tcase_set_timeout(tc, 120); /* not a speed test: room for sanitizers on a busy machine */
  tcase_add_test(tc, table_of_1024_processes_of_8_devices);
  tcase_add_test(tc, table_seen_from_the_last_process);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
