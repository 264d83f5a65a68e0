/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU suites' HIP face (tests/gpusuite/gpusuite.h): the test's own
 * runtime calls, against the fake runtime of the moment (HDAL_ROCM_LIBRARY:
 * fakehip6, fakehip5, fakehip50) or, under tests/gpu/, the real one. */
#include "gpusuite/gpusuite.h"
#include "testhip.h"

test_hip hip;

static void name_fake(const char *path) { setenv("HDAL_ROCM_LIBRARY", path, 1); }

static bool open_runtime(gpu_hooks *hooks) {
  if (!test_hip_open(&hip) || hip.hipInit(0)) return false;
  *hooks = (gpu_hooks){hip.fakehip_live_allocations, hip.fakehip_calls, hip.fakehip_null_launch};
  return true;
}

static const char *library(void) { return hip.path; }

static int count(int *n) { return hip.hipGetDeviceCount(n); }

/* Made with GPU `ordinal` current; GPU 0 is current after. */
static int alloc(int ordinal, const void *host, size_t n, void **out) {
  *out = NULL;
  hipError_t r = hip.hipSetDevice(ordinal);
  if (!r) r = hip.hipMalloc(out, n);
  if (!r) r = hip.hipMemcpy(*out, host, n, TEST_HIP_MEMCPY_HOST_TO_DEVICE);
  return r ? r : hip.hipSetDevice(0);
}

static int device_free(int ordinal, void *p) { return hip.hipFree(p); }

static int read_back(void *host, const void *p, size_t n) {
  return hip.hipMemcpy(host, p, n, TEST_HIP_MEMCPY_DEVICE_TO_HOST);
}

/* Allocated with GPU 1 current (on the fake): the runtime's device for it is
 * 1, which a module reading ROCm 6's numbering as ROCm 5's would take for GPU
 * 1 memory. */
static int pinned_alloc(size_t n, void **out) {
  hipError_t r = gpu_real ? 0 : hip.hipSetDevice(1);
  if (!r) r = hip.hipHostMalloc(out, n, 0);
  return r ? r : hip.hipSetDevice(0);
}

static int pinned_free(void *p) { return hip.hipHostFree(p); }

static int late_write(void *p, const void *host, size_t n, intptr_t *stream) {
  hipStream_t s = NULL;
  hipError_t r = hip.hipStreamCreateWithFlags(&s, TEST_HIP_STREAM_NON_BLOCKING);
  if (!r) r = hip.hipMemcpyAsync(p, host, n, TEST_HIP_MEMCPY_HOST_TO_DEVICE, s);
  *stream = (intptr_t)s;
  return r;
}

static int stream_destroy(intptr_t s) { return hip.hipStreamDestroy((hipStream_t)s); }

const gpu_face gpu_face_hip = {
    .platform = "rocm",
    .vendor = 0x1002,
    .memory = kDLROCM,
    .pinned = kDLROCMHost,
    .real = "HDAL_TEST_REAL_ROCM",
    .devices = "HDAL_TEST_ROCM_DEVICES",
    .fake = "fakehip6",
    .prefix = "FAKEHIP_",
    .slow = "FAKEHIP_SLOW_NULL",
    .guarded = true,
    .mempools = true,
    .name_fake = name_fake,
    .open = open_runtime,
    .library = library,
    .count = count,
    .alloc = alloc,
    .free = device_free,
    .read = read_back,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .late_write = late_write,
    .stream_destroy = stream_destroy,
};
