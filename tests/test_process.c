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
    ck_assert_int_eq(hdal_device_attribute_type(r, k), hdal_device_attribute_type(a, k));
    ck_assert_uint_eq(hdal_device_attribute_flags(r, k), hdal_device_attribute_flags(a, k));
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

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Walks a version 2 table: the offsets of its attributes' type words in types[] (at most max, *n of
 * them), and, when v1 is not NULL, the same table in version 1 (no type words) in v1, *v1_len bytes. */
static void walk_v2(const unsigned char *t, size_t tlen, size_t *types, size_t max, size_t *n, unsigned char *v1,
                    size_t *v1_len) {
  size_t pos = 20, out = 20, ndev = get_u32(t + 16);
  *n = 0;
  ck_assert_uint_eq(get_u32(t + 4), 2);
#define COPY(nbytes)                         \
  do {                                       \
    size_t n_ = (nbytes);                    \
    if (v1) memcpy(v1 + out, t + pos, n_);   \
    out += n_, pos += n_;                    \
  } while (0)
#define STR() COPY(4 + (get_u32(t + pos) == 0xFFFFFFFFu ? 0 : (size_t)get_u32(t + pos)))
  if (v1) memcpy(v1, t, 20);
  for (size_t d = 0; d < ndev; d++) {
    STR();
    STR();
    STR();
    STR();
    COPY(28);
    uint32_t na = get_u32(t + pos);
    COPY(4);
    for (uint32_t a = 0; a < na; a++) {
      STR();
      STR();
      if (*n < max) types[(*n)++] = pos;
      pos += 4; /* the type word, left out of version 1 */
    }
  }
#undef STR
#undef COPY
  ck_assert_uint_eq(pos, tlen);
  if (v1) {
    put_u32(v1 + 4, 1);
    put_u32(v1 + 8, (uint32_t)out);
    *v1_len = out;
  }
}

/* The types and flags the CPU backend gives travel with the table. */
START_TEST(typed_attributes_round_trip) {
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  const hdal_device *r = hdal_context_device(ctx, 4);
  ck_assert_int_eq(hdal_device_process_index(r), 1);
  const char *key, *value;
  size_t seen = 0;
  for (size_t k = 0; hdal_device_attribute(r, k, &key, &value); k++) {
    if (!strcmp(key, "cores") || !strcmp(key, "pus")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_UINT);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), HDAL_ATTRIBUTE_TOPOLOGY);
      seen++;
    } else if (!strcmp(key, "cpuset")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_STRING);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), HDAL_ATTRIBUTE_TOPOLOGY);
      ck_assert_str_eq(value, "0-1");
      seen++;
    } else if (!strcmp(key, "numa_os_index")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_UINT);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), 0);
      seen++;
    }
  }
  ck_assert_uint_eq(seen, 4);
}
END_TEST

/* A table of an hdal before typed attributes (version 1): read, its attributes strings. */
START_TEST(version_1_still_read) {
  unsigned char *v1 = malloc(len);
  size_t types[64], n, v1_len;
  walk_v2(blob, len, types, 64, &n, v1, &v1_len);
  ck_assert_uint_gt(n, 0);
  ck_assert_uint_eq(v1_len, len - 4 * n);
  ck_assert_ok(hdal_context_add_process(ctx, 1, v1, v1_len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  for (size_t i = 4; i < 8; i++) {
    const hdal_device *r = hdal_context_device(ctx, i), *a = hdal_context_device(ctx, i - 4);
    ck_assert_uint_eq(hdal_device_attribute_count(r), hdal_device_attribute_count(a));
    for (size_t k = 0; k < hdal_device_attribute_count(r); k++) {
      const char *key, *value;
      ck_assert(hdal_device_attribute(a, k, &key, &value));
      ck_assert_str_eq(hdal_device_attribute_get(r, key), value);
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_STRING);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), 0);
    }
  }
  free(v1);
}
END_TEST

/* A BOOL as an hdal before module ABI 5 may write it ("false"): read, in hdal's one spelling. */
START_TEST(old_boolean_spelling_read) {
  size_t types[64], n;
  walk_v2(blob, len, types, 64, &n, NULL, NULL);
  size_t at = types[2] - 4 - 3; /* the first device's cpuset value, "0-1" */
  ck_assert_mem_eq(blob + at + 4, "0-1", 3);
  unsigned char *b = malloc(len + 2);
  memcpy(b, blob, at);
  put_u32(b + at, 5);
  memcpy(b + at + 4, "false", 5);
  memcpy(b + at + 9, blob + types[2], len - types[2]);
  put_u32(b + at + 9, HDAL_ATTRIBUTE_BOOL);
  put_u32(b + 8, (uint32_t)(len + 2));
  ck_assert_ok(hdal_context_add_process(ctx, 1, b, len + 2));
  free(b);
  const hdal_device *r = hdal_context_device(ctx, 4);
  ck_assert_str_eq(hdal_device_attribute_get(r, "cpuset"), "no");
  const char *key;
  bool v = true;
  for (size_t k = 0; hdal_device_attribute(r, k, &key, NULL); k++)
    if (!strcmp(key, "cpuset")) ck_assert(hdal_device_attribute_bool(r, k, &v));
  ck_assert(!v);
}
END_TEST

/* A type word with bits this hdal does not know, or a value that does not read as its type: refused,
 * the context unchanged. */
START_TEST(bad_attribute_types_refused) {
  unsigned char *b = malloc(len);
  size_t types[64], n;
  walk_v2(blob, len, types, 64, &n, NULL, NULL);
  ck_assert_uint_ge(n, 3); /* cores, pus, cpuset first */
  static const struct {
    size_t attr;
    uint32_t value;
    const char *why;
  } cases[] = {
      {0, 3, "unknown attribute type or flags"},
      {0, HDAL_ATTRIBUTE_UINT | 0x200, "unknown attribute type or flags"},
      {0, 0x80000000u, "unknown attribute type or flags"},
      {2, HDAL_ATTRIBUTE_UINT, "attribute value does not read as its type"}, /* cpuset "0-1" */
      {2, HDAL_ATTRIBUTE_BOOL | HDAL_ATTRIBUTE_TOPOLOGY, "attribute value does not read as its type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memcpy(b, blob, len);
    put_u32(b + types[cases[i].attr], cases[i].value);
    char msg[200];
    snprintf(msg, sizeof msg, "hdal_context_add_process: malformed process table (%zu bytes): %s at byte %zu", len,
             cases[i].why, types[cases[i].attr]);
    ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT, msg);
    ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
    ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  }
  free(b);
}
END_TEST

START_TEST(hostile_fields_refused) {
  unsigned char *b = malloc(len + 64);
  hdal_error *e;
  struct {
    size_t at;
    uint32_t value;
    const char *why;
  } cases[] = {
      {4, 3, NULL},                        /* version 3 */
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
  put_u32(b + 4, 3);
  ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process table version 3 (flags 0) is not supported: this hdal reads "
                  "versions 1 and 2");
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
  tcase_add_test(tc, typed_attributes_round_trip);
  tcase_add_test(tc, version_1_still_read);
  tcase_add_test(tc, bad_attribute_types_refused);
  tcase_add_test(tc, old_boolean_spelling_read);
  tcase_add_test(tc, remote_devices_refuse_import);
  tcase_add_test(tc, many_processes_in_order);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
