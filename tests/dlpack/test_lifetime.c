/* SPDX-License-Identifier: BSD-3-Clause */
/* Lifetimes on the hot path (docs/design.md, "Lifetimes without shared
 * counters"): each thread keeps a stock of context references and released
 * buffer objects.  What a user relies on must still hold:
 *  - a buffer may be released on another thread than the one that made it;
 *  - hdal_context_destroy frees the context as soon as its last buffer goes,
 *    even while other threads, still alive, hold stocks of it;
 *  - threads may come and go by the thousand, and move between contexts.
 * The context's real end is seen through a test module whose finalize()
 * counts in hdal_test_finalized.  Run plainly here, under ThreadSanitizer by
 * tests/tsan/run.sh, under valgrind by tests/valgrind/memcheck.sh. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "testutil.h"

int hdal_test_finalized; /* the module's finalize() adds 1 (found with dlsym) */

static char dir[] = "/tmp/hdal-lifetime-XXXXXX";
static atomic_int deleted, created;

typedef struct {
  DLManagedTensor m;
  int64_t shape[2];
  float values[8];
} tensor;

static void deleter(DLManagedTensor *m) {
  atomic_fetch_add(&deleted, 1);
  free(m->manager_ctx);
}

/* A zero-copy import of a fresh 2 x 4 tensor; its data pointer in *data. */
static hdal_buffer *import(hdal_context *ctx, void **data) {
  tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->shape[0] = 2, t->shape[1] = 4;
  t->m = (DLManagedTensor){.dl_tensor = {.data = t->values, .device = {kDLCPU, 0}, .ndim = 2,
                                         .dtype = {kDLFloat, 32, 1}, .shape = t->shape},
                           .manager_ctx = t, .deleter = deleter};
  hdal_capsule *c = hdal_capsule_wrap(&t->m);
  ck_assert_ptr_nonnull(c);
  atomic_fetch_add(&created, 1);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  hdal_capsule_destroy(c);
  if (data) *data = t->values;
  return b;
}

static int finalized(void) { return __atomic_load_n(&hdal_test_finalized, __ATOMIC_SEQ_CST); }

static hdal_context *probe_context(void) {
  char from[4096], to[4096];
  snprintf(from, sizeof from, "%s/mod_finalprobe.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_finalprobe.so", dir);
  if (access(to, F_OK) != 0) ck_assert_msg(symlink(from, to) == 0, "symlink %s", to);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,finalprobe", .backend_path = dir};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "finalprobe"), "ok: 1 device");
  return ctx;
}

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/hdal_finalprobe.so", dir);
  unlink(path);
  rmdir(dir);
}

/* ---- made on one thread, released on another ---- */

enum { PRODUCERS = 4, PER_PRODUCER = 3000 };
static hdal_context *shared;
static hdal_buffer *made[PRODUCERS][PER_PRODUCER];
static void *made_data[PRODUCERS][PER_PRODUCER];

static void *produce(void *arg) {
  long k = (long)arg;
  for (int i = 0; i < PER_PRODUCER; i++) made[k][i] = import(shared, &made_data[k][i]);
  return NULL;
}

static void *consume(void *arg) {
  long k = (long)arg; /* releases what producer k + 1 made */
  for (int i = 0; i < PER_PRODUCER; i++) hdal_buffer_release(made[(k + 1) % PRODUCERS][i]);
  return NULL;
}

static void run_threads(void *(*fn)(void *), int n) {
  pthread_t t[16];
  for (long i = 0; i < n; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, fn, (void *)i), 0);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

START_TEST(buffers_released_on_other_threads) {
  shared = probe_context();
  run_threads(produce, PRODUCERS);
  for (int k = 0; k < PRODUCERS; k++)
    for (int i = 0; i < PER_PRODUCER; i++) {
      ck_assert(hdal_buffer_is_view(made[k][i]));
      ck_assert_ptr_eq(hdal_buffer_data(made[k][i]), made_data[k][i]); /* zero-copy */
    }
  run_threads(consume, PRODUCERS);
  ck_assert_int_eq(atomic_load(&deleted), PRODUCERS * PER_PRODUCER);
  hdal_context_destroy(shared);
  ck_assert_int_eq(finalized(), 1);
}
END_TEST

/* ---- destroyed while live threads hold stocks of it ---- */

static pthread_barrier_t stocked, may_exit;

static void *stock_up_and_wait(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) hdal_buffer_release(import(shared, NULL));
  pthread_barrier_wait(&stocked);
  pthread_barrier_wait(&may_exit); /* alive, stock in hand, while the main thread destroys */
  return NULL;
}

START_TEST(context_freed_while_other_threads_hold_stocks) {
  enum { WORKERS = 4 };
  shared = probe_context();
  pthread_barrier_init(&stocked, NULL, WORKERS + 1);
  pthread_barrier_init(&may_exit, NULL, WORKERS + 1);
  pthread_t t[WORKERS];
  for (int i = 0; i < WORKERS; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, stock_up_and_wait, NULL), 0);
  pthread_barrier_wait(&stocked);
  hdal_buffer *last = import(shared, NULL);
  hdal_context_destroy(shared);
  ck_assert_int_eq(finalized(), 0); /* `last` keeps it */
  hdal_buffer *copy = NULL;        /* a dying context still serves its buffers */
  ck_assert_ok(hdal_buffer_copy_to_device(last, hdal_buffer_device(last), &copy));
  hdal_buffer_release(last);
  ck_assert_int_eq(finalized(), 0);
  hdal_buffer_release(copy);
  ck_assert_int_eq(finalized(), 1); /* now, with the workers still alive */
  pthread_barrier_wait(&may_exit);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  ck_assert_int_eq(finalized(), 1);
  ck_assert_int_eq(atomic_load(&deleted), atomic_load(&created));
  pthread_barrier_destroy(&stocked);
  pthread_barrier_destroy(&may_exit);
}
END_TEST

/* ---- the last buffer released by a thread that holds a stock, while destroy runs ---- */

static void *release_all_slowly(void *arg) {
  hdal_buffer **bs = arg;
  for (int i = 0; i < 500; i++) {
    hdal_buffer *copy = NULL; /* made through this thread's stock, even once the context is dying */
    ck_assert_ok(hdal_buffer_copy_to_device(bs[i], hdal_buffer_device(bs[i]), &copy));
    hdal_buffer_release(bs[i]);
    hdal_buffer_release(copy);
  }
  return NULL;
}

START_TEST(destroy_races_releases) {
  for (int round = 0; round < 20; round++) {
    hdal_test_finalized = 0;
    shared = probe_context();
    static hdal_buffer *bs[2][500];
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 500; i++) bs[k][i] = import(shared, NULL);
    pthread_t t[2];
    for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_create(&t[k], NULL, release_all_slowly, bs[k]), 0);
    hdal_context_destroy(shared); /* while both release */
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    ck_assert_int_eq(finalized(), 1);
  }
  ck_assert_int_eq(atomic_load(&deleted), atomic_load(&created));
}
END_TEST

/* ---- threads by the thousand ---- */

static _Atomic(hdal_buffer *) handed;

static void *short_lived(void *arg) {
  (void)arg;
  hdal_buffer *mine[5];
  for (int i = 0; i < 5; i++) mine[i] = import(shared, NULL);
  for (int i = 0; i < 4; i++) hdal_buffer_release(mine[i]);
  /* the fifth goes to whichever thread comes next */
  hdal_buffer_release(atomic_exchange(&handed, mine[4]));
  return NULL;
}

START_TEST(threads_come_and_go_by_the_thousand) {
  const char *s = getenv("HDAL_STRESS_ROUNDS");
  int n = s && atoi(s) > 0 ? atoi(s) * 10 : 2000;
  shared = probe_context();
  for (int done = 0; done < n; done += 8) run_threads(short_lived, 8);
  hdal_buffer_release(atomic_exchange(&handed, NULL));
  ck_assert_int_eq(atomic_load(&deleted), atomic_load(&created));
  ck_assert_int_eq(finalized(), 0);
  hdal_context_destroy(shared);
  ck_assert_int_eq(finalized(), 1);
}
END_TEST

/* ---- one thread's stock moves between contexts ---- */

START_TEST(stock_follows_the_context) {
  hdal_context *a = probe_context(), *b = probe_context();
  hdal_buffer *keep = import(a, NULL);
  for (int i = 0; i < 1000; i++) {
    hdal_buffer_release(import(i % 2 ? a : b, NULL));
    if (i % 7 == 0) hdal_buffer_release(import(b, NULL));
  }
  hdal_context_destroy(b);
  ck_assert_int_eq(finalized(), 1);
  hdal_context_destroy(a);
  ck_assert_int_eq(finalized(), 1); /* `keep` */
  hdal_buffer_release(keep);
  ck_assert_int_eq(finalized(), 2);
  ck_assert_int_eq(atomic_load(&deleted), atomic_load(&created));
}
END_TEST

int main(void) {
  Suite *s = suite_create("lifetime");
  TCase *tc = tcase_create("lifetime");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, buffers_released_on_other_threads);
  tcase_add_test(tc, context_freed_while_other_threads_hold_stocks);
  tcase_add_test(tc, destroy_races_releases);
  tcase_add_test(tc, threads_come_and_go_by_the_thousand);
  tcase_add_test(tc, stock_follows_the_context);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
