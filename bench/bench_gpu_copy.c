/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU copies through hdal next to the CUDA driver's own, in the same run
 * (issue 48 item 5): device to the same device, hdal_buffer_copy_to_device
 * (gpu_copy: cuMemcpyDtoD + cuStreamSynchronize) against cuMemcpyDtoD + a
 * synchronisation on the same source; with two CUDA devices, GPU 0 to GPU 1
 * (gpu_copy: cuMemcpyPeer) against cuMemcpyPeer, with what hdal_device_link()
 * says of peer access.  The driver is the library hdal loads
 * (HDAL_CUDA_LIBRARY, else libcuda.so.1), opened again with dlopen (never
 * linked), so the fake driver of the build tree serves both sides:
 * `make -C bench run-bench-gpu-copy`.  `--quick`: smaller sizes, fewer rounds.
 * Exits 77 where no CUDA device answers. */
#include "config.h"
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hdal.h>
#include "bench_time.h"

/* The driver's types, as far as this bench needs them (cuda.h is not needed to build). */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;

static struct {
  CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*memcpy_peer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
  CUresult (*push)(CUcontext);
  CUresult (*pop)(CUcontext *);
  CUresult (*ctx_sync)(void);         /* cuCtxSynchronize; NULL where the library lacks it */
  CUresult (*stream_sync)(CUstream);  /* cuStreamSynchronize: hdal's own wait, the fallback */
} cu;

static int quick;


static void check(hdal_error *e, const char *what) {
  if (!e) return;
  fprintf(stderr, "bench_gpu_copy: %s: %s\n", what, hdal_error_message(e));
  exit(1);
}

static void check_cu(CUresult r, const char *what) {
  if (r == 0) return;
  fprintf(stderr, "bench_gpu_copy: %s: CUresult %d\n", what, r);
  exit(1);
}

static void *sym(void *lib, const char *name, int required) {
  void *f = dlsym(lib, name);
  if (!f && required) {
    fprintf(stderr, "bench_gpu_copy: the driver has no %s\n", name);
    exit(1);
  }
  return f;
}

static CUresult driver_sync(void) { return cu.ctx_sync ? cu.ctx_sync() : cu.stream_sync(NULL); }

static CUcontext primary_context(hdal_device *d) {
  intptr_t h = 0;
  check(hdal_device_native_handle(d, HDAL_NATIVE_CUDA_CONTEXT, &h), "HDAL_NATIVE_CUDA_CONTEXT");
  return (CUcontext)h;
}

static CUdeviceptr dptr(const hdal_buffer *b) { return (CUdeviceptr)(uintptr_t)hdal_buffer_data(b); }

static hdal_buffer *allocate(hdal_device *d, size_t n) {
  int64_t shape[1] = {(int64_t)n};
  hdal_buffer *b;
  check(hdal_buffer_allocate(d, 1, shape, (DLDataType){kDLUInt, 8, 1}, &b), "hdal_buffer_allocate");
  return b;
}

static const char *human(size_t n) {
  static char buf[4][24];
  static int k;
  char *b = buf[k++ % 4];
  if (n >= (1u << 20)) snprintf(b, 24, "%zu MiB", n >> 20);
  else snprintf(b, 24, "%zu KiB", n >> 10);
  return b;
}

/* The first and last 64 KiB of `b` are `pattern`'s. */
static void verify(const hdal_buffer *b, const unsigned char *pattern, size_t n, const char *what) {
  size_t k = n < 65536 ? n : 65536;
  unsigned char got[65536];
  check(hdal_buffer_read(b, 0, got, k), "hdal_buffer_read");
  int ok = !memcmp(got, pattern, k);
  check(hdal_buffer_read(b, n - k, got, k), "hdal_buffer_read");
  ok = ok && !memcmp(got, pattern + (n - k), k);
  if (!ok) {
    fprintf(stderr, "bench_gpu_copy: %s, %s: the copy differs from its source\n", what, human(n));
    exit(1);
  }
}

#define MAX_ROUNDS 21
#define MAX_ITERS 64

/* One table row: `iters` copies a round (each complete before the next), each
 * round hdal's then the driver's, back to back; the ratio is the median of the
 * rounds' own ratios (driver time / hdal time: hdal's share of the driver's
 * GB/s), as bench_dlpack's.  hdal's copies go to new buffers
 * (hdal_buffer_copy_to_device: a pool allocation, then the copy), released
 * once the clock has stopped; the driver's to as many buffers, allocated
 * once: the same number of destinations on both sides, so that neither
 * writes one destination again and again while the GPU's L2 cache (50 MiB
 * on an H100) holds it, which the other cannot (64 copies of 1 MiB). */
static double row(hdal_device *sd, hdal_device *dd, CUcontext sc, CUcontext dc, size_t n, const char *what) {
  int rounds = quick ? 5 : MAX_ROUNDS;
  int iters = (int)((64u << 20) / n);
  if (iters < 1) iters = 1;
  if (iters > MAX_ITERS) iters = MAX_ITERS;
  unsigned char *pattern = malloc(n);
  if (!pattern) exit(1);
  for (size_t i = 0; i < n; i++) pattern[i] = (unsigned char)(i * 131 + (i >> 16));
  hdal_buffer *src = allocate(sd, n), *ref[MAX_ITERS], *out[MAX_ITERS];
  check(hdal_buffer_write(src, 0, pattern, n), "hdal_buffer_write");
  CUdeviceptr s = dptr(src), d[MAX_ITERS];
  for (int i = 0; i < iters; i++) d[i] = dptr(ref[i] = allocate(dd, n));
  int peer = sd != dd;
  double th[MAX_ROUNDS], td[MAX_ROUNDS], pr[MAX_ROUNDS];
  for (int r = -1; r < rounds; r++) { /* round -1 warms both up */
    double t0 = bench_now();
    for (int i = 0; i < iters; i++) check(hdal_buffer_copy_to_device(src, dd, &out[i]), "hdal_buffer_copy_to_device");
    double t_hdal = bench_now() - t0;
    if (r == rounds - 1) verify(out[0], pattern, n, what);
    for (int i = 0; i < iters; i++) hdal_buffer_release(out[i]);
    check_cu(cu.push(dc), "cuCtxPushCurrent");
    t0 = bench_now();
    for (int i = 0; i < iters; i++) {
      check_cu(peer ? cu.memcpy_peer(d[i], dc, s, sc, n) : cu.memcpy_dtod(d[i], s, n), peer ? "cuMemcpyPeer" : "cuMemcpyDtoD");
      check_cu(driver_sync(), cu.ctx_sync ? "cuCtxSynchronize" : "cuStreamSynchronize");
    }
    double t_drv = bench_now() - t0;
    CUcontext popped;
    check_cu(cu.pop(&popped), "cuCtxPopCurrent");
    if (r < 0) continue;
    th[r] = t_hdal / iters, td[r] = t_drv / iters, pr[r] = t_drv / t_hdal;
  }
  verify(ref[iters - 1], pattern, n, "the driver's copy");
  double h = bench_median(th, rounds), dr = bench_median(td, rounds), ratio = bench_median(pr, rounds);
  char label[64];
  snprintf(label, sizeof label, "%s, %s (x%d a round)", what, human(n), iters);
  printf("%-44s %12.2f %14.2f %10.3f\n", label, (double)n / h / 1e9, (double)n / dr / 1e9, ratio);
  hdal_buffer_release(src);
  for (int i = 0; i < iters; i++) hdal_buffer_release(ref[i]);
  free(pattern);
  return ratio;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else {
      fprintf(stderr, "usage: bench_gpu_copy [--quick]\n");
      return 2;
    }
  }
  hdal_context *ctx;
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,cuda";
  check(hdal_context_create(&o, &ctx), "context");
  hdal_device *gpu[2] = {NULL, NULL};
  int ngpu = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx) && ngpu < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), "cuda")) gpu[ngpu++] = d;
  }
  if (!ngpu) {
    const char *why = "the cuda backend is not in the context";
    for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
      if (!strcmp(hdal_context_backend_name(ctx, i), "cuda")) why = hdal_context_backend_status(ctx, i);
    printf("SKIP: bench_gpu_copy: no CUDA device (cuda backend: %s)\n", why);
    hdal_context_destroy(ctx);
    return 77;
  }
  const char *libname = getenv("HDAL_CUDA_LIBRARY");
  if (!libname || !*libname) libname = "libcuda.so.1";
  void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench_gpu_copy: %s\n", dlerror());
    return 1;
  }
  *(void **)&cu.memcpy_dtod = sym(lib, "cuMemcpyDtoD_v2", 1);
  *(void **)&cu.memcpy_peer = sym(lib, "cuMemcpyPeer", 1);
  *(void **)&cu.push = sym(lib, "cuCtxPushCurrent_v2", 1);
  *(void **)&cu.pop = sym(lib, "cuCtxPopCurrent_v2", 1);
  *(void **)&cu.ctx_sync = sym(lib, "cuCtxSynchronize", 0);
  *(void **)&cu.stream_sync = sym(lib, "cuStreamSynchronize", 1);

  printf("hdal GPU copies (%s run; medians; ratio = hdal GB/s / the driver's, median of each round's ratio)\n",
         quick ? "quick" : "full");
  printf("driver: %s; hdal: hdal_buffer_copy_to_device; driver: cuMemcpyDtoD / cuMemcpyPeer + %s\n", libname,
         cu.ctx_sync ? "cuCtxSynchronize" : "cuStreamSynchronize(0) (the library has no cuCtxSynchronize)");
  for (int g = 0; g < ngpu; g++) printf("GPU %d: %s\n", g, hdal_device_kind(gpu[g]));

  size_t full[] = {1u << 20, 64u << 20, 256u << 20}, brief[] = {1u << 20, 16u << 20, 64u << 20};
  size_t *sizes = quick ? brief : full;
  int nsizes = 3;
  CUcontext c0 = primary_context(gpu[0]);
  printf("\n%-44s %12s %14s %10s\n", "device -> same device", "hdal GB/s", "driver GB/s", "ratio");
  double last = 0;
  for (int k = 0; k < nsizes; k++) last = row(gpu[0], gpu[0], c0, c0, sizes[k], "GPU 0 -> GPU 0");

  if (ngpu == 2) {
    CUcontext c1 = primary_context(gpu[1]);
    hdal_link l;
    hdal_error *e = hdal_device_link(gpu[0], gpu[1], &l);
    if (e) {
      printf("\nhdal_device_link(GPU 0, GPU 1): %s\n", hdal_error_message(e));
      hdal_error_destroy(e);
    } else {
      /* What the runtime allows; whether cuMemcpyPeer goes direct also needs
       * peer access enabled between the two contexts (docs/cuda.md). */
      printf("\nhdal_device_link(GPU 0, GPU 1): %s, peer_access %s\n", hdal_link_kind_name(l.kind),
             l.peer_access ? "yes (cuDeviceCanAccessPeer, both ways)"
                           : "no (cuMemcpyPeer stages through host memory)");
    }
    printf("%-44s %12s %14s %10s\n", "GPU 0 -> GPU 1", "hdal GB/s", "driver GB/s", "ratio");
    for (int k = 0; k < nsizes; k++) row(gpu[0], gpu[1], c0, c1, sizes[k], "GPU 0 -> GPU 1");
  } else {
    printf("\n(one CUDA device: no GPU 0 -> GPU 1 table)\n");
  }
  printf("\nd2d ratio at %s: %.2f (target >= 0.95%s)\n", human(sizes[nsizes - 1]), last,
         quick ? "; the target is for 256 MiB, a full run" : "");
  hdal_context_destroy(ctx);
  return 0;
}
