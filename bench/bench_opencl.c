/* SPDX-License-Identifier: BSD-3-Clause */
/* Host -> OpenCL -> host through hdal, next to the same bytes moved directly
 * with clCreateBuffer + clEnqueueWriteBuffer + clEnqueueReadBuffer on a queue
 * of the bench's own, on the same device, in the same run (interleaved, so
 * that both see the same machine).  hdal's path: a host tensor imported onto
 * the device (hdal_buffer_from_dlpack: allocation + write), copied back with
 * hdal_buffer_copy_to_host, released.  Uses the machine's ICDs as they are;
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

static double direct_round_trip(cl_context c, cl_command_queue q, void *src, void *dst, size_t n) {
  double t0 = now_s();
  cl_int e;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE, n, NULL, &e);
  if (!m || clEnqueueWriteBuffer(q, m, CL_TRUE, 0, n, src, 0, NULL, NULL) != CL_SUCCESS ||
      clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, dst, 0, NULL, NULL) != CL_SUCCESS) {
    fprintf(stderr, "bench_opencl: direct OpenCL transfer failed\n");
    exit(1);
  }
  clReleaseMemObject(m);
  return now_s() - t0;
}

int main(void) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,opencl"};
  hdal_context *ctx;
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) die("hdal_context_create", e);
  hdal_device *dev = NULL;
  const char *want = getenv("HDAL_BENCH_OPENCL_DEVICE");
  for (size_t i = 0; i < hdal_context_device_count(ctx) && !dev; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), "opencl") && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT &&
        (!want || hdal_device_dlpack_device(d).device_id == atoi(want)))
      dev = d;
  }
  if (!dev) {
    printf("bench_opencl: no PjRt-compatible OpenCL device (install pocl-opencl-icd): nothing measured\n");
    hdal_context_destroy(ctx);
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
  printf("%-34s %12s %12s %8s\n", "host -> OpenCL -> host (median)", "hdal GB/s", "direct GB/s", "ratio");
  static const size_t sizes[] = {(size_t)1 << 20, (size_t)16 << 20, (size_t)64 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    if (max_alloc && n > max_alloc) continue;
    int runs = n <= (1u << 20) ? 201 : n <= (16u << 20) ? 41 : 11;
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) {
      fprintf(stderr, "bench_opencl: out of memory for %zu bytes\n", n);
      return 1;
    }
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 7);
    memset(dst, 1, n); /* the pages exist before either path writes them */
    double *th = malloc((size_t)runs * sizeof *th), *td = malloc((size_t)runs * sizeof *td);
    hdal_round_trip(ctx, dev, src, dst, n); /* warm-up: queues, first allocations */
    direct_round_trip(c, q, src, dst, n);
    for (int r = 0; r < runs; r++) {
      th[r] = hdal_round_trip(ctx, dev, src, dst, n);
      td[r] = direct_round_trip(c, q, src, dst, n);
    }
    if (memcmp(src, dst, n)) {
      fprintf(stderr, "bench_opencl: the bytes did not come back\n");
      return 1;
    }
    double h = median(th, runs), d = median(td, runs);
    char label[64];
    snprintf(label, sizeof label, "%zu MiB, %d runs", n >> 20, runs);
    printf("%-34s %12.2f %12.2f %8.2f\n", label, 2.0 * (double)n / h / 1e9, 2.0 * (double)n / d / 1e9, d / h);
    free(th);
    free(td);
    free(src);
    free(dst);
  }
  printf("(ratio: hdal throughput / direct throughput; target >= 0.9)\n");
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  hdal_context_destroy(ctx);
  return 0;
}
