/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack benchmarks: zero-copy import + release, export, the transposing copy
 * to host and compacting imports, each next to memcpy of the same bytes in the
 * same run.  Run by `make -C bench run-bench`; `bench_dlpack --quick` runs
 * fewer repetitions, `--threads` only the thread-scaling table.  Under
 * valgrind it is also its own callgrind probe (--callgrind-loop N) for the
 * instruction count of one import + release. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <hdal.h>
#include "bench_threads.h"
#include "bench_time.h"


static void check(hdal_error *e, const char *what) {
  if (!e) return;
  fprintf(stderr, "bench_dlpack: %s: %s\n", what, hdal_error_message(e));
  exit(1);
}

/* The producer's side: one managed tensor reused; its deleter only counts. */
static long deleted;
static void count_legacy(DLManagedTensor *m) { (void)m, deleted++; }
static void count_versioned(DLManagedTensorVersioned *m) { (void)m, deleted++; }

static hdal_context *ctx;
static hdal_device *cpu;
static int quick;

/* 4-d float32 of `bytes` bytes: [n/64, 4, 4, 4]. */
static void tensor4d(DLTensor *t, int64_t *shape, int64_t *strides, void *data, size_t bytes) {
  int64_t n = (int64_t)(bytes / 4);
  shape[0] = n / 64, shape[1] = 4, shape[2] = 4, shape[3] = 4;
  strides[3] = 1, strides[2] = 4, strides[1] = 16, strides[0] = 64;
  *t = (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = 4, .dtype = {kDLFloat, 32, 1}, .shape = shape,
                  .strides = strides};
}

/* Named for callgrind's --toggle-collect: the consumer's side alone, then with the capsule. */
__attribute__((noinline)) void bench_import_one(hdal_capsule *c);
__attribute__((noinline)) void bench_import_one(hdal_capsule *c) {
  hdal_buffer *b;
  check(hdal_buffer_from_dlpack(ctx, c, cpu, NULL, &b), "import");
  hdal_buffer_release(b);
}
__attribute__((noinline)) void bench_import_loop(DLManagedTensor *m, long iters);
__attribute__((noinline)) void bench_import_loop(DLManagedTensor *m, long iters) {
  for (long i = 0; i < iters; i++) {
    hdal_capsule *c = hdal_capsule_wrap(m);
    bench_import_one(c);
    hdal_capsule_destroy(c);
  }
}

static void import_versioned_loop(DLManagedTensorVersioned *m, long iters) {
  for (long i = 0; i < iters; i++) {
    hdal_capsule *c = hdal_capsule_wrap_versioned(m);
    hdal_buffer *b;
    check(hdal_buffer_from_dlpack(ctx, c, cpu, NULL, &b), "import");
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
  }
}

static void capsule_only_loop(DLManagedTensor *m, long iters) {
  for (long i = 0; i < iters; i++) {
    hdal_capsule *c = hdal_capsule_wrap(m);
    free(hdal_capsule_take(c) == m ? NULL : c); /* never true: keeps the compiler honest */
    hdal_capsule_destroy(c);
  }
}

/* ns per iteration: median over batches. */
#define PER_ITER(EXPR, ITERS, OUT)                                       \
  do {                                                                   \
    int nb_ = quick ? 5 : 21;                                            \
    double v_[21];                                                       \
    for (int r_ = 0; r_ < nb_; r_++) {                                   \
      double t0_ = bench_now();                                                \
      EXPR;                                                              \
      v_[r_] = (bench_now() - t0_) * 1e9 / (double)(ITERS);                    \
    }                                                                    \
    OUT = bench_median(v_, nb_);                                               \
  } while (0)

static double memcpy_ns(void *dst, const void *src, size_t n, int reps) {
  double v[21];
  if (reps > 21) reps = 21;
  memcpy(dst, src, n); /* warm: both sides faulted */
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    memcpy(dst, src, n);
    __asm__ volatile("" ::"r"(dst) : "memory");
    v[r] = (bench_now() - t0) * 1e9;
  }
  return bench_median(v, reps);
}

static long callgrind_instructions(const char *self, const char *fn) {
  /* Instructions of bench_import_loop for 10000 iterations, under callgrind. */
  if (system("valgrind --version >/dev/null 2>&1") != 0) return -1;
  char out[] = "/tmp/hdal-callgrind-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0) return -1;
  close(fd);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "valgrind --tool=callgrind --callgrind-out-file=%s --toggle-collect=%s '%s' "
           "--callgrind-loop 10000 >/dev/null 2>&1",
           out, fn, self);
  long total = -1;
  if (system(cmd) == 0) {
    FILE *f = fopen(out, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "summary:", 8) || !strncmp(line, "totals:", 7)) total = atol(strchr(line, ':') + 1);
    if (f) fclose(f);
  }
  unlink(out);
  return total;
}

static const char *human(size_t n) {
  static char buf[4][16];
  static int k;
  char *b = buf[k++ % 4];
  if (n >= (1u << 30)) snprintf(b, 16, "%zu GiB", n >> 30);
  else if (n >= (1u << 20)) snprintf(b, 16, "%zu MiB", n >> 20);
  else snprintf(b, 16, "%zu KiB", n >> 10);
  return b;
}

int main(int argc, char **argv) {
  const char *loop = NULL;
  int threads_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    if (!strcmp(argv[i], "--threads")) threads_only = 1;
    if (!strcmp(argv[i], "--callgrind-loop") && i + 1 < argc) loop = argv[++i];
  }
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  check(hdal_context_create(&o, &ctx), "context");
  cpu = hdal_context_device(ctx, 0);
  int64_t shape[4], strides[4];
  DLManagedTensor m = {.deleter = count_legacy};
  DLManagedTensorVersioned mv = {.version = {1, 1}, .deleter = count_versioned};
  static _Alignas(64) float small[256];

  if (loop) { /* the callgrind probe */
    tensor4d(&m.dl_tensor, shape, strides, small, sizeof small);
    bench_import_loop(&m, 10);
    bench_import_loop(&m, atol(loop));
    hdal_context_destroy(ctx);
    return 0;
  }

  if (threads_only) { /* the thread-scaling table alone */
    bench_threads(ctx, cpu, quick);
    hdal_context_destroy(ctx);
    return 0;
  }

  printf("hdal DLPack benchmarks (%s run; medians; ratio = hdal / memcpy of the same bytes, same run)\n\n",
         quick ? "quick" : "full");
  printf("%-44s %12s %14s %10s\n", "zero-copy import + release (4-d float32)", "hdal ns", "memcpy ns", "ratio");
  size_t sizes[3] = {1u << 10, 1u << 20, (size_t)1 << 30};
  double legacy_ns[3];
  size_t big = sizes[2];
  /* 1 GiB never touched by the import: the memcpy baseline needs both sides */
  char *src = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  char *dst = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (src == MAP_FAILED || dst == MAP_FAILED) return 1;
  memset(src, 1, big);
  for (int k = 0; k < 3; k++) {
    long iters = quick ? 20000 : 100000;
    tensor4d(&m.dl_tensor, shape, strides, src, sizes[k]);
    mv.dl_tensor = m.dl_tensor;
    double ns, nsv;
    PER_ITER(bench_import_loop(&m, iters), iters, ns);
    PER_ITER(import_versioned_loop(&mv, iters), iters, nsv);
    double mc = memcpy_ns(dst, src, sizes[k], k == 2 ? 3 : 21);
    legacy_ns[k] = ns;
    char label[64];
    snprintf(label, sizeof label, "legacy \"dltensor\", %s", human(sizes[k]));
    printf("%-44s %12.1f %14.1f %10.6f\n", label, ns, mc, ns / mc);
    snprintf(label, sizeof label, "versioned \"dltensor_versioned\", %s", human(sizes[k]));
    printf("%-44s %12.1f %14.1f %10.6f\n", label, nsv, mc, nsv / mc);
  }
  double cap_ns;
  long iters = quick ? 20000 : 100000;
  PER_ITER(capsule_only_loop(&m, iters), iters, cap_ns);
  printf("%-44s %12.1f\n", "  of which capsule wrap + destroy", cap_ns);
  printf("%-44s %12.3f   (target <= 1.2)\n", "  flatness: 1 GiB / 1 KiB (legacy)", legacy_ns[2] / legacy_ns[0]);
  long ins = callgrind_instructions(argv[0], "bench_import_one");
  long ins_all = ins > 0 ? callgrind_instructions(argv[0], "bench_import_loop") : -1;
  if (ins > 0) {
    /* The probe runs 10 warm-up iterations, then 10000. */
    printf("%-44s %12.0f   (callgrind; target <= 400)\n", "  instructions per import + release", (double)ins / 10010.0);
    printf("%-44s %12.0f\n", "  same, with capsule wrap + destroy", (double)ins_all / 10010.0);
  } else {
    printf("%-44s %12s\n", "  instructions per import + release", "(valgrind not found)");
  }

  /* export */
  printf("\n%-44s %12s\n", "export + capsule destroy (1 MiB view)", "hdal ns");
  tensor4d(&m.dl_tensor, shape, strides, src, 1u << 20);
  hdal_capsule *c = hdal_capsule_wrap(&m);
  hdal_buffer *b;
  check(hdal_buffer_from_dlpack(ctx, c, cpu, NULL, &b), "import");
  hdal_capsule_destroy(c);
  for (int v = 0; v < 2; v++) {
    hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {(uint32_t)v, 0}};
    double ns;
    PER_ITER(for (long i = 0; i < iters; i++) {
      hdal_capsule *x;
      check(hdal_buffer_to_dlpack(b, &eo, &x), "export");
      hdal_capsule_destroy(x);
    }, iters, ns);
    printf("%-44s %12.1f\n", v ? "versioned" : "legacy", ns);
  }
  /* round trip: export, import the export, release both */
  double rt;
  PER_ITER(for (long i = 0; i < iters; i++) {
    hdal_capsule *x;
    hdal_buffer *y;
    check(hdal_buffer_to_dlpack(b, NULL, &x), "export");
    check(hdal_buffer_from_dlpack(ctx, x, cpu, NULL, &y), "re-import");
    hdal_buffer_release(y);
    hdal_capsule_destroy(x);
  }, iters, rt);
  printf("%-44s %12.1f\n", "round trip export -> import -> release", rt);
  hdal_buffer_release(b);

  bench_threads(ctx, cpu, quick);

  /* transposed 4096x4096 float32 view -> caller memory */
  const int64_t N = 4096;
  size_t nb = (size_t)(N * N * 4);
  float *a = (float *)src, *out = (float *)dst;
  for (int64_t i = 0; i < N * N; i++) a[i] = (float)i;
  int64_t tshape[2] = {N, N}, tstrides[2] = {1, N};
  m.dl_tensor = (DLTensor){.data = a, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1},
                           .shape = tshape, .strides = tstrides};
  c = hdal_capsule_wrap(&m);
  check(hdal_buffer_from_dlpack(ctx, c, cpu, NULL, &b), "import");
  hdal_capsule_destroy(c);
  int reps = quick ? 5 : 21;
  double tv[21], mv_[21];
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    check(hdal_buffer_copy_to_host(b, out, nb), "copy_to_host");
    tv[r] = bench_now() - t0;
    t0 = bench_now();
    memcpy(out, a, nb);
    __asm__ volatile("" ::"r"(out) : "memory");
    mv_[r] = bench_now() - t0;
  }
  /* The ratio is the median of each round's own ratio: the two copies of a
   * round run back to back, so the machine's drift weighs on both alike. */
  double pr[21];
  for (int r = 0; r < reps; r++) pr[r] = mv_[r] / tv[r];
  double t = bench_median(tv, reps), mc = bench_median(mv_, reps), ratio = bench_median(pr, reps);
  if (out[1] != (float)N || out[N] != 1.0f) { /* spot check after the last memcpy: redo one copy */
    check(hdal_buffer_copy_to_host(b, out, nb), "copy_to_host");
  }
  check(hdal_buffer_copy_to_host(b, out, nb), "copy_to_host");
  if (out[1] != (float)N || out[N] != 1.0f) {
    fprintf(stderr, "bench_dlpack: transposed copy is wrong\n");
    return 1;
  }
  printf("\n%-44s %12s %14s %10s\n", "copies (4096x4096 float32, 64 MiB)", "hdal GB/s", "memcpy GB/s", "ratio");
  printf("%-44s %12.2f %14.2f %10.3f   (target >= 0.5)\n", "transposed view -> copy_to_host", nb / t / 1e9,
         nb / mc / 1e9, ratio);

  /* compacting imports into a new buffer vs malloc + memcpy into fresh memory */
  hdal_import_options always = {.struct_size = sizeof always, .copy = HDAL_COPY_ALWAYS};
  int64_t bstrides[2] = {0, 1}; /* one row broadcast to N rows */
  const char *names[2] = {"COPY_ALWAYS import of the transposed view", "COPY_ALWAYS import of a broadcast row"};
  for (int kind = 0; kind < 2; kind++) {
    m.dl_tensor.strides = kind ? bstrides : tstrides;
    for (int r = 0; r < reps; r++) {
      double t0 = bench_now();
      c = hdal_capsule_wrap(&m);
      check(hdal_buffer_from_dlpack(ctx, c, cpu, &always, &b), "compacting import");
      hdal_buffer_release(b);
      hdal_capsule_destroy(c);
      tv[r] = bench_now() - t0;
      t0 = bench_now();
      void *fresh = malloc(nb);
      if (!fresh) return 1;
      memcpy(fresh, a, nb);
      __asm__ volatile("" ::"r"(fresh) : "memory");
      free(fresh);
      mv_[r] = bench_now() - t0;
    }
    t = bench_median(tv, reps), mc = bench_median(mv_, reps);
    printf("%-44s %12.2f %14.2f %10.3f   (malloc+memcpy+free; target >= 1)\n", names[kind], nb / t / 1e9,
           nb / mc / 1e9, mc / t);
  }
  munmap(src, big);
  munmap(dst, big);
  hdal_context_destroy(ctx);
  printf("\n(deleter calls: %ld)\n", deleted);
  return 0;
}
