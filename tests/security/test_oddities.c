/* SPDX-License-Identifier: BSD-3-Clause */
/* A module's odd devices (tests/modules/oddities.c) through the library and
 * the process tables: one set of device rules when a backend adds a device and
 * when a process table brings one (docs/backend-abi.md), so that what one
 * process exports every other accepts; hostile strings are kept as given (up
 * to 4096 bytes), never interpreted. */
#include <limits.h>
#include <unistd.h>
#include "testutil.h"

static char dir[] = "/tmp/hdal-oddities-XXXXXX";
static hdal_context *ctx;

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char from[4096], to[4096];
  snprintf(from, sizeof from, "%s/mod_oddities.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_oddities.so", dir);
  ck_assert_int_eq(symlink(from, to), 0);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,oddities", .backend_path = dir};
  ck_assert_ok(hdal_context_create(&o, &ctx));
}

static void teardown(void) {
  hdal_context_destroy(ctx);
  char to[4096];
  snprintf(to, sizeof to, "%s/hdal_oddities.so", dir);
  unlink(to);
  rmdir(dir);
}

START_TEST(refused_devices_counted_in_status) {
  ck_assert_str_eq(test_backend_status(ctx, "oddities"),
                   "ok: 5 devices; 4 refused: negative local hardware id -1 (and 3 more)");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 7);
  static const int ids[] = {0, 1, 2, 3, INT_MAX};
  for (size_t i = 0; i < 5; i++) {
    hdal_device *d = hdal_context_device(ctx, 2 + i);
    ck_assert_str_eq(hdal_device_platform(d), "oddities");
    ck_assert_int_eq(hdal_device_local_hardware_id(d), ids[i]);
    ck_assert_int_eq(hdal_device_id(d), (int)(2 + i));
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
  }
  hdal_device *d0 = hdal_context_device(ctx, 2), *d1 = hdal_context_device(ctx, 3);
  ck_assert_str_eq(hdal_device_kind(d0), "\x1b[31mred\x1b[0m \x1b]0;title\x07 device"); /* as given */
  ck_assert_int_eq(hdal_device_numa_node(d0), 1000000);
  ck_assert_uint_eq(hdal_device_memory_bytes(d0), UINT64_MAX);
  ck_assert_str_eq(hdal_device_kind(d1), "forged)\r\n  opencl   ok: 9 devices ("); /* the first with id 1 */
  ck_assert_int_eq(hdal_device_numa_node(d1), INT_MAX);
  hdal_device *d2 = hdal_context_device(ctx, 4);
  ck_assert_str_eq(hdal_device_attribute_get(d2, "\x1b[2J\r\nkey\xff"), "value\x1b[5m\n\xc0\xaf");
  /* 4096 bytes of each string: the two long keys are one attribute, the last value given. */
  hdal_device *d3 = hdal_context_device(ctx, 5);
  ck_assert_uint_eq(strlen(hdal_device_kind(d3)), 4096);
  ck_assert_uint_eq(hdal_device_attribute_count(d3), 2);
  const char *key, *value;
  ck_assert(hdal_device_attribute(d3, 1, &key, &value));
  ck_assert_uint_eq(strlen(key), 4096);
  ck_assert_str_eq(value, "second");
  ck_assert_str_eq(hdal_device_runtime_class_reason(d3), "backend 'oddities' is IFRT-native"); /* class 7: not PjRt */
}
END_TEST

/* What this process exports, another accepts, and sees the same devices. */
START_TEST(export_accepted_by_every_peer) {
  void *blob;
  size_t len;
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 1, .process_count = 2};
  hdal_context *peer;
  ck_assert_ok(hdal_context_create(&o, &peer));
  ck_assert_ok(hdal_context_add_process(peer, 0, blob, len));
  ck_assert_uint_eq(hdal_context_device_count(peer), 9);
  for (size_t i = 0; i < 7; i++) {
    hdal_device *a = hdal_context_device(ctx, i), *r = hdal_context_device(peer, i);
    ck_assert_int_eq(hdal_device_process_index(r), 0);
    ck_assert(!hdal_device_is_addressable(r));
    ck_assert_str_eq(hdal_device_platform(r), hdal_device_platform(a));
    ck_assert_str_eq(hdal_device_kind(r), hdal_device_kind(a));
    ck_assert_int_eq(hdal_device_local_hardware_id(r), hdal_device_local_hardware_id(a));
    ck_assert_int_eq(hdal_device_numa_node(r), hdal_device_numa_node(a));
    ck_assert_uint_eq(hdal_device_memory_bytes(r), hdal_device_memory_bytes(a));
    ck_assert_uint_eq(hdal_device_attribute_count(r), hdal_device_attribute_count(a));
    for (size_t k = 0; k < hdal_device_attribute_count(a); k++) {
      const char *key, *value;
      ck_assert(hdal_device_attribute(a, k, &key, &value));
      ck_assert_str_eq(hdal_device_attribute_get(r, key), value);
    }
  }
  /* and the other way: this process adds the peer's table, and a table with
   * the oddities' devices under another index. */
  void *peer_blob;
  size_t peer_len;
  ck_assert_ok(hdal_context_export_devices(peer, &peer_blob, &peer_len));
  ck_assert_ok(hdal_context_add_process(ctx, 1, peer_blob, peer_len));
  hdal_context_destroy(peer);
  free(peer_blob);
  free(blob);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 9);
}
END_TEST

/* The table's reader applies the same rules: a negative local id or a NUMA
 * node below -1 written into a table is refused with the rule's words. */
START_TEST(table_reader_applies_the_same_rules) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "oddities", .backend_path = dir};
  hdal_context *odd;
  ck_assert_ok(hdal_context_create(&o, &odd));
  void *blob;
  size_t len;
  ck_assert_ok(hdal_context_export_devices(odd, &blob, &len));
  hdal_context_destroy(odd);
  /* The first device's local id follows the host's name and id (from byte 20) and the device's four strings. */
  unsigned char *b = blob;
  size_t at = 20;
  for (int s = 0; s < 6; s++) {
    uint32_t n = (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24;
    at += 4 + (n == 0xFFFFFFFFu ? 0 : n);
  }
  ck_assert_uint_eq(b[at], 0); /* local id 0 */
  memset(b + at, 0xFF, 4);     /* -1 */
  hdal_context_options p = {.struct_size = sizeof p, .backends = "cpu", .process_index = 1, .process_count = 2};
  hdal_context *peer;
  ck_assert_ok(hdal_context_create(&p, &peer));
  char want[200];
  snprintf(want, sizeof want,
           "hdal_context_add_process: malformed process table (%zu bytes): negative local hardware id -1 at byte %zu",
           len, at + 32); /* where the device's fixed fields end */
  ck_assert_error(hdal_context_add_process(peer, 0, blob, len), HDAL_INVALID_ARGUMENT, want);
  ck_assert_uint_eq(hdal_context_device_count(peer), 2);
  hdal_context_destroy(peer);
  free(blob);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  Suite *s = suite_create("oddities");
  TCase *tc = tcase_create("oddities");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, refused_devices_counted_in_status);
  tcase_add_test(tc, export_accepted_by_every_peer);
  tcase_add_test(tc, table_reader_applies_the_same_rules);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
