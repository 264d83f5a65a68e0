/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on the CPU device (docs/memory.md): reuse across
 * import, copy_to_device, compaction and export; the statistics after each
 * operation; the limit; trim; HDAL_MEMORY_POOL=0; threads, and the limit
 * under threads (tests/pool/pool_race.h). */
#include <pthread.h>
#include "dlpack_testutil.h"
#include "pool_race.h"

#define N 1000 /* floats: 4000 bytes */

static hdal_memory_stats stats_of(hdal_device *d) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(d, &s));
  return s;
}

#define ck_assert_stats(d, in_use, peak, reserved, limit, allocs, hits)  \
  do {                                                                   \
    hdal_memory_stats s_ = stats_of(d);                                  \
    ck_assert_uint_eq(s_.bytes_in_use, (in_use));                        \
    ck_assert_uint_eq(s_.peak_bytes_in_use, (peak));                     \
    ck_assert_uint_eq(s_.bytes_reserved, (reserved));                    \
    ck_assert_uint_eq(s_.bytes_limit, (limit));                          \
    ck_assert_uint_eq(s_.num_allocs, (allocs));                          \
    ck_assert_uint_eq(s_.num_pool_hits, (hits));                         \
  } while (0)

/* A copying import of n floats 0, 1, 2... */
static hdal_buffer *import_copy(hdal_context *ctx, size_t n) {
  int64_t shape[1] = {(int64_t)n};
  tt_tensor *t = tt_make(tt_iota(n), true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_buffer *b = NULL;
  hdal_capsule *c = tt_legacy(t);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_always, &b));
  hdal_capsule_destroy(c);
  return b;
}

static void check_iota(const hdal_buffer *b, size_t n) {
  float *v = malloc(n * sizeof *v);
  ck_assert_ok(hdal_buffer_copy_to_host(b, v, n * sizeof *v));
  for (size_t i = 0; i < n; i++) ck_assert_float_eq(v[i], (float)i);
  free(v);
}

START_TEST(fresh_device_reports_zeros) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  ck_assert_stats(d, 0, 0, 0, 0, 0, 0);
  /* A zero-copy import allocates nothing. */
  int64_t shape[1] = {N};
  tt_tensor *t = tt_make(tt_iota(N), true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_buffer *b;
  hdal_capsule *c = tt_legacy(t);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b));
  hdal_capsule_destroy(c);
  ck_assert_stats(d, 0, 0, 0, 0, 0, 0);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_device_trim(d));
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(import_reuses_a_freed_block) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  hdal_buffer *a = import_copy(ctx, N);
  void *first = hdal_buffer_data(a);
  ck_assert_stats(d, 4000, 4000, 4000, 0, 1, 0);
  hdal_buffer_release(a);
  ck_assert_stats(d, 0, 4000, 4000, 0, 1, 0);
  hdal_buffer *b = import_copy(ctx, N); /* the same size */
  ck_assert_ptr_eq(hdal_buffer_data(b), first);
  check_iota(b, N);
  ck_assert_stats(d, 4000, 4000, 4000, 0, 2, 1);
  hdal_buffer *c = import_copy(ctx, N); /* the block is taken: a new one */
  ck_assert_ptr_ne(hdal_buffer_data(c), first);
  ck_assert_stats(d, 8000, 8000, 8000, 0, 3, 1);
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  ck_assert_stats(d, 0, 8000, 8000, 0, 3, 1);
  ck_assert_ok(hdal_device_trim(d));
  ck_assert_stats(d, 0, 8000, 0, 0, 3, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(copy_to_device_compaction_and_export_reuse) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  hdal_buffer *a = import_copy(ctx, N), *b;
  ck_assert_ok(hdal_buffer_copy_to_device(a, d, &b));
  ck_assert_stats(d, 8000, 8000, 8000, 0, 2, 0);
  void *bdata = hdal_buffer_data(b);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_buffer_copy_to_device(a, d, &b)); /* copy_to_device: from the pool */
  ck_assert_ptr_eq(hdal_buffer_data(b), bdata);
  check_iota(b, N);
  ck_assert_stats(d, 8000, 8000, 8000, 0, 3, 1);
  hdal_buffer_release(b);

  /* Compaction: a transposed view exported with a copy. */
  int64_t shape[2] = {10, 100}, strides[2] = {1, 10};
  tt_tensor *t = tt_make(tt_iota(N), true, 2, shape, strides, tt_f32, tt_cpu);
  hdal_buffer *v;
  hdal_capsule *vc = tt_legacy(t);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, vc, NULL, &tt_never, &v));
  hdal_capsule_destroy(vc);
  ck_assert_stats(d, 4000, 8000, 8000, 0, 3, 1);
  hdal_export_options eo = HDAL_EXPORT_OPTIONS_INIT;
  eo.copy = HDAL_COPY_ALWAYS;
  hdal_capsule *cap;
  ck_assert_ok(hdal_buffer_to_dlpack(v, &eo, &cap));
  DLManagedTensor *m = hdal_capsule_pointer(cap);
  ck_assert_ptr_eq(m->dl_tensor.data, bdata); /* the compacted copy: from the pool */
  ck_assert_float_eq(((float *)m->dl_tensor.data)[1], 10.0f);
  ck_assert_stats(d, 8000, 8000, 8000, 0, 4, 2);
  hdal_capsule_destroy(cap); /* the consumer is done: the block goes back */
  ck_assert_stats(d, 4000, 8000, 8000, 0, 4, 2);
  ck_assert_ok(hdal_buffer_to_dlpack(a, &eo, &cap)); /* export with a copy: from the pool again */
  ck_assert_ptr_eq(((DLManagedTensor *)hdal_capsule_pointer(cap))->dl_tensor.data, bdata);
  ck_assert_stats(d, 8000, 8000, 8000, 0, 5, 3);
  hdal_capsule_destroy(cap);
  hdal_buffer_release(v);
  hdal_buffer_release(a);
  ck_assert_stats(d, 0, 8000, 8000, 0, 5, 3);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(caching_off) {
  setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  hdal_buffer *a = import_copy(ctx, N);
  ck_assert_stats(d, 4000, 4000, 4000, 0, 1, 0);
  hdal_buffer_release(a);
  ck_assert_stats(d, 0, 4000, 0, 0, 1, 0);
  a = import_copy(ctx, N);
  check_iota(a, N);
  ck_assert_stats(d, 4000, 4000, 4000, 0, 2, 0);
  hdal_buffer_release(a);
  ck_assert_stats(d, 0, 4000, 0, 0, 2, 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(limit) {
  setenv("HDAL_MEMORY_POOL_LIMIT", "1", 1); /* the option wins */
  hdal_context *ctx = race_context("cpu", "8000");
  hdal_device *d = tt_cpu_device(ctx);
  ck_assert_stats(d, 0, 0, 0, 8000, 0, 0);
  hdal_buffer *a = import_copy(ctx, N), *b = import_copy(ctx, N), *c = NULL;
  ck_assert_stats(d, 8000, 8000, 8000, 8000, 2, 0);
  int64_t shape[1] = {N};
  tt_tensor *t = tt_make(tt_iota(N), true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_capsule *cap = tt_legacy(t);
  char msg[256];
  snprintf(msg, sizeof msg,
           "device 0 (%s): allocating 4000 bytes would pass its memory limit of 8000 bytes (8000 in use)",
           hdal_device_kind(d));
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, NULL, &tt_always, &c), HDAL_RESOURCE_EXHAUSTED, msg);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor"); /* nothing changed */
  ck_assert_stats(d, 8000, 8000, 8000, 8000, 2, 0);
  hdal_buffer_release(a);
  /* Another size class: the cached block goes back to make room. */
  hdal_buffer *e = import_copy(ctx, 500);
  ck_assert_stats(d, 4000 + 2000, 8000, 4000 + 2000, 8000, 3, 0);
  hdal_buffer_release(e);
  hdal_buffer_release(b);
  hdal_capsule_destroy(cap);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(limit_as_a_percentage) {
  setenv("HDAL_MEMORY_POOL_LIMIT", "50%", 1);
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  ck_assert_uint_eq(stats_of(d).bytes_limit, hdal_device_memory_bytes(d) / 100 * 50);
  hdal_buffer *a = import_copy(ctx, N);
  ck_assert_uint_eq(stats_of(d).bytes_limit, hdal_device_memory_bytes(d) / 100 * 50);
  hdal_buffer_release(a);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(bad_limits) {
  static const char *bad[] = {"-1", "x", "12k", "0%", "101%", "1.5", " 1", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu";
    o.memory_pool_limit = bad[i];
    hdal_context *ctx = NULL;
    char msg[256];
    snprintf(msg, sizeof msg,
             "hdal_context_options: memory_pool_limit \"%s\": expected a number of bytes or a percentage of the "
             "device's memory from 1%% to 100%% (e.g. \"1073741824\" or \"80%%\")",
             bad[i]);
    ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT, msg);
    ck_assert_ptr_null(ctx);
  }
  setenv("HDAL_MEMORY_POOL_LIMIT", "lots", 1);
  hdal_context *ctx = NULL;
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_MEMORY_POOL_LIMIT \"lots\": expected a number of bytes or a percentage of the device's "
                  "memory from 1% to 100% (e.g. \"1073741824\" or \"80%\")");
  /* Options compiled before the field: the variable still applies. */
  o.struct_size = offsetof(hdal_context_options, memory_pool_limit);
  o.memory_pool_limit = "4000";
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_MEMORY_POOL_LIMIT \"lots\": expected a number of bytes or a percentage of the device's "
                  "memory from 1% to 100% (e.g. \"1073741824\" or \"80%\")");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
}
END_TEST

START_TEST(stats_arguments) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(ctx);
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_error(hdal_device_memory_stats(NULL, &s), HDAL_INVALID_ARGUMENT,
                  "hdal_device_memory_stats: device or out is NULL");
  ck_assert_error(hdal_device_memory_stats(d, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_device_memory_stats: device or out is NULL");
  s.struct_size = sizeof(size_t);
  ck_assert_error(hdal_device_memory_stats(d, &s), HDAL_INVALID_ARGUMENT,
                  "hdal_memory_stats: struct_size 8 is too small");
  ck_assert_error(hdal_device_trim(NULL), HDAL_INVALID_ARGUMENT, "hdal_device_trim: device is NULL");
  /* An older caller's shorter struct: nothing written past it. */
  hdal_buffer *a = import_copy(ctx, N);
  memset(&s, 0xab, sizeof s);
  s.struct_size = offsetof(hdal_memory_stats, bytes_reserved);
  ck_assert_ok(hdal_device_memory_stats(d, &s));
  ck_assert_uint_eq(s.bytes_in_use, 4000);
  ck_assert_uint_eq(s.peak_bytes_in_use, 4000);
  ck_assert_uint_eq(s.bytes_reserved, 0xababababababababull);
  hdal_buffer_release(a);
  hdal_context_destroy(ctx);
}
END_TEST

static hdal_context *shared_ctx;

static void *churn(void *arg) {
  size_t n = (size_t)(uintptr_t)arg;
  for (int i = 0; i < 300; i++) {
    hdal_buffer *b = import_copy(shared_ctx, n + (size_t)(i % 3) * 1000);
    hdal_buffer_release(b);
  }
  return NULL;
}

START_TEST(threads_share_the_pool) {
  shared_ctx = test_context_with("cpu");
  hdal_device *d = tt_cpu_device(shared_ctx);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(N + i));
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  hdal_memory_stats s = stats_of(d);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.num_allocs, 1200);
  ck_assert_uint_eq(s.num_pool_hits, 1200 - 12); /* one fresh block per size: 3 sizes a thread, its own */
  ck_assert_uint_eq(s.bytes_reserved, 4 * 24000 + 4 * (0 + 1 + 2 + 3) * 3);
  ck_assert_ok(hdal_device_trim(d));
  ck_assert_uint_eq(stats_of(d).bytes_reserved, 0);
  hdal_context_destroy(shared_ctx);
}
END_TEST

/* Issue 24's case: four threads import a copy of 8 MiB at once under a
 * 12 MiB limit; one fits.  Caching on (trimmed between rounds: every round
 * allocates afresh), then off. */
START_TEST(limit_holds_for_allocations_at_once) {
  if (_i) setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = race_context("cpu", "12582912");
  race_allocate_at_once(ctx, tt_cpu_device(ctx), 8 << 20, 4, race_rounds(40),
                        _i ? "cpu, HDAL_MEMORY_POOL=0" : "cpu, caching");
  hdal_context_destroy(ctx);
}
END_TEST

/* Eight threads allocate and free five sizes (six blocks held each, 176,000
 * to 208,000 bytes) under a 200,000-byte limit while two read the
 * statistics: the bytes in use and their peak never pass it. */
START_TEST(limit_holds_while_threads_churn) {
  static const size_t sizes[RACE_SIZES] = {16000, 24000, 32000, 40000, 48000};
  if (_i) setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = race_context("cpu", "200000");
  race_churn(ctx, tt_cpu_device(ctx), sizes, 8, 2, 10 * race_rounds(40),
             _i ? "cpu, HDAL_MEMORY_POOL=0" : "cpu, caching");
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  Suite *s = suite_create("pool");
  TCase *tc = tcase_create("cpu");
  tcase_add_test(tc, fresh_device_reports_zeros);
  tcase_add_test(tc, import_reuses_a_freed_block);
  tcase_add_test(tc, copy_to_device_compaction_and_export_reuse);
  tcase_add_test(tc, caching_off);
  tcase_add_test(tc, limit);
  tcase_add_test(tc, limit_as_a_percentage);
  tcase_add_test(tc, bad_limits);
  tcase_add_test(tc, stats_arguments);
  tcase_add_test(tc, threads_share_the_pool);
  tcase_add_loop_test(tc, limit_holds_for_allocations_at_once, 0, 2); /* caching on, off */
  tcase_add_loop_test(tc, limit_holds_while_threads_churn, 0, 2);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
