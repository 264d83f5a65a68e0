/* SPDX-License-Identifier: BSD-3-Clause */
/* Host -> OpenCL -> host through hdal, next to the same bytes moved directly
 * with clCreateBuffer + clEnqueueWriteBuffer + clEnqueueReadBuffer on a queue
 * of the bench's own, on the same device, in the same run (interleaved, so
 * that all see the same machine).  hdal's path: a host tensor imported onto
 * the device (hdal_buffer_from_dlpack: allocation + write), copied back with
 * hdal_buffer_copy_to_host, released; with the device's memory pool (the
 * default) and without it (a second context made under HDAL_MEMORY_POOL=0).
 * The direct path with a fresh cl_mem per transfer and with one reused, and
 * two memcpy of the same bytes through a host buffer (docs/memory.md).  Uses the machine's ICDs as they are;
 * the first PjRt-compatible OpenCL device, or the one named by
 * HDAL_BENCH_OPENCL_DEVICE (its flat index). */
#include "config.h"
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hdal.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void die(const char *what, hdal_error *e) {
  fprintf(stderr, "bench_opencl: %s: %s\n", what, hdal_error_message(e));
  exit(1);
}

static void no_delete(DLManagedTensor *m) {}

/* The cl_device_id of flat index `flat` (platforms in loader order, then devices). */
static cl_device_id cl_device_at(int flat) {
  cl_platform_id ps[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return NULL;
  for (cl_uint i = 0; i < np && i < 16; i++) {
    cl_device_id ds[64];
    cl_uint nd = 0;
    if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS) continue;
    if (flat < (int)nd) return ds[flat];
    flat -= (int)nd;
  }
  return NULL;
}

static double hdal_round_trip(hdal_context *ctx, hdal_device *dev, void *src, void *dst, size_t n) {
  int64_t shape[1] = {(int64_t)n};
  DLManagedTensor m = {.dl_tensor = {.data = src, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLUInt, 8, 1},
                                     .shape = shape},
                       .deleter = no_delete};
  double t0 = now_s();
  hdal_capsule *cap = hdal_capsule_wrap(&m);
  hdal_buffer *b = NULL;
  hdal_error *e = hdal_buffer_from_dlpack(ctx, cap, dev, NULL, &b);
  if (e) die("hdal_buffer_from_dlpack", e);
  if ((e = hdal_buffer_copy_to_host(b, dst, n))) die("hdal_buffer_copy_to_host", e);
  hdal_buffer_release(b);
  hdal_capsule_destroy(cap);
  return now_s() - t0;
}

/* `reuse`: a cl_mem made before (not timed); NULL: a fresh one, released after. */
static double direct_round_trip(cl_context c, cl_command_queue q, cl_mem reuse, void *src, void *dst, size_t n) {
  double t0 = now_s();
  cl_int e;
  cl_mem m = reuse ? reuse : clCreateBuffer(c, CL_MEM_READ_WRITE, n, NULL, &e);
  if (!m || clEnqueueWriteBuffer(q, m, CL_TRUE, 0, n, src, 0, NULL, NULL) != CL_SUCCESS ||
      clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, dst, 0, NULL, NULL) != CL_SUCCESS) {
    fprintf(stderr, "bench_opencl: direct OpenCL transfer failed\n");
    exit(1);
  }
  if (!reuse) clReleaseMemObject(m);
  return now_s() - t0;
}

static double memcpy_round_trip(void *tmp, void *src, void *dst, size_t n) {
  double t0 = now_s();
  memcpy(tmp, src, n);
  memcpy(dst, tmp, n);
  return now_s() - t0;
}

/* The first PjRt-compatible OpenCL device of ctx, or the one HDAL_BENCH_OPENCL_DEVICE names. */
static hdal_device *bench_device(hdal_context *ctx) {
  const char *want = getenv("HDAL_BENCH_OPENCL_DEVICE");
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), "opencl") && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT &&
        (!want || hdal_device_dlpack_device(d).device_id == atoi(want)))
      return d;
  }
  return NULL;
}

static double gbps(size_t n, double *t, int runs) { return 2.0 * (double)n / median(t, runs) / 1e9; }

int main(void) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,opencl"};
  hdal_context *ctx, *ctx_nopool;
  unsetenv("HDAL_MEMORY_POOL");
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) die("hdal_context_create", e);
  setenv("HDAL_MEMORY_POOL", "0", 1);
  if ((e = hdal_context_create(&o, &ctx_nopool))) die("hdal_context_create", e);
  unsetenv("HDAL_MEMORY_POOL");
  hdal_device *dev = bench_device(ctx), *dev_nopool = bench_device(ctx_nopool);
  if (!dev || !dev_nopool) {
    printf("bench_opencl: no PjRt-compatible OpenCL device (install pocl-opencl-icd): nothing measured\n");
    hdal_context_destroy(ctx);
    hdal_context_destroy(ctx_nopool);
    return 0;
  }
  cl_device_id id = cl_device_at(hdal_device_dlpack_device(dev).device_id);
  cl_int err;
  cl_context c = clCreateContext(NULL, 1, &id, NULL, NULL, &err);
  cl_command_queue q = c ? clCreateCommandQueue(c, id, 0, &err) : NULL;
  if (!q) {
    fprintf(stderr, "bench_opencl: cannot create the direct path's queue: %d\n", err);
    return 1;
  }
  cl_ulong max_alloc = 0;
  clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);

  printf("device: %s (kDLOpenCL:%d)\n", hdal_device_kind(dev), hdal_device_dlpack_device(dev).device_id);
  printf("host -> OpenCL -> host, GB/s (2 x bytes / median time)\n");
  printf("%-18s %10s %10s %10s %10s %10s %8s\n", "size, runs", "hdal", "hdal-nopool", "cl-fresh", "cl-reused",
         "2x memcpy", "hdal/mc");
  static const size_t sizes[] = {(size_t)1 << 20, (size_t)16 << 20, (size_t)64 << 20, (size_t)256 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    if (max_alloc && n > max_alloc) {
      printf("%-18s (above CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu)\n", "", (unsigned long long)max_alloc);
      continue;
    }
    int runs = n <= (1u << 20) ? 201 : n <= (16u << 20) ? 41 : n <= (64u << 20) ? 11 : 5;
    unsigned char *src = malloc(n), *dst = malloc(n), *tmp = malloc(n);
    if (!src || !dst || !tmp) {
      fprintf(stderr, "bench_opencl: out of memory for %zu bytes\n", n);
      return 1;
    }
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 7);
    memset(dst, 1, n); /* the pages exist before any path writes them */
    memset(tmp, 1, n);
    cl_mem reused = clCreateBuffer(c, CL_MEM_READ_WRITE, n, NULL, &err);
    if (!reused) {
      fprintf(stderr, "bench_opencl: clCreateBuffer of %zu bytes: %d\n", n, err);
      return 1;
    }
    double *t[5];
    for (int i = 0; i < 5; i++) t[i] = malloc((size_t)runs * sizeof *t[i]);
    /* warm-up: queues, first allocations, the pool's first block */
    hdal_round_trip(ctx, dev, src, dst, n);
    hdal_round_trip(ctx_nopool, dev_nopool, src, dst, n);
    direct_round_trip(c, q, NULL, src, dst, n);
    direct_round_trip(c, q, reused, src, dst, n);
    for (int r = 0; r < runs; r++) {
      t[0][r] = hdal_round_trip(ctx, dev, src, dst, n);
      t[1][r] = hdal_round_trip(ctx_nopool, dev_nopool, src, dst, n);
      t[2][r] = direct_round_trip(c, q, NULL, src, dst, n);
      t[3][r] = direct_round_trip(c, q, reused, src, dst, n);
      t[4][r] = memcpy_round_trip(tmp, src, dst, n);
    }
    if (memcmp(src, dst, n)) {
      fprintf(stderr, "bench_opencl: the bytes did not come back\n");
      return 1;
    }
    double g[5];
    for (int i = 0; i < 5; i++) g[i] = gbps(n, t[i], runs);
    char label[64];
    snprintf(label, sizeof label, "%zu MiB, %d", n >> 20, runs);
    printf("%-18s %10.2f %10.2f %10.2f %10.2f %10.2f %8.2f\n", label, g[0], g[1], g[2], g[3], g[4], g[0] / g[4]);
    for (int i = 0; i < 5; i++) free(t[i]);
    clReleaseMemObject(reused);
    free(src);
    free(dst);
    free(tmp);
    hdal_device_trim(dev); /* the next size starts from an empty pool */
  }
  hdal_memory_stats ms = {.struct_size = sizeof ms};
  if (!hdal_device_memory_stats(dev, &ms))
    printf("pool: %llu allocations, %llu from cached memory, peak %llu bytes in use\n",
           (unsigned long long)ms.num_allocs, (unsigned long long)ms.num_pool_hits,
           (unsigned long long)ms.peak_bytes_in_use);
  printf("(hdal/mc: hdal with its pool against two memcpy of the same bytes; target >= 0.7)\n");
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  hdal_context_destroy(ctx);
  hdal_context_destroy(ctx_nopool);
  return 0;
}
