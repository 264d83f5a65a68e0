/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU suites' CUDA face (tests/gpusuite/gpusuite.h): the test's own
 * driver calls, each in the primary context of its GPU, against the fake
 * driver (HDAL_CUDA_LIBRARY) or, under tests/gpu/, the real one. */
#include "gpusuite/gpusuite.h"
#include "testcuda.h"

#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_CONTEXT 201

test_cuda cu;
static CUcontext held[8];

CUresult test_cuda_enter(int ordinal) {
  if (ordinal < 0 || ordinal >= 8) return CUDA_ERROR_INVALID_VALUE;
  if (!held[ordinal]) {
    CUdevice dev;
    CUresult r = cu.cuDeviceGet(&dev, ordinal);
    if (!r) r = cu.cuDevicePrimaryCtxRetain(&held[ordinal], dev);
    if (r) return r;
  }
  return cu.cuCtxPushCurrent(held[ordinal]);
}

CUresult test_cuda_leave(int ordinal) {
  CUcontext c;
  CUresult r = cu.cuCtxPopCurrent(&c);
  return r ? r : c == held[ordinal] ? 0 : CUDA_ERROR_INVALID_CONTEXT;
}

static void name_fake(const char *path) { setenv("HDAL_CUDA_LIBRARY", path, 1); }

static bool open_driver(gpu_hooks *hooks) {
  if (!test_cuda_open(&cu) || cu.cuInit(0)) return false;
  *hooks = (gpu_hooks){cu.fakecuda_live_allocations, cu.fakecuda_calls, cu.fakecuda_legacy_launch};
  return true;
}

static int count(int *n) { return cu.cuDeviceGetCount(n); }

static void *ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }
static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* `r`, or the error of leaving the context when `r` is 0. */
static int left(int ordinal, CUresult r) {
  CUresult l = test_cuda_leave(ordinal);
  return r ? r : l;
}

static int alloc(int ordinal, const void *host, size_t n, void **out) {
  CUdeviceptr p = 0;
  CUresult r = test_cuda_enter(ordinal);
  if (r) return r;
  r = cu.cuMemAlloc(&p, n);
  if (!r && (r = cu.cuMemcpyHtoD(p, host, n))) cu.cuMemFree(p);
  *out = ptr(p);
  return left(ordinal, r);
}

static int device_free(int ordinal, void *p) {
  CUresult r = test_cuda_enter(ordinal);
  return r ? r : left(ordinal, cu.cuMemFree(dptr(p)));
}

/* The data is on GPU 0. */
static int read_back(void *host, const void *p, size_t n) {
  CUresult r = test_cuda_enter(0);
  return r ? r : left(0, cu.cuMemcpyDtoH(host, dptr(p), n));
}

static int pinned_alloc(size_t n, void **out) {
  CUresult r = test_cuda_enter(0);
  return r ? r : left(0, cu.cuMemAllocHost(out, n));
}

static int pinned_free(void *p) {
  CUresult r = test_cuda_enter(0);
  return r ? r : left(0, cu.cuMemFreeHost(p));
}

static int late_write(void *p, const void *host, size_t n, intptr_t *stream) {
  CUstream s = NULL;
  CUresult r = test_cuda_enter(0);
  if (r) return r;
  r = cu.cuStreamCreate(&s, TEST_CU_STREAM_NON_BLOCKING);
  if (!r) r = cu.cuMemcpyHtoDAsync(dptr(p), host, n, s);
  *stream = (intptr_t)s;
  return left(0, r);
}

static int stream_destroy(intptr_t s) {
  CUresult r = test_cuda_enter(0);
  return r ? r : left(0, cu.cuStreamDestroy((CUstream)s));
}

const gpu_face gpu_face_cuda = {
    .platform = "cuda",
    .vendor = 0x10de,
    .memory = kDLCUDA,
    .pinned = kDLCUDAHost,
    .real = "HDAL_TEST_REAL_CUDA",
    .devices = "HDAL_TEST_CUDA_DEVICES",
    .fake = "fakecuda",
    .prefix = "FAKECUDA_",
    .slow = "FAKECUDA_SLOW_LEGACY",
    .guarded = false, /* the fake's device memory is plain host memory */
    .mempools = true,
    .name_fake = name_fake,
    .open = open_driver,
    .library = test_cuda_library,
    .count = count,
    .alloc = alloc,
    .free = device_free,
    .read = read_back,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .late_write = late_write,
    .stream_destroy = stream_destroy,
};
