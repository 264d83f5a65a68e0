/* SPDX-License-Identifier: BSD-3-Clause */
/* Process tables: export, add, order, refusals (docs/dlpack.md, "Process tables"; the core part). */
#include <limits.h>
#include "dlpack_testutil.h"

static hdal_context *ctx;
static void *blob;
static size_t len;

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  ctx = test_context_with("cpu,ifrttest");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
}
static void teardown(void) {
  free(blob);
  hdal_context_destroy(ctx);
}

static void same_device_but_process(const hdal_device *a, const hdal_device *r, int process) {
  ck_assert_int_eq(hdal_device_process_index(r), process);
  ck_assert(!hdal_device_is_addressable(r));
  ck_assert_str_eq(hdal_device_platform(r), hdal_device_platform(a));
  ck_assert_str_eq(hdal_device_kind(r), hdal_device_kind(a));
  ck_assert_int_eq(hdal_device_local_hardware_id(r), hdal_device_local_hardware_id(a));
  ck_assert_int_eq(hdal_device_runtime_class(r), hdal_device_runtime_class(a));
  if (hdal_device_runtime_class_reason(a))
    ck_assert_str_eq(hdal_device_runtime_class_reason(r), hdal_device_runtime_class_reason(a));
  else
    ck_assert_ptr_null(hdal_device_runtime_class_reason(r));
  ck_assert_int_eq(hdal_device_dlpack_device(r).device_type, hdal_device_dlpack_device(a).device_type);
  ck_assert_int_eq(hdal_device_dlpack_device(r).device_id, hdal_device_dlpack_device(a).device_id);
  ck_assert_uint_eq(hdal_device_memory_bytes(r), hdal_device_memory_bytes(a));
  ck_assert_int_eq(hdal_device_numa_node(r), hdal_device_numa_node(a));
  ck_assert_uint_eq(hdal_device_attribute_count(r), hdal_device_attribute_count(a));
  for (size_t k = 0; k < hdal_device_attribute_count(a); k++) {
    const char *key, *value;
    ck_assert(hdal_device_attribute(a, k, &key, &value));
    ck_assert_str_eq(hdal_device_attribute_get(r, key), value);
  }
}

START_TEST(add_keeps_everything_and_orders) {
  ck_assert_ok(hdal_context_add_process(ctx, 2, blob, len));
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len)); /* out of order: renumbered */
  ck_assert_uint_eq(hdal_context_device_count(ctx), 12);
  ck_assert_int_eq(hdal_context_process_count(ctx), 3);
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  for (size_t i = 0; i < 12; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), (int)(i / 4));
    if (i >= 4) same_device_but_process(hdal_context_device(ctx, i % 4), d, (int)(i / 4));
    else ck_assert(hdal_device_is_addressable(d));
  }
  /* cpu before ifrttest inside each process */
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 5)), "cpu");
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 6)), "ifrttest");
}
END_TEST

START_TEST(refusals_leave_context_unchanged) {
  ck_assert_error(hdal_context_add_process(ctx, 0, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process index 0 is this process's own");
  ck_assert_error(hdal_context_add_process(ctx, -2, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index -2 is negative");
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process 1 was already added");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  ck_assert_int_eq(hdal_context_process_count(ctx), 2);
}
END_TEST

/* The count of processes is an int: the last index that can be counted is
 * INT_MAX - 1 (count INT_MAX). */
START_TEST(index_that_cannot_be_counted_refused) {
  ck_assert_error(hdal_context_add_process(ctx, INT_MAX, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index 2147483647 cannot be counted: the process count would "
                  "exceed INT_MAX (2147483647)");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  ck_assert_ok(hdal_context_add_process(ctx, INT_MAX - 1, blob, len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  ck_assert_int_eq(hdal_context_process_count(ctx), INT_MAX);
  ck_assert_int_eq(hdal_device_process_index(hdal_context_device(ctx, 7)), INT_MAX - 1);
  ck_assert_error(hdal_context_add_process(ctx, INT_MAX, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index 2147483647 cannot be counted: the process count would "
                  "exceed INT_MAX (2147483647)");
  ck_assert_int_eq(hdal_context_process_count(ctx), INT_MAX);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
}
END_TEST

START_TEST(every_truncation_refused) {
  for (size_t n = 0; n < len; n++) {
    hdal_error *e = hdal_context_add_process(ctx, 1, blob, n);
    ck_assert_msg(e != NULL, "a blob cut at %zu bytes was accepted", n);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    hdal_error_destroy(e);
    ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
    ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  }
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, 3), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: malformed process table (3 bytes): not an hdal process table (bad magic) at byte 0");
  char msg[200];
  snprintf(msg, sizeof msg, "hdal_context_add_process: malformed process table (%zu bytes): truncated at byte 8",
           len - 1);
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, len - 1), HDAL_INVALID_ARGUMENT, msg);
}
END_TEST

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

START_TEST(hostile_fields_refused) {
  unsigned char *b = malloc(len + 64);
  hdal_error *e;
  struct {
    size_t at;
    uint32_t value;
    const char *why;
  } cases[] = {
      {4, 2, NULL},                        /* version 2 */
      {16, 0x7FFFFFFF, "too many devices"}, /* device count */
      {16, 1000, "truncated"},
      {20, 0xFFFFFFF0u, "string too long"}, /* first backend name length */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(b, blob, len);
    put_u32(b + cases[i].at, cases[i].value);
    e = hdal_context_add_process(ctx, 1, b, len);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    if (cases[i].why) ck_assert_msg(strstr(hdal_error_message(e), cases[i].why), "%s", hdal_error_message(e));
    hdal_error_destroy(e);
  }
  memcpy(b, blob, len);
  b[24] = 'C'; /* the first backend name, "cpu" */
  e = hdal_context_add_process(ctx, 1, b, len);
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(strstr(hdal_error_message(e), "invalid backend name"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  memcpy(b, blob, len);
  put_u32(b + 4, 2);
  ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process table version 2 (flags 0) is not supported: this hdal reads version 1");
  /* Trailing bytes, with the length field saying so. */
  memcpy(b, blob, len);
  memset(b + len, 0, 8);
  put_u32(b + 8, (uint32_t)(len + 8));
  e = hdal_context_add_process(ctx, 1, b, len + 8);
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(strstr(hdal_error_message(e), "trailing bytes"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  /* Every single-byte corruption: refused, or accepted as a whole; never half. */
  for (size_t i = 0; i < len; i++) {
    memcpy(b, blob, len);
    b[i] ^= 0xA5;
    size_t before = hdal_context_device_count(ctx);
    e = hdal_context_add_process(ctx, 100 + (int)i, b, len);
    if (e) {
      ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
      ck_assert_uint_eq(hdal_context_device_count(ctx), before);
      hdal_error_destroy(e);
    } else {
      ck_assert_uint_eq(hdal_context_device_count(ctx), before + 4);
    }
  }
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, i)), (int)i);
  free(b);
}
END_TEST

START_TEST(remote_devices_refuse_import) {
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  int64_t shape[1] = {2};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(2), true, 1, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, hdal_context_device(ctx, 4), NULL, &b), HDAL_FAILED_PRECONDITION,
                  "DLPack is only supported for devices addressable by the current process.");
  /* the IFRT-native device of process 1: the first message wins */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, hdal_context_device(ctx, 6), NULL, &b), HDAL_FAILED_PRECONDITION,
                  "DLPack is supported for PjRt-compatible backends only.");
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

START_TEST(many_processes_in_order) {
  for (int p = 1; p <= 2000; p++) ck_assert_ok(hdal_context_add_process(ctx, p, blob, len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4 * 2001);
  ck_assert_int_eq(hdal_context_process_count(ctx), 2001);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), (int)(i / 4));
  }
  /* and one that goes in the middle */
  ck_assert_error(hdal_context_add_process(ctx, 1000, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process 1000 was already added");
}
END_TEST

int main(void) {
  Suite *s = suite_create("process");
  TCase *tc = tcase_create("process");
  unsetenv("HDAL_BACKENDS");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, add_keeps_everything_and_orders);
  tcase_add_test(tc, refusals_leave_context_unchanged);
  tcase_add_test(tc, index_that_cannot_be_counted_refused);
  tcase_add_test(tc, every_truncation_refused);
  tcase_add_test(tc, hostile_fields_refused);
  tcase_add_test(tc, remote_devices_refuse_import);
  tcase_add_test(tc, many_processes_in_order);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
