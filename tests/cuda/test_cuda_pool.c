/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on CUDA devices, against the fake driver (docs/memory.md):
 * the pool suite (tests/gpusuite/pool.c) on the CUDA face — the device's
 * default memory pool where the driver has one (cuMemAllocAsync, which the
 * fake does not count: no cuMemAlloc_v2), hdal's pool with stream-ordered
 * reuse behind a slow legacy stream where it has not (FAKECUDA_MEMPOOLS=0),
 * out-of-memory retries. */
#include "gpusuite/gpusuite.h"
#include "fakes/cuda/testcuda.h"

/* The legacy stream of GPU 0 waited for, in its primary context. */
static void synchronize(void) {
  CUdevice dev;
  CUcontext c;
  ck_assert_int_eq(cu.cuDeviceGet(&dev, 0), 0);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&c, dev), 0);
  ck_assert_int_eq(cu.cuCtxPushCurrent(c), 0);
  ck_assert_int_eq(cu.cuStreamSynchronize(NULL), 0);
  ck_assert_int_eq(cu.cuCtxPopCurrent(&c), 0);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRelease(0), 0);
}

/* The caller's own use of GPU 0: its primary context (and so the pool's memory) kept alive. */
static void keep_device(bool keep) {
  if (keep) {
    CUdevice dev;
    CUcontext c;
    ck_assert_int_eq(cu.cuDeviceGet(&dev, 0), 0);
    ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&c, dev), 0);
  } else {
    ck_assert_int_eq(cu.cuDevicePrimaryCtxRelease(0), 0);
  }
}

static const gpu_pool cuda = {
    .synchronize = synchronize,
    .keep_device = keep_device,
    .default_reused = {{"cuMemAlloc_v2", 0}},
    .default_released = {{"cuEventRecord", 0}}, /* the stream-ordered free needs no fence */
    .default_trimmed = {{"cuMemFree_v2", 0}},
    .default_retried = {{"cuMemAlloc_v2", 0}},
    .default_limited = {{"cuMemAlloc_v2", 0}},
    .hdal_reused = {{"cuMemAlloc_v2", 1}},
    .hdal_trimmed = {{"cuMemFree_v2", 1}},
    .hdal_retried = {{"cuMemFree_v2", 1}},
    .fenced = {{"cuEventRecord", 1}},
    .fence_done = {{"cuMemAlloc_v2", 2}},
    .fence_released = {{"cuMemFree_v2", 0}},
    .fence_trimmed = {{"cuMemFree_v2", 2}},
    .caching_off = {{"cuMemAlloc_v2", 2}, {"cuMemFree_v2", 2}},
};

int main(void) {
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  gpu_init(&gpu_face_cuda);
  Suite *s = suite_create("cuda_pool");
  TCase *tc = tcase_create("cuda_pool");
  gpu_pool_add(tc, &cuda, true);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
