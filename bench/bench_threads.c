/* SPDX-License-Identifier: BSD-3-Clause */
/* The hot path under threads: zero-copy import + release, and export +
 * capsule destroy, on one context from 1, 2, 4 and 8 threads at once, each
 * thread with its own tensor (so that whatever the threads share is hdal's).
 * More threads than cores is allowed: it shows oversubscription.  Part of
 * bench_dlpack (docs/design.md, "Lifetimes without shared counters"). */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <hdal.h>
#include "bench_threads.h"

enum { MAX_THREADS = 8, ROUNDS_FULL = 9, ROUNDS_QUICK = 3 };

typedef struct {
  _Alignas(64) long deleted; /* this thread's deleter calls: a line of its own */
  DLManagedTensor m;
  int64_t shape[4], strides[4];
  float data[64];
  hdal_buffer *exported; /* the buffer the export loop exports */
  double seconds, cpu_seconds;
} worker;

static struct {
  hdal_context *ctx;
  hdal_device *cpu;
  int nthreads, op;
  long iters;
  pthread_barrier_t start;
  worker w[MAX_THREADS];
} B;

static double clock_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_of(CLOCK_MONOTONIC); }

static void count(DLManagedTensor *m) { ((worker *)m->manager_ctx)->deleted++; }

static void die(const char *what, hdal_error *e) {
  fprintf(stderr, "bench_dlpack: %s: %s\n", what, hdal_error_message(e));
  exit(1);
}

static void *run(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(&B.start);
  double t0 = now(), c0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
  hdal_error *e = NULL;
  for (long i = 0; i < B.iters && !e; i++) {
    hdal_capsule *c;
    if (B.op == 2) { /* the baseline: perfectly parallel work */
      void *volatile p = malloc(96);
      free(p);
      continue;
    }
    if (B.op == 0) {
      hdal_buffer *b;
      c = hdal_capsule_wrap(&w->m);
      if (!(e = hdal_buffer_from_dlpack(B.ctx, c, B.cpu, NULL, &b))) hdal_buffer_release(b);
    } else {
      e = hdal_buffer_to_dlpack(w->exported, NULL, &c);
    }
    if (!e) hdal_capsule_destroy(c);
  }
  if (e) die(B.op ? "export" : "import", e);
  w->seconds = now() - t0;
  w->cpu_seconds = clock_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run of `nthreads` threads: millions of operations per second, all
 * threads together, and CPU ns per operation (what each costs the thread that
 * runs it, whatever else the machine runs). */
static double run_once(int nthreads, int op, double *cpu_ns) {
  pthread_t t[MAX_THREADS];
  B.nthreads = nthreads, B.op = op;
  pthread_barrier_init(&B.start, NULL, (unsigned)nthreads);
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, run, &B.w[i])) exit(1);
  double slowest = 0, cpu = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(t[i], NULL);
    if (B.w[i].seconds > slowest) slowest = B.w[i].seconds;
    cpu += B.w[i].cpu_seconds;
  }
  pthread_barrier_destroy(&B.start);
  *cpu_ns = cpu * 1e9 / ((double)nthreads * (double)B.iters);
  return (double)nthreads * (double)B.iters / slowest / 1e6;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

void bench_threads(hdal_context *ctx, hdal_device *cpu, int quick) {
  B.ctx = ctx, B.cpu = cpu;
  B.iters = quick ? 100000 : 1000000;
  int rounds = quick ? ROUNDS_QUICK : ROUNDS_FULL;
  for (int i = 0; i < MAX_THREADS; i++) {
    worker *w = &B.w[i];
    w->shape[0] = 1, w->shape[1] = w->shape[2] = w->shape[3] = 4;
    w->strides[3] = 1, w->strides[2] = 4, w->strides[1] = 16, w->strides[0] = 64;
    w->m = (DLManagedTensor){.dl_tensor = {.data = w->data, .device = {kDLCPU, 0}, .ndim = 4,
                                           .dtype = {kDLFloat, 32, 1}, .shape = w->shape, .strides = w->strides},
                             .manager_ctx = w, .deleter = count};
    hdal_capsule *c = hdal_capsule_wrap(&w->m);
    hdal_error *e = c ? hdal_buffer_from_dlpack(ctx, c, cpu, NULL, &w->exported) : NULL;
    if (!c || e) die("import", e);
    hdal_capsule_destroy(c);
  }
  static const int counts[] = {1, 2, 4, 8};
  static const char *names[] = {"zero-copy import + release", "export + capsule destroy",
                                "baseline: malloc + free (96 bytes)"};
  printf("\n%-44s %8s %8s %8s %8s %10s\n", "threads on one context (M ops/s, all threads)", "1", "2", "4", "8",
         "2 / 1");
  /* Each round runs 1, 2, 4 and 8 threads back to back; figures are medians
   * over rounds, and the scaling ratio is the median of each round's own
   * 2 / 1 ratio, so that the machine's drift between rounds weighs on both. */
  for (int op = 0; op < 3; op++) {
    double mops[4][ROUNDS_FULL], cpu_ns[4][ROUNDS_FULL], ratio[ROUNDS_FULL];
    for (int r = 0; r < rounds; r++) {
      for (int k = 0; k < 4; k++) mops[k][r] = run_once(counts[k], op, &cpu_ns[k][r]);
      ratio[r] = mops[1][r] / mops[0][r];
    }
    double m[4], c[4];
    for (int k = 0; k < 4; k++) m[k] = median(mops[k], rounds), c[k] = median(cpu_ns[k], rounds);
    printf("%-44s %8.2f %8.2f %8.2f %8.2f %10.2f   %s\n", names[op], m[0], m[1], m[2], m[3],
           median(ratio, rounds), op < 2 ? "(target >= 1.8)" : "(what this machine gives two threads)");
    printf("%-44s %8.1f %8.1f %8.1f %8.1f\n", "  CPU ns per operation", c[0], c[1], c[2], c[3]);
  }
  long total = 0;
  for (int i = 0; i < MAX_THREADS; i++) {
    hdal_buffer_release(B.w[i].exported);
    total += B.w[i].deleted;
  }
  long expected = (long)MAX_THREADS; /* the exported buffers' own imports */
  for (int k = 0; k < 4; k++) expected += (long)counts[k] * rounds * B.iters; /* imports only */
  if (total != expected) {
    fprintf(stderr, "bench_dlpack: %ld deleter calls, expected %ld\n", total, expected);
    exit(1);
  }
}
