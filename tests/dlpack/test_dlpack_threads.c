/* SPDX-License-Identifier: BSD-3-Clause */
/* Many threads importing and exporting on one context at once. */
#include <pthread.h>
#include "dlpack_testutil.h"

#define THREADS 8
#define ROUNDS 3000

static hdal_context *ctx;
static atomic_int failures;

static void *worker(void *arg) {
  int seed = (int)(intptr_t)arg;
  for (int r = 0; r < ROUNDS; r++) {
    int64_t shape[2] = {3 + (r + seed) % 5, 4}, colmajor[2] = {1, shape[0]};
    float *data = tt_iota((size_t)(shape[0] * 4));
    tt_tensor *t = tt_make(data, true, 2, shape, (r & 1) ? colmajor : NULL, tt_f32, tt_cpu);
    hdal_capsule *c = (r & 2) ? tt_versioned(t, 0) : tt_legacy(t);
    hdal_buffer *b = NULL, *again = NULL;
    hdal_import_options io = {.struct_size = sizeof io, .copy = (r % 3 == 0) ? HDAL_COPY_ALWAYS : HDAL_COPY_IF_NEEDED};
    hdal_error *e = hdal_buffer_from_dlpack(ctx, c, NULL, &io, &b);
    hdal_capsule_destroy(c);
    if (e) {
      hdal_error_destroy(e);
      atomic_fetch_add(&failures, 1);
      continue;
    }
    hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {(uint32_t)(r & 1), 0}};
    hdal_capsule *x = NULL;
    if ((e = hdal_buffer_to_dlpack(b, &eo, &x)) || (e = hdal_buffer_from_dlpack(ctx, x, NULL, NULL, &again))) {
      hdal_error_destroy(e);
      atomic_fetch_add(&failures, 1);
    } else {
      float out[7 * 4];
      size_t n = (size_t)shape[0] * 4;
      if ((e = hdal_buffer_copy_to_host(again, out, n * sizeof(float)))) {
        hdal_error_destroy(e);
        atomic_fetch_add(&failures, 1);
      }
      for (size_t i = 0; i < n; i++) {
        size_t row = i / 4, col = i % 4;
        float want = (r & 1) && r % 3 ? (float)(col * (size_t)shape[0] + row) : (r & 1) ? (float)(col * (size_t)shape[0] + row) : (float)i;
        if (out[i] != want) atomic_fetch_add(&failures, 1);
      }
      hdal_buffer_release(again);
    }
    hdal_capsule_destroy(x);
    hdal_buffer_release(b);
  }
  return NULL;
}

START_TEST(threads_import_export_release) {
  ctx = test_context_with("cpu");
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(failures, 0);
  ck_assert_int_eq(tt_deleted, THREADS * ROUNDS); /* every source deleter ran exactly once */
  hdal_context_destroy(ctx);
}
END_TEST

/* One capsule raced by several threads: consumed once, the others get the name
 * message.  The winner keeps its buffer until all have finished: the losers
 * read the tensor, which lives as long as the winner's buffer (as with a
 * PyCapsule, freeing a tensor others still look at is the caller's bug). */
static hdal_capsule *shared;
static atomic_int wins;
static void *racer(void *arg) {
  hdal_buffer **slot = arg;
  hdal_error *e = hdal_buffer_from_dlpack(ctx, shared, NULL, NULL, slot);
  if (!e) {
    atomic_fetch_add(&wins, 1);
  } else {
    if (strcmp(hdal_error_message(e), "DLPack tensor must be a capsule with name \"dltensor\", got \"used_dltensor\". "
                                      "Note that a DLPack tensor may be consumed at most once."))
      atomic_fetch_add(&failures, 1);
    hdal_error_destroy(e);
  }
  return NULL;
}

START_TEST(racing_one_capsule) {
  ctx = test_context_with("cpu");
  for (int round = 0; round < 200; round++) {
    int64_t shape[1] = {16};
    shared = tt_legacy(tt_make(tt_iota(16), true, 1, shape, NULL, tt_f32, tt_cpu));
    atomic_store(&wins, 0);
    pthread_t th[4];
    hdal_buffer *got[4] = {NULL};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, racer, &got[i]), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(wins, 1);
    for (int i = 0; i < 4; i++) hdal_buffer_release(got[i]);
    hdal_capsule_destroy(shared);
    ck_assert_int_eq(tt_deleted, round + 1);
  }
  ck_assert_int_eq(failures, 0);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("dlpack_threads");
  TCase *tc = tcase_create("threads");
  unsetenv("HDAL_BACKENDS");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, threads_import_export_release);
  tcase_add_test(tc, racing_one_capsule);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
