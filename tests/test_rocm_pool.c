/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on ROCm devices, against the fake HIP runtime, both ABIs
 * (docs/memory.md, docs/rocm.md): the device's default memory pool where the
 * runtime has one (hipMallocAsync/hipFreeAsync), hdal's pool where its calls
 * answer hipErrorNotSupported or a ROCm 5.0 runtime lacks them, with
 * stream-ordered reuse behind a slow null stream, statistics, trimming, the
 * limit and out-of-memory retries. */
#include "testgpu.h"
#include "fakehip/testhip.h"

static const char *fake = "fakehip6";
static test_hip hip;

static void abi5(void) { fake = "fakehip5"; }
static void abi6(void) { fake = "fakehip6"; }
static void rocm50(void) { fake = "fakehip50"; }

static hdal_context *setup(void) {
  test_use_fake_runtime("HDAL_ROCM_LIBRARY", fake);
  setenv("FAKEHIP_DEVICES", "1", 1);
  ck_assert_msg(test_hip_open(&hip), "cannot open %s", hip.path);
  ck_assert_int_eq(hip.hipInit(0), 0);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_msg(!strncmp(test_backend_status(ctx, "rocm"), "ok: ", 4), "%s", test_backend_status(ctx, "rocm"));
  return ctx;
}

static hdal_device *gpu(hdal_context *ctx) {
  hdal_device *d = test_platform_device(ctx, "rocm", 0);
  ck_assert_msg(d != NULL, "no ROCm device");
  return d;
}

static float host[1024];

static void no_deleter(DLManagedTensor *m) { free(m); }

/* The first n floats of host[] copied onto the GPU. */
static hdal_buffer *to_gpu_n(hdal_context *ctx, int64_t n) {
  int64_t shape[1] = {n};
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  m->deleter = no_deleter;
  hdal_capsule *c = hdal_capsule_wrap(m);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, gpu(ctx), NULL, &b));
  hdal_capsule_destroy(c);
  float back[1024];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, (size_t)n * sizeof(float)));
  ck_assert(!memcmp(back, host, (size_t)n * sizeof(float)));
  return b;
}

static hdal_buffer *to_gpu(hdal_context *ctx) { return to_gpu_n(ctx, 1024); }

static hdal_memory_stats stats(hdal_context *ctx) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(gpu(ctx), &s));
  return s;
}

START_TEST(runtime_pool_serves_and_keeps) {
  hdal_context *ctx = setup();
  size_t live = hip.fakehip_live_allocations();
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  ck_assert_uint_eq(s.num_allocs, 1);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_buffer_release(a);
  /* The release threshold hdal set keeps the memory through synchronisation
   * (the fake's default, like HIP's, is 0: everything would go back). */
  ck_assert_int_eq(hip.hipStreamSynchronize(NULL), 0);
  s = stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(b), pa);
  s = stats(ctx);
  ck_assert_uint_eq(s.num_allocs, 2);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipFreeAsync"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMalloc"), 0);
  hdal_buffer_release(b);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live + 1); /* cached by the runtime's pool */
  /* hipFreeAsync is stream-ordered: no fence. */
  ck_assert_uint_eq(hip.fakehip_calls("hipEventRecord"), 0);
  ck_assert_uint_eq(hip.fakehip_calls("hipEventQuery"), 0);
  ck_assert_ok(hdal_device_trim(gpu(ctx)));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 0);
  ck_assert_uint_eq(hip.fakehip_calls("hipMemPoolTrimTo"), 1);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live);
  ck_assert_uint_eq(hip.fakehip_calls("hipFree"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* The default pool outlives the context: what it caches for hdal goes back with it. */
START_TEST(context_gives_back_the_runtime_pools_cache) {
  hdal_context *ctx = setup();
  size_t live = hip.fakehip_live_allocations();
  hdal_buffer_release(to_gpu(ctx));
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live + 1);
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live);
}
END_TEST

/* hdal's pool, with hipMalloc and hipFree: the runtime's calls answer
 * hipErrorNotSupported (FAKEHIP_MEMPOOLS=0), or it has none (ROCm 5.0). */
static void hdal_pool_serves(void) {
  hdal_context *ctx = setup();
  size_t live = hip.fakehip_live_allocations();
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  hdal_buffer_release(a);
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 4096);
  ck_assert_int_eq(hip.hipStreamSynchronize(NULL), 0);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(b), pa);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.num_allocs, 2);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  ck_assert_uint_eq(hip.fakehip_calls("hipMalloc"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 0);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_device_trim(gpu(ctx)));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 0);
  ck_assert_uint_eq(hip.fakehip_calls("hipFree"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMemPoolTrimTo"), 0);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live);
  hdal_context_destroy(ctx);
}

START_TEST(no_runtime_pool_uses_hdals) {
  setenv("FAKEHIP_MEMPOOLS", "0", 1);
  hdal_pool_serves();
}
END_TEST

START_TEST(rocm50_without_the_entry_points_uses_hdals) {
  void *h = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.so", getenv("HDAL_TEST_MODULES"), fake);
  ck_assert_ptr_nonnull(h = dlopen(path, RTLD_NOW | RTLD_LOCAL));
  ck_assert_ptr_null(dlsym(h, "hipMallocAsync"));
  ck_assert_ptr_null(dlsym(h, "hipDeviceGetDefaultMemPool"));
  dlclose(h);
  hdal_pool_serves();
}
END_TEST

/* hdal's pool with a slow null stream: a block freed behind a running kernel
 * is not handed out before the kernel is done (the fence: an event recorded on
 * the null stream when the block went back). */
START_TEST(block_freed_behind_queued_work_waits) {
  setenv("FAKEHIP_MEMPOOLS", "0", 1);
  setenv("FAKEHIP_SLOW_NULL", "1", 1);
  hdal_context *ctx = setup();
  size_t live = hip.fakehip_live_allocations();
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  hip.fakehip_null_launch(); /* a kernel using a, still running */
  hdal_buffer_release(a);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_ne(hdal_buffer_data(b), pa); /* not while the kernel may use it */
  ck_assert_uint_eq(hip.fakehip_calls("hipEventRecord"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipEventQuery"), 1); /* hipErrorNotReady */
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  ck_assert_uint_eq(s.bytes_reserved, 8192);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  /* b's copy went through the null stream: the kernel is done, a's block is free. */
  hdal_buffer *c = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(c), pa);
  ck_assert_uint_eq(hip.fakehip_calls("hipEventQuery"), 2);
  s = stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(s.num_allocs, 3);
  ck_assert_uint_eq(hip.fakehip_calls("hipMalloc"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 0);
  /* Trim waits for queued work, then frees. */
  hip.fakehip_null_launch();
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  ck_assert_uint_eq(hip.fakehip_calls("hipFree"), 0);
  ck_assert_ok(hdal_device_trim(gpu(ctx)));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 0);
  ck_assert_uint_eq(hip.fakehip_calls("hipEventSynchronize"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipFree"), 2);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), live);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(caching_off_uses_hipMalloc) {
  setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = setup();
  hdal_buffer_release(to_gpu(ctx));
  hdal_buffer_release(to_gpu(ctx));
  ck_assert_uint_eq(hip.fakehip_calls("hipMalloc"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipFree"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 0);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 0);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* Out of memory: the runtime pool's cache goes back and the allocation is tried once more. */
START_TEST(out_of_memory_trims_the_runtime_pool_and_retries) {
  setenv("FAKEHIP_MEMORY", "6000", 1);
  hdal_context *ctx = setup();
  hdal_buffer_release(to_gpu(ctx)); /* 4096 cached by the runtime */
  hdal_buffer *b = to_gpu_n(ctx, 500); /* 2000 bytes fit once 4096 went back */
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 2000);
  ck_assert_uint_eq(s.bytes_in_use, 2000);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 3); /* 4096, 2000 refused, 2000 */
  ck_assert_uint_eq(hip.fakehip_calls("hipMemPoolTrimTo"), 1);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* HDAL_MEMORY_POOL_LIMIT counts the runtime pool's reserved bytes: over it, the cache goes back first. */
START_TEST(limit_trims_the_runtime_pool) {
  setenv("HDAL_MEMORY_POOL_LIMIT", "6000", 1);
  hdal_context *ctx = setup();
  hdal_buffer_release(to_gpu(ctx));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 4096);
  hdal_buffer *b = to_gpu_n(ctx, 500);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 2000);
  ck_assert_uint_eq(hip.fakehip_calls("hipMemPoolTrimTo"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMallocAsync"), 2); /* no refusal: trimmed before asking */
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

static TCase *cases(const char *name, void (*abi)(void)) {
  TCase *tc = tcase_create(name);
  tcase_add_unchecked_fixture(tc, abi, NULL);
  tcase_add_checked_fixture(tc, abi, NULL);
  if (abi == rocm50) {
    tcase_add_test(tc, rocm50_without_the_entry_points_uses_hdals);
    tcase_add_test(tc, block_freed_behind_queued_work_waits);
    return tc;
  }
  tcase_add_test(tc, runtime_pool_serves_and_keeps);
  tcase_add_test(tc, context_gives_back_the_runtime_pools_cache);
  tcase_add_test(tc, no_runtime_pool_uses_hdals);
  tcase_add_test(tc, block_freed_behind_queued_work_waits);
  tcase_add_test(tc, caching_off_uses_hipMalloc);
  tcase_add_test(tc, out_of_memory_trims_the_runtime_pool_and_retries);
  tcase_add_test(tc, limit_trims_the_runtime_pool);
  return tc;
}

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  unsetenv("FAKEHIP_MEMPOOLS");
  unsetenv("FAKEHIP_MEMORY");
  unsetenv("FAKEHIP_SLOW_NULL");
  for (int i = 0; i < 1024; i++) host[i] = (float)i;
  Suite *s = suite_create("rocm_pool");
  suite_add_tcase(s, cases("rocm6", abi6));
  suite_add_tcase(s, cases("rocm5", abi5));
  suite_add_tcase(s, cases("rocm50", rocm50));
  return test_run_suite(s);
}
