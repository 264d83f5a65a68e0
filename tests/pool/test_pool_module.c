/* SPDX-License-Identifier: BSD-3-Clause */
/* The pool offered to modules (docs/backend-abi.md, docs/memory.md): a module
 * allocates through hdal_backend_host::memory_allocate and gives back with
 * memory_release, the device's statistics count it, the core's own copies
 * share the same cache, and a module compiled before the pool's buffer
 * operations (a shorter table) is served without them. */
#include <unistd.h>
#include <hdal/backend.h>
#include "testutil.h"

/* Filled by tests/modules/poolprobe.c (found with dlsym). */
const hdal_backend_host *hdal_test_pool_host;
hdal_device *hdal_test_pool_device;
int hdal_test_pool_counts[2]; /* the module's allocations and releases */

static char dir[] = "/tmp/hdal-test-pool-XXXXXX";

static hdal_memory_stats stats(void) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(hdal_test_pool_device, &s));
  return s;
}

static void no_deleter(DLManagedTensor *m) { (void)m; }

START_TEST(module_allocations_share_the_pool) {
  char from[4096], to[4200];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(from, sizeof from, "%s/mod_poolprobe.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_poolprobe.so", dir);
  ck_assert_int_eq(symlink(from, to), 0);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,poolprobe";
  o.backend_path = dir;
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "poolprobe"), "ok: 1 device");
  const hdal_backend_host *host = hdal_test_pool_host;
  hdal_device *d = hdal_test_pool_device;
  ck_assert_ptr_nonnull(host);
  ck_assert_ptr_nonnull(host->memory_allocate);

  void *h = NULL, *h2 = NULL;
  ck_assert_ok(host->memory_allocate(d, 1000, &h));
  ck_assert_int_eq(hdal_test_pool_counts[0], 1);
  hdal_memory_stats s = stats();
  ck_assert_uint_eq(s.bytes_in_use, 1000);
  ck_assert_uint_eq(s.num_allocs, 1);
  host->memory_release(d, h, 1000);
  s = stats();
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.bytes_reserved, 1000);
  ck_assert_int_eq(hdal_test_pool_counts[1], 0); /* cached: no fence op, reusable at once */
  ck_assert_ok(host->memory_allocate(d, 1000, &h2));
  ck_assert_ptr_eq(h2, h);
  ck_assert_int_eq(hdal_test_pool_counts[0], 1);
  host->memory_release(d, h2, 1000);

  /* The core's copy onto the device takes the block the module gave back. */
  static unsigned char bytes[1000];
  static int64_t shape[1] = {1000};
  DLManagedTensor m = {.dl_tensor = {.data = bytes, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLUInt, 8, 1},
                                     .shape = shape},
                       .deleter = no_deleter};
  hdal_capsule *c = hdal_capsule_wrap(&m);
  hdal_import_options io = {.struct_size = sizeof io, .copy = HDAL_COPY_ALWAYS};
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, &io, &b));
  hdal_capsule_destroy(c);
  ck_assert_ptr_eq(hdal_buffer_data(b), h);
  s = stats();
  ck_assert_uint_eq(s.num_allocs, 3);
  ck_assert_uint_eq(s.num_pool_hits, 2);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_device_trim(d));
  ck_assert_int_eq(hdal_test_pool_counts[1], 1);
  ck_assert_uint_eq(stats().bytes_reserved, 0);
  hdal_context_destroy(ctx);
  unlink(to);
  rmdir(dir);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  Suite *s = suite_create("pool_module");
  TCase *tc = tcase_create("pool_module");
  tcase_add_test(tc, module_allocations_share_the_pool);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
