/* SPDX-License-Identifier: BSD-3-Clause */
/* Thread stress (issue 7), written for the ThreadSanitizer build
 * (tests/tsan/run.sh) and run plainly by make check:
 *  - 8 threads importing (views and copies), exporting, copying and releasing
 *    on one shared context, handing buffers to each other to release;
 *  - threads racing to import one capsule: exactly one wins;
 *  - contexts created and destroyed concurrently, buffers outliving them;
 *  - first contexts with every backend (CPU, the fake CUDA driver, OpenCL on
 *    PoCL, the suite's modules) created by several threads at once, round
 *    after round, each importing onto every device it got.
 * Every deleter must run exactly once and every value arrive intact. */
#include <pthread.h>
#include <stdatomic.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* ---- first contexts with every backend, concurrently ---- */

#define ALL_THREADS 4
#ifndef HDAL_FIRST_CONTEXT_PROCESSES
#define HDAL_FIRST_CONTEXT_PROCESSES 8
#endif

static pthread_barrier_t all_barrier;
static char all_status[ALL_THREADS][512];

/* A 3x4 tensor imported onto every PjRt-compatible device of the context and
 * read back: PoCL's and the fake driver's buffer paths in every thread. */
static void import_everywhere(hdal_context *ctx, float seed) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_runtime_class(d) != HDAL_RUNTIME_PJRT) continue;
    hdal_capsule *c = make(3, seed, false, false);
    hdal_buffer *b = NULL;
    if (!c) {
      atomic_fetch_add(&failures, 1);
      continue;
    }
    fail_on(hdal_buffer_from_dlpack(ctx, c, d, NULL, &b));
    hdal_capsule_destroy(c);
    if (b) expect_values(b, 3, seed);
    hdal_buffer_release(b);
  }
}

static int all_rounds;
/* Read before the threads start: a getenv beside a first context's setenv may
 * crash (README, "Environment"). */
static const char *all_backends_spec;

static void *all_backends(void *arg) {
  int id = (int)(intptr_t)arg, n = all_rounds;
  for (int r = 0; r < n; r++) {
    pthread_barrier_wait(&all_barrier); /* every thread creates its context at once */
    hdal_context *ctx = NULL;
    /* Every backend, but OpenCL under valgrind (tests/valgrind/memcheck.sh: PoCL there takes hours). */
    hdal_context_options o = {.struct_size = sizeof o, .backends = all_backends_spec};
    hdal_error *e = hdal_context_create(&o, &ctx);
    if (e) {
      fail_on(e);
      continue;
    }
    /* The backends' statuses, the same in every thread and round. */
    char status[512] = "";
    for (size_t i = 0; i < hdal_context_backend_count(ctx); i++) {
      size_t len = strlen(status);
      snprintf(status + len, sizeof status - len, "%s=%s;", hdal_context_backend_name(ctx, i),
               hdal_context_backend_status(ctx, i));
    }
    if (r == 0) memcpy(all_status[id], status, sizeof status);
    else if (strcmp(status, all_status[id])) {
      fprintf(stderr, "round %d: %s, round 0: %s\n", r, status, all_status[id]);
      atomic_fetch_add(&failures, 1);
    }
    import_everywhere(ctx, (float)(id * 100 + r));
    hdal_context_destroy(ctx);
  }
  return NULL;
}

/* One process's run: ALL_THREADS threads, each creating its first context at
 * the same moment, then again, round after round.  Exit status 0 when every
 * thread saw the same backends and every value arrived. */
/* A crash in a vendor runtime says where, in the log (then dies of it). */
static void crashed(int sig) {
  void *frames[64];
  int n = backtrace(frames, 64);
  static const char msg[] = "crash in a first-contexts process; its stack:\n";
  if (write(2, msg, sizeof msg - 1) < 0) {}
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

static int all_backends_process(int n_rounds, bool say) {
  signal(SIGSEGV, crashed);
  signal(SIGBUS, crashed);
  pthread_t th[ALL_THREADS];
  all_rounds = n_rounds;
  all_backends_spec = getenv("HDAL_TEST_NO_OPENCL") ? "-opencl" : NULL;
  if (pthread_barrier_init(&all_barrier, NULL, ALL_THREADS)) return 2;
  for (int i = 0; i < ALL_THREADS; i++)
    if (pthread_create(&th[i], NULL, all_backends, (void *)(intptr_t)i)) return 2;
  for (int i = 0; i < ALL_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&all_barrier);
  int bad = failures != 0 || deleted != created;
  for (int i = 1; i < ALL_THREADS; i++) bad |= strcmp(all_status[i], all_status[0]) != 0;
  if (say) printf("%d threads x %d rounds: %s\n", ALL_THREADS, n_rounds, all_status[0]);
  fflush(stdout); /* the caller leaves with _exit */
  return bad;
}

START_TEST(first_contexts_with_every_backend_concurrently) {
  /* The suite's backends: OpenCL on PoCL, CUDA on the fake driver (two GPUs). */
  const char *modules = getenv("HDAL_TEST_MODULES");
  char fake[4096];
  snprintf(fake, sizeof fake, "%s/fakecuda.so", modules ? modules : ".");
  setenv("HDAL_CUDA_LIBRARY", fake, 1);
  setenv("FAKECUDA_DEVICES", "2", 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  /* A first context is made once per process: several fresh processes each
   * race theirs (PoCL 3.1 crashed in a third of them before hdal serialised its
   * discovery), then loop. */
  int procs = HDAL_FIRST_CONTEXT_PROCESSES, n = rounds() / 10 + 1;
  for (int p = 0; p < procs; p++) {
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(all_backends_process(n, p == 0));
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d of %d: %s %d", p + 1, procs,
                  WIFSIGNALED(st) ? "killed by signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
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
  tcase_add_test(tc, first_contexts_with_every_backend_concurrently);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
