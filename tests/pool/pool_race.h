/* SPDX-License-Identifier: BSD-3-Clause */
/* The pool's limit under threads (docs/memory.md, "Thread safety"), for the
 * CPU and OpenCL pool suites: rounds in which threads allocate at once, and
 * threads that allocate and free while others watch the statistics.  Each
 * prints what it saw (the figures of issue 24), then asserts that the bytes in
 * use and their peak never passed the limit, and every refusal's message. */
#ifndef HDAL_POOL_RACE_H
#define HDAL_POOL_RACE_H

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "testutil.h"

#define RACE_MAX_THREADS 8

/* HDAL_STRESS_ROUNDS (tests/tsan/run.sh sets it), else `dflt`. */
static int race_rounds(int dflt) {
  const char *s = getenv("HDAL_STRESS_ROUNDS");
  int n = s ? atoi(s) : 0;
  return n > 0 ? n : dflt;
}

/* A context of these backends whose pools have this limit (the option). */
static hdal_context *race_context(const char *backends, const char *limit) {
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.backends = backends;
  o.memory_pool_limit = limit;
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  return ctx;
}

static hdal_memory_stats race_stats(hdal_device *d) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(d, &s));
  return s;
}

typedef struct {
  DLManagedTensor m;
  int64_t shape[1];
} race_tensor;

static void race_free_tensor(DLManagedTensor *m) { free(m->manager_ctx); }

/* A copying import onto d of `bytes` bytes of host memory at src. */
static hdal_error *race_import(hdal_context *ctx, hdal_device *d, unsigned char *src, size_t bytes, hdal_buffer **b) {
  race_tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->shape[0] = (int64_t)bytes;
  DLManagedTensor *m = &t->m;
  m->dl_tensor =
      (DLTensor){.data = src, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLUInt, 8, 1}, .shape = t->shape};
  m->manager_ctx = t;
  m->deleter = race_free_tensor;
  hdal_capsule *c = hdal_capsule_wrap(m);
  ck_assert_ptr_nonnull(c);
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS};
  *b = NULL;
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, d, &o, b);
  hdal_capsule_destroy(c);
  return e;
}

/* Whether e is the limit's refusal of `size` bytes on d (docs/memory.md,
 * "Controls"), its count of bytes in use consistent with the refusal; that
 * count in *in_use. */
static bool race_is_refusal(hdal_error *e, hdal_device *d, size_t size, uint64_t limit, unsigned long long *in_use) {
  if (hdal_error_code(e) != HDAL_RESOURCE_EXHAUSTED) return false;
  char head[160], msg[256];
  snprintf(head, sizeof head, "device %d (%s): allocating %zu bytes would pass its memory limit of %" PRIu64 " bytes (",
           hdal_device_id(d), hdal_device_kind(d), size, limit);
  const char *m = hdal_error_message(e);
  if (strncmp(m, head, strlen(head)) || sscanf(m + strlen(head), "%llu", in_use) != 1) return false;
  snprintf(msg, sizeof msg, "%s%llu in use)", head, *in_use);
  return !strcmp(m, msg) && *in_use <= limit && *in_use + size > limit;
}

/* ---- rounds: `threads` threads allocate `size` bytes at once ---- */

typedef struct {
  hdal_context *ctx;
  hdal_device *d;
  size_t size;
  int threads, rounds;
  pthread_barrier_t start, done;
  unsigned char *src[RACE_MAX_THREADS];
  hdal_buffer *got[RACE_MAX_THREADS];
  hdal_error *err[RACE_MAX_THREADS];
  atomic_int next;
} race_rounds_state;

static void *race_round_thread(void *arg) {
  race_rounds_state *r = arg;
  int i = atomic_fetch_add(&r->next, 1);
  for (int k = 0; k < r->rounds; k++) {
    pthread_barrier_wait(&r->start);
    r->err[i] = race_import(r->ctx, r->d, r->src[i], r->size, &r->got[i]);
    pthread_barrier_wait(&r->done);
  }
  return NULL;
}

/* Rounds of `threads` allocations of `size` bytes at once under d's limit:
 * no more may succeed than fit, the others are refused with the message.
 * Between rounds the blocks are freed and trimmed, so every round allocates
 * afresh. */
static void race_allocate_at_once(hdal_context *ctx, hdal_device *d, size_t size, int threads, int rounds,
                                  const char *label) {
  uint64_t limit = race_stats(d).bytes_limit;
  ck_assert_int_le(threads, RACE_MAX_THREADS);
  ck_assert_uint_ge(limit, size);
  race_rounds_state *r = calloc(1, sizeof *r);
  ck_assert_ptr_nonnull(r);
  *r = (race_rounds_state){.ctx = ctx, .d = d, .size = size, .threads = threads, .rounds = rounds};
  pthread_barrier_init(&r->start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&r->done, NULL, (unsigned)threads + 1);
  pthread_t t[RACE_MAX_THREADS];
  for (int i = 0; i < threads; i++) {
    ck_assert_ptr_nonnull(r->src[i] = malloc(size));
    memset(r->src[i], i + 1, size);
    pthread_create(&t[i], NULL, race_round_thread, r);
  }
  int fit = (int)(limit / size), passed = 0, bad_refusals = 0;
  uint64_t most = 0, peak = 0;
  for (int k = 0; k < rounds; k++) {
    pthread_barrier_wait(&r->start);
    pthread_barrier_wait(&r->done);
    hdal_memory_stats s = race_stats(d);
    int ok = 0;
    for (int i = 0; i < threads; i++) {
      unsigned long long in_use;
      if (!r->err[i]) ok++;
      else if (!race_is_refusal(r->err[i], d, size, limit, &in_use)) {
        if (!bad_refusals++) printf("%s: unexpected error: %s\n", label, hdal_error_message(r->err[i]));
        fflush(stdout);
      }
      hdal_error_destroy(r->err[i]);
    }
    passed += s.bytes_in_use > limit || ok > fit;
    if (s.bytes_in_use > most) most = s.bytes_in_use;
    peak = s.peak_bytes_in_use;
    ck_assert_uint_eq(s.bytes_in_use, (uint64_t)ok * size);
    for (int i = 0; i < threads; i++) hdal_buffer_release(r->got[i]);
    ck_assert_ok(hdal_device_trim(d));
  }
  printf("%s: %d threads x %zu bytes under a limit of %" PRIu64 ": %d of %d rounds passed the limit "
         "(most in use %" PRIu64 ", peak %" PRIu64 ")\n",
         label, threads, size, limit, passed, rounds, most, peak);
  fflush(stdout);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < threads; i++) free(r->src[i]);
  pthread_barrier_destroy(&r->start);
  pthread_barrier_destroy(&r->done);
  free(r);
  ck_assert_int_eq(passed, 0);
  ck_assert_uint_le(peak, limit);
  ck_assert_int_eq(bad_refusals, 0);
}

/* ---- churn: threads allocate and free sizes that do not all fit, others watch ---- */

#define RACE_SIZES 5
#define RACE_HELD 6 /* blocks a churner holds: more than the sizes, so that one thread alone reaches the limit */

typedef struct {
  hdal_context *ctx;
  hdal_device *d;
  uint64_t limit;
  size_t sizes[RACE_SIZES];
  int iterations;
  pthread_barrier_t start;
  atomic_int next, churning;
  atomic_long observations, above, peak_above, refusals, allocations, bad;
  atomic_uint_least64_t most, peak;
} race_churn_state;

static void race_observe(race_churn_state *c) {
  hdal_memory_stats s = race_stats(c->d);
  atomic_fetch_add(&c->observations, 1);
  if (s.bytes_in_use > c->limit) atomic_fetch_add(&c->above, 1);
  if (s.peak_bytes_in_use > c->limit) atomic_fetch_add(&c->peak_above, 1);
  uint64_t m = atomic_load(&c->most);
  while (s.bytes_in_use > m && !atomic_compare_exchange_weak(&c->most, &m, s.bytes_in_use)) {
  }
  m = atomic_load(&c->peak);
  while (s.peak_bytes_in_use > m && !atomic_compare_exchange_weak(&c->peak, &m, s.peak_bytes_in_use)) {
  }
}

static void *race_churner(void *arg) {
  race_churn_state *c = arg;
  int i = atomic_fetch_add(&c->next, 1);
  unsigned char *src = malloc(c->sizes[RACE_SIZES - 1]);
  ck_assert_ptr_nonnull(src);
  memset(src, i + 1, c->sizes[RACE_SIZES - 1]);
  hdal_buffer *held[RACE_HELD] = {NULL};
  pthread_barrier_wait(&c->start);
  for (int k = 0; k < c->iterations; k++) {
    hdal_buffer_release(held[k % RACE_HELD]); /* the oldest */
    size_t size = c->sizes[(i + k) % RACE_SIZES];
    hdal_error *e = race_import(c->ctx, c->d, src, size, &held[k % RACE_HELD]);
    unsigned long long in_use;
    if (!e) atomic_fetch_add(&c->allocations, 1);
    else if (race_is_refusal(e, c->d, size, c->limit, &in_use)) atomic_fetch_add(&c->refusals, 1);
    else if (!atomic_fetch_add(&c->bad, 1)) printf("unexpected error: %s\n", hdal_error_message(e));
    hdal_error_destroy(e);
    race_observe(c);
  }
  for (int k = 0; k < RACE_HELD; k++) hdal_buffer_release(held[k]);
  free(src);
  atomic_fetch_sub(&c->churning, 1);
  return NULL;
}

static void *race_observer(void *arg) {
  race_churn_state *c = arg;
  while (atomic_load(&c->churning) > 0) race_observe(c);
  return NULL;
}

/* `churners` threads each allocate and free `iterations` times, sizes from
 * `sizes` (ascending) in turn, RACE_HELD blocks held at a time, while
 * `observers` threads read d's statistics.  A freed block is not of the next
 * size: the cache fills and is trimmed to make room (lib/pool.c's trim and
 * retry).  What one thread holds reaches the limit: refusals are certain. */
static void race_churn(hdal_context *ctx, hdal_device *d, const size_t sizes[RACE_SIZES], int churners,
                       int observers, int iterations, const char *label) {
  race_churn_state *c = calloc(1, sizeof *c);
  ck_assert_ptr_nonnull(c);
  c->ctx = ctx;
  c->d = d;
  c->limit = race_stats(d).bytes_limit;
  memcpy(c->sizes, sizes, sizeof c->sizes);
  c->iterations = iterations;
  atomic_init(&c->churning, churners);
  pthread_barrier_init(&c->start, NULL, (unsigned)churners);
  ck_assert_int_le(churners + observers, 2 * RACE_MAX_THREADS);
  pthread_t t[2 * RACE_MAX_THREADS];
  for (int i = 0; i < observers; i++) pthread_create(&t[i], NULL, race_observer, c);
  for (int i = 0; i < churners; i++) pthread_create(&t[observers + i], NULL, race_churner, c);
  for (int i = 0; i < churners + observers; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&c->start);
  hdal_memory_stats s = race_stats(d);
  long above = atomic_load(&c->above), peak_above = atomic_load(&c->peak_above), bad = atomic_load(&c->bad), refusals = atomic_load(&c->refusals),
       allocations = atomic_load(&c->allocations);
  printf("%s: %d threads under a limit of %" PRIu64 ": of %ld observations, %ld with the bytes in use above the "
         "limit, %ld with the peak above it (most in use %" PRIu64 ", peak %" PRIu64 "); %ld allocations, %ld refused\n",
         label, churners, c->limit, atomic_load(&c->observations), above, peak_above,
         (uint64_t)atomic_load(&c->most), s.peak_bytes_in_use, allocations, refusals);
  fflush(stdout);
  ck_assert_int_eq(above, 0);
  ck_assert_int_eq(peak_above, 0);
  ck_assert_int_eq(bad, 0);
  ck_assert_uint_le(s.peak_bytes_in_use, c->limit);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_int_gt(refusals, 0); /* the limit was reached */
  ck_assert_int_gt(allocations, 0);
  free(c);
}

#endif
