/* SPDX-License-Identifier: BSD-3-Clause */
/* Thread stress (issue 7), written for the ThreadSanitizer build
 * (tests/tsan/run.sh) and run plainly by make check:
 *  - 8 threads importing (views and copies), exporting, copying and releasing
 *    on one shared context, handing buffers to each other to release;
 *  - threads racing to import one capsule: exactly one wins;
 *  - contexts created and destroyed concurrently, buffers outliving them.
 * Every deleter must run exactly once and every value arrive intact. */
#include <pthread.h>
#include <stdatomic.h>
#include "testutil.h"

#define THREADS 8

static int rounds(void) {
  const char *s = getenv("HDAL_STRESS_ROUNDS");
  int n = s ? atoi(s) : 0;
  return n > 0 ? n : 200;
}

/* ---- tensors whose deleters are counted ---- */

static atomic_int deleted, created, failures;

typedef struct {
  DLManagedTensor legacy;
  DLManagedTensorVersioned versioned;
  int64_t shape[2], strides[2];
  float values[24];
} tensor;

static void legacy_deleter(DLManagedTensor *m) {
  atomic_fetch_add(&deleted, 1);
  free(m->manager_ctx);
}

static void versioned_deleter(DLManagedTensorVersioned *m) {
  atomic_fetch_add(&deleted, 1);
  free(m->manager_ctx);
}

/* A rows x 4 float tensor holding seed, seed+1, ...; column-major when asked (a copy on import
 * only under HDAL_COPY_ALWAYS: a transposition is compact). */
static hdal_capsule *make(int rows, float seed, bool colmajor, bool versioned) {
  tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->shape[0] = rows;
  t->shape[1] = 4;
  t->strides[0] = colmajor ? 1 : 4;
  t->strides[1] = colmajor ? rows : 1;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < 4; j++) t->values[i * t->strides[0] + j * t->strides[1]] = seed + (float)(i * 4 + j);
  DLTensor dl = {.data = t->values, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1},
                 .shape = t->shape, .strides = t->strides};
  t->legacy = (DLManagedTensor){.dl_tensor = dl, .manager_ctx = t, .deleter = legacy_deleter};
  t->versioned = (DLManagedTensorVersioned){.version = {1, 0}, .dl_tensor = dl, .manager_ctx = t,
                                            .deleter = versioned_deleter};
  hdal_capsule *c = versioned ? hdal_capsule_wrap_versioned(&t->versioned) : hdal_capsule_wrap(&t->legacy);
  if (!c) free(t);
  else atomic_fetch_add(&created, 1);
  return c;
}

static void fail_on(hdal_error *e) {
  if (!e) return;
  fprintf(stderr, "%s: %s\n", hdal_code_name(hdal_error_code(e)), hdal_error_message(e));
  hdal_error_destroy(e);
  atomic_fetch_add(&failures, 1);
}

static void expect_values(const hdal_buffer *b, int rows, float seed) {
  float out[24];
  hdal_error *e = hdal_buffer_copy_to_host(b, out, (size_t)rows * 4 * sizeof(float));
  if (e) return fail_on(e);
  for (int i = 0; i < rows * 4; i++)
    if (out[i] != seed + (float)i) {
      atomic_fetch_add(&failures, 1);
      return;
    }
}

/* ---- one shared context ---- */

static hdal_context *shared;

/* Buffers handed from one thread to the next, released by the receiver. */
static _Atomic(hdal_buffer *) mailbox[THREADS];

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg, n = rounds();
  size_t ndev = hdal_context_device_count(shared);
  for (int r = 0; r < n; r++) {
    int rows = 1 + (r + id) % 6;
    float seed = (float)(id * 1000 + r);
    hdal_capsule *c = make(rows, seed, r & 1, r & 2);
    if (!c) {
      atomic_fetch_add(&failures, 1);
      continue;
    }
    hdal_import_options io = {.struct_size = sizeof io, .copy = r % 3 == 0 ? HDAL_COPY_ALWAYS : HDAL_COPY_IF_NEEDED};
    hdal_device *dev = hdal_context_device(shared, (size_t)(r + id) % ndev);
    hdal_buffer *b = NULL;
    hdal_error *e = hdal_buffer_from_dlpack(shared, c, dev, &io, &b);
    hdal_capsule_destroy(c);
    if (e) {
      fail_on(e);
      continue;
    }
    expect_values(b, rows, seed);

    /* Export and import back (zero-copy round trip), on this thread. */
    hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {(uint32_t)(r & 1), 0}};
    hdal_capsule *x = NULL;
    hdal_buffer *again = NULL;
    if (!(e = hdal_buffer_to_dlpack(b, &eo, &x)) && !(e = hdal_buffer_from_dlpack(shared, x, NULL, NULL, &again))) {
      expect_values(again, rows, seed);
      hdal_buffer_release(again);
    }
    fail_on(e);
    hdal_capsule_destroy(x);

    /* A copy onto another device. */
    hdal_buffer *moved = NULL;
    fail_on(hdal_buffer_copy_to_device(b, hdal_context_device(shared, (size_t)(r + id + 1) % ndev), &moved));
    if (moved) {
      expect_values(moved, rows, seed);
      hdal_buffer_release(moved);
    }

    /* Hand the buffer to the next thread, which releases it; release what was left for us. */
    hdal_buffer_retain(b);
    hdal_buffer *old = atomic_exchange(&mailbox[(id + 1) % THREADS], b);
    if (old) hdal_buffer_release(old);
    hdal_buffer_release(b);
    old = atomic_exchange(&mailbox[id], NULL);
    if (old) hdal_buffer_release(old);
  }
  return NULL;
}

START_TEST(shared_context_import_export_copy_release) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  shared = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(shared), 2);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; i++) hdal_buffer_release(atomic_exchange(&mailbox[i], NULL));
  ck_assert_int_eq(failures, 0);
  ck_assert_int_eq(created, THREADS * rounds());
  ck_assert_int_eq(deleted, created); /* every deleter once, none twice */
  hdal_context_destroy(shared);
}
END_TEST

/* ---- many threads, one capsule ---- */

static hdal_capsule *contested;
static atomic_int winners;
static pthread_barrier_t barrier;

static void *racer(void *arg) {
  (void)arg;
  for (int r = 0; r < rounds(); r++) {
    pthread_barrier_wait(&barrier); /* contested is set */
    hdal_buffer *b = NULL;
    hdal_error *e = hdal_buffer_from_dlpack(shared, contested, NULL, NULL, &b);
    if (!e) {
      atomic_fetch_add(&winners, 1);
      hdal_buffer_release(b);
    } else if (hdal_error_code(e) != HDAL_INVALID_ARGUMENT) {
      fail_on(e);
      e = NULL;
    }
    hdal_error_destroy(e);
    pthread_barrier_wait(&barrier); /* everyone has tried */
  }
  return NULL;
}

START_TEST(one_capsule_consumed_once) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  shared = test_context_with("cpu");
  pthread_t th[THREADS];
  ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, THREADS + 1), 0);
  for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, racer, NULL), 0);
  for (int r = 0; r < rounds(); r++) {
    contested = make(2, (float)r, false, r & 1);
    ck_assert_ptr_nonnull(contested);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    ck_assert_int_eq(winners, r + 1);
    ck_assert_str_eq(hdal_capsule_name(contested), r & 1 ? "used_dltensor_versioned" : "used_dltensor");
    hdal_capsule_destroy(contested);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  ck_assert_int_eq(failures, 0);
  ck_assert_int_eq(deleted, rounds());
  hdal_context_destroy(shared);
}
END_TEST

/* ---- contexts created and destroyed concurrently ---- */

static void *context_churn(void *arg) {
  int id = (int)(intptr_t)arg, n = rounds() / 10 + 1;
  for (int r = 0; r < n; r++) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
    hdal_context *ctx = NULL;
    hdal_error *e = hdal_context_create(&o, &ctx);
    if (e) {
      fail_on(e);
      continue;
    }
    if (hdal_context_device_count(ctx) != 2) atomic_fetch_add(&failures, 1);
    /* A buffer that outlives its context: released after hdal_context_destroy. */
    hdal_capsule *c = make(3, (float)(id + r), false, false);
    hdal_buffer *b = NULL;
    if (c) fail_on(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
    hdal_capsule_destroy(c);
    void *blob = NULL;
    size_t len = 0;
    fail_on(hdal_context_export_devices(ctx, &blob, &len));
    free(blob);
    hdal_context_destroy(ctx);
    if (b) {
      expect_values(b, 3, (float)(id + r));
      hdal_buffer_release(b);
    }
  }
  return NULL;
}

START_TEST(contexts_created_and_destroyed_concurrently) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, context_churn, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(failures, 0);
  ck_assert_int_eq(deleted, created);
  ck_assert_int_eq(created, THREADS * (rounds() / 10 + 1));
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  Suite *s = suite_create("stress-threads");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, shared_context_import_export_copy_release);
  tcase_add_test(tc, one_capsule_consumed_once);
  tcase_add_test(tc, contexts_created_and_destroyed_concurrently);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
