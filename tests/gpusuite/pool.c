/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on a GPU API's fake (docs/memory.md), for every face
 * (gpusuite.h): the device's default memory pool where the runtime has one
 * (its stream-ordered allocator), hdal's pool where it has none or where it is
 * taken away, with stream-ordered reuse behind slow work, statistics,
 * trimming, the limit and out-of-memory retries.  Each step's calls, as the
 * fake counts them, are the program's data (gpu_pool). */
#include "gpusuite.h"

static const gpu_pool *spec;
static float host[1024];

static hdal_context *setup(void) {
  gpu_use_fake();
  gpu_set("DEVICES", "1");
  return gpu_context(gpu_backends(true));
}

/* Without the device's default pool: hdal's. */
static void no_default_pool(void) {
  if (gpu->mempools) gpu_set("MEMPOOLS", "0");
}

static void no_deleter(DLManagedTensor *m) { free(m); }

hdal_buffer *gpu_pool_copy(hdal_context *ctx, int64_t n) {
  int64_t shape[1] = {n};
  ck_assert_int_le(n, 1024);
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  m->deleter = no_deleter;
  hdal_capsule *c = hdal_capsule_wrap(m);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, gpu_device(ctx, 0), NULL, &b));
  hdal_capsule_destroy(c);
  float back[1024];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, (size_t)n * sizeof(float)));
  ck_assert(!memcmp(back, host, (size_t)n * sizeof(float)));
  return b;
}

static hdal_buffer *copy(hdal_context *ctx) { return gpu_pool_copy(ctx, 1024); }

hdal_memory_stats gpu_pool_stats(hdal_context *ctx) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(gpu_device(ctx, 0), &s));
  return s;
}

/* A block released is kept (through a synchronisation: the release threshold
 * hdal set on the default pool; the fakes', like the runtimes', is 0) and
 * handed out again; trim gives it back. */
static void serves_and_keeps(bool default_pool) {
  if (!default_pool) no_default_pool();
  hdal_context *ctx = setup();
  size_t live = gpu_hook.live_allocations();
  hdal_buffer *a = copy(ctx);
  void *pa = hdal_buffer_data(a);
  hdal_memory_stats s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  ck_assert_uint_eq(s.num_allocs, 1);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_buffer_release(a);
  if (spec->synchronize) spec->synchronize();
  s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  hdal_buffer *b = copy(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(b), pa);
  s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.num_allocs, 2);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(s.bytes_reserved, 4096);
  gpu_assert_calls(default_pool ? spec->default_reused : spec->hdal_reused);
  hdal_buffer_release(b);
  ck_assert_uint_eq(gpu_hook.live_allocations(), live + 1); /* cached */
  if (default_pool) gpu_assert_calls(spec->default_released);
  ck_assert_ok(hdal_device_trim(gpu_device(ctx, 0)));
  ck_assert_uint_eq(gpu_pool_stats(ctx).bytes_reserved, 0);
  gpu_assert_calls(default_pool ? spec->default_trimmed : spec->hdal_trimmed);
  ck_assert_uint_eq(gpu_hook.live_allocations(), live);
  hdal_context_destroy(ctx);
}

/* Out of memory: the pool's cache goes back and the allocation is tried once more. */
static void trims_and_retries(bool default_pool) {
  if (!default_pool) no_default_pool();
  gpu_set("MEMORY", "6000");
  hdal_context *ctx = setup();
  hdal_buffer_release(copy(ctx)); /* 4096 cached */
  hdal_buffer *b = gpu_pool_copy(ctx, 500); /* 2000 bytes fit once 4096 went back */
  hdal_memory_stats s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 2000);
  ck_assert_uint_eq(s.bytes_in_use, 2000);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  gpu_assert_calls(default_pool ? spec->default_retried : spec->hdal_retried);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}

/* ---- the device's default pool ---- */

START_TEST(default_pool_serves_and_keeps) { serves_and_keeps(true); }
END_TEST

/* The default pool outlives the context: what it caches for hdal goes back
 * with it (even while another user keeps the device, and so the pool's
 * memory, alive). */
START_TEST(context_gives_back_the_default_pools_cache) {
  hdal_context *ctx = setup();
  size_t live = gpu_hook.live_allocations();
  hdal_buffer_release(copy(ctx));
  ck_assert_uint_eq(gpu_hook.live_allocations(), live + 1);
  if (spec->keep_device) spec->keep_device(true);
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(gpu_hook.live_allocations(), live);
  if (spec->keep_device) spec->keep_device(false);
}
END_TEST

START_TEST(out_of_memory_trims_the_default_pool_and_retries) { trims_and_retries(true); }
END_TEST

/* HDAL_MEMORY_POOL_LIMIT counts the default pool's reserved bytes: over it, the cache goes back first. */
START_TEST(limit_trims_the_default_pool) {
  setenv("HDAL_MEMORY_POOL_LIMIT", "6000", 1);
  hdal_context *ctx = setup();
  hdal_buffer_release(copy(ctx));
  ck_assert_uint_eq(gpu_pool_stats(ctx).bytes_reserved, 4096);
  hdal_buffer *b = gpu_pool_copy(ctx, 500);
  ck_assert_uint_eq(gpu_pool_stats(ctx).bytes_reserved, 2000);
  gpu_assert_calls(spec->default_limited);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- hdal's pool ---- */

START_TEST(no_default_pool_uses_hdals) { serves_and_keeps(false); }
END_TEST

/* hdal's pool with slow work on its stream 0: a block freed behind a running
 * kernel is not handed out before the kernel is done (the fence: an event
 * recorded when the block went back); trim waits for queued work, then frees. */
START_TEST(block_freed_behind_queued_work_waits) {
  no_default_pool();
  setenv(gpu->slow, "1", 1);
  hdal_context *ctx = setup();
  size_t live = gpu_hook.live_allocations();
  hdal_buffer *a = copy(ctx);
  void *pa = hdal_buffer_data(a);
  gpu_hook.slow_launch(); /* a kernel using a, still running */
  hdal_buffer_release(a);
  hdal_buffer *b = copy(ctx);
  ck_assert_ptr_ne(hdal_buffer_data(b), pa); /* not while the kernel may use it */
  gpu_assert_calls(spec->fenced);
  hdal_memory_stats s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  ck_assert_uint_eq(s.bytes_reserved, 8192);
  ck_assert_uint_eq(s.bytes_in_use, 4096);
  /* b's copy went through stream 0, waited for: the kernel is done, a's block is free. */
  hdal_buffer *c = copy(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(c), pa);
  gpu_assert_calls(spec->fence_done);
  s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.num_pool_hits, 1);
  ck_assert_uint_eq(s.num_allocs, 3);
  gpu_hook.slow_launch();
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  gpu_assert_calls(spec->fence_released);
  ck_assert_ok(hdal_device_trim(gpu_device(ctx, 0)));
  ck_assert_uint_eq(gpu_pool_stats(ctx).bytes_reserved, 0);
  gpu_assert_calls(spec->fence_trimmed);
  ck_assert_uint_eq(gpu_hook.live_allocations(), live);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(out_of_memory_trims_hdals_pool_and_retries) { trims_and_retries(false); }
END_TEST

START_TEST(caching_off_allocates_each_time) {
  setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = setup();
  hdal_buffer_release(copy(ctx));
  hdal_buffer_release(copy(ctx));
  gpu_assert_calls(spec->caching_off);
  hdal_memory_stats s = gpu_pool_stats(ctx);
  ck_assert_uint_eq(s.bytes_reserved, 0);
  ck_assert_uint_eq(s.num_pool_hits, 0);
  hdal_context_destroy(ctx);
}
END_TEST

void gpu_pool_add(TCase *tc, const gpu_pool *s, bool default_pool) {
  spec = s;
  for (int i = 0; i < 1024; i++) host[i] = (float)i;
  if (default_pool) {
    tcase_add_test(tc, default_pool_serves_and_keeps);
    tcase_add_test(tc, context_gives_back_the_default_pools_cache);
    tcase_add_test(tc, out_of_memory_trims_the_default_pool_and_retries);
    tcase_add_test(tc, limit_trims_the_default_pool);
  }
  tcase_add_test(tc, no_default_pool_uses_hdals);
  tcase_add_test(tc, block_freed_behind_queued_work_waits);
  tcase_add_test(tc, out_of_memory_trims_hdals_pool_and_retries);
  tcase_add_test(tc, caching_off_allocates_each_time);
}
