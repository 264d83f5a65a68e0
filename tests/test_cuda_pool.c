/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on CUDA devices, against the fake driver (docs/memory.md):
 * the device's default memory pool where the driver has one, hdal's pool with
 * stream-ordered reuse where it has not, and out-of-memory retries. */
#include "testgpu.h"
#include "fakecuda/testcuda.h"

static test_cuda cu;

static hdal_context *setup(void) {
  test_use_fake_runtime("HDAL_CUDA_LIBRARY", "fakecuda");
  ck_assert(test_cuda_open(&cu));
  ck_assert_int_eq(cu.cuInit(0), 0);
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_msg(!strncmp(test_backend_status(ctx, "cuda"), "ok: ", 4), "%s", test_backend_status(ctx, "cuda"));
  return ctx;
}

static hdal_device *gpu(hdal_context *ctx) {
  hdal_device *d = test_platform_device(ctx, "cuda", 0);
  ck_assert_msg(d != NULL, "no CUDA device");
  return d;
}

static float host[1024];

static void no_deleter(DLManagedTensor *m) { free(m); }

/* host[] copied onto the GPU. */
static hdal_buffer *to_gpu(hdal_context *ctx) {
  static int64_t shape[1] = {1024};
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  m->deleter = no_deleter;
  hdal_capsule *c = hdal_capsule_wrap(m);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, gpu(ctx), NULL, &b));
  hdal_capsule_destroy(c);
  float back[1024];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, sizeof back));
  ck_assert(!memcmp(back, host, sizeof back));
  return b;
}

static hdal_memory_stats stats(hdal_context *ctx) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(gpu(ctx), &s));
  return s;
}

static void synchronize(void) {
  CUdevice dev;
  CUcontext c;
  ck_assert_int_eq(cu.cuDeviceGet(&dev, 0), 0);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&c, dev), 0);
  ck_assert_int_eq(cu.cuCtxPushCurrent(c), 0);
  ck_assert_int_eq(cu.cuStreamSynchronize(NULL), 0);
  ck_assert_int_eq(cu.cuCtxPopCurrent(&c), 0);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRelease(0), 0);
}

START_TEST(driver_pool_serves_and_keeps) {
  hdal_context *ctx = setup();
  size_t live = cu.fakecuda_live_allocations();
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  ck_assert_uint_eq(s.num_allocs, 1);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_buffer_release(a);
  synchronize(); /* the release threshold hdal set keeps the memory through synchronisation */
  s = stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(b), pa);
  s = stats(ctx);
  ck_assert_uint_eq(s.num_allocs, 2);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemAlloc_v2"), 0);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_device_trim(gpu(ctx)));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 0);
  ck_assert_uint_eq(cu.fakecuda_live_allocations(), live);
  hdal_context_destroy(ctx);
}
END_TEST

/* The default pool outlives the context: what it caches for hdal goes back
 * with it, even while another user keeps the primary context (and so the
 * pool's memory) alive. */
START_TEST(context_gives_back_the_driver_pools_cache) {
  hdal_context *ctx = setup();
  size_t live = cu.fakecuda_live_allocations();
  hdal_buffer_release(to_gpu(ctx));
  ck_assert_uint_eq(cu.fakecuda_live_allocations(), live + 1);
  CUdevice dev;
  CUcontext c;
  ck_assert_int_eq(cu.cuDeviceGet(&dev, 0), 0);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&c, dev), 0); /* the caller's own use of the device */
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(cu.fakecuda_live_allocations(), live);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRelease(0), 0);
}
END_TEST

/* No stream-ordered allocator: hdal's pool, with a slow legacy stream. */
START_TEST(block_freed_behind_queued_work_waits) {
  setenv("FAKECUDA_MEMPOOLS", "0", 1);
  setenv("FAKECUDA_SLOW_LEGACY", "1", 1);
  hdal_context *ctx = setup();
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  cu.fakecuda_legacy_launch(); /* a kernel using a, still running */
  hdal_buffer_release(a);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_ne(hdal_buffer_data(b), pa); /* not while the kernel may use it */
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  ck_assert_uint_eq(s.bytes_reserved, 8192);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  /* b's copy went through the legacy stream: the kernel is done, a's block is free. */
  hdal_buffer *c = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(c), pa);
  s = stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(s.num_allocs, 3);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemAlloc_v2"), 2);
  /* Trim waits for queued work, then frees. */
  cu.fakecuda_legacy_launch();
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  ck_assert_ok(hdal_device_trim(gpu(ctx)));
  ck_assert_uint_eq(stats(ctx).bytes_reserved, 0);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemFree_v2"), 2);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(caching_off_uses_cuMemAlloc) {
  setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = setup();
  hdal_buffer *a = to_gpu(ctx);
  hdal_buffer_release(a);
  a = to_gpu(ctx);
  hdal_buffer_release(a);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemAlloc_v2"), 2);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemFree_v2"), 2);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 0);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* Out of memory: the cache goes back and the allocation is tried once more. */
START_TEST(out_of_memory_trims_and_retries) {
  setenv("FAKECUDA_MEMPOOLS", "0", 1);
  setenv("FAKECUDA_MEMORY", "6000", 1);
  hdal_context *ctx = setup();
  hdal_buffer *a = to_gpu(ctx);
  hdal_buffer_release(a); /* 4096 cached */
  int64_t shape[1] = {500};
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  m->deleter = no_deleter;
  hdal_capsule *c = hdal_capsule_wrap(m);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, gpu(ctx), NULL, &b)); /* 2000 bytes fit once 4096 went back */
  hdal_capsule_destroy(c);
  hdal_memory_stats s = stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 2000);
  ck_assert_uint_eq(s.bytes_in_use, 2000);
  ck_assert_uint_eq(cu.fakecuda_calls("cuMemFree_v2"), 1);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  for (int i = 0; i < 1024; i++) host[i] = (float)i;
  Suite *s = suite_create("cuda_pool");
  TCase *tc = tcase_create("cuda_pool");
  tcase_add_test(tc, driver_pool_serves_and_keeps);
  tcase_add_test(tc, context_gives_back_the_driver_pools_cache);
  tcase_add_test(tc, block_freed_behind_queued_work_waits);
  tcase_add_test(tc, caching_off_uses_cuMemAlloc);
  tcase_add_test(tc, out_of_memory_trims_and_retries);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
