/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on ROCm devices, against the fake HIP runtime, both ABIs
 * (docs/memory.md, docs/rocm.md): the pool suite (tests/gpusuite/pool.c) on
 * the HIP face — the device's default memory pool where the runtime has one
 * (hipMallocAsync/hipFreeAsync), hdal's pool where its calls answer
 * hipErrorNotSupported (FAKEHIP_MEMPOOLS=0) or a ROCm 5.0 runtime lacks them,
 * with stream-ordered reuse behind a slow null stream (event fences),
 * statistics, trimming, the limit and out-of-memory retries. */
#include "gpusuite/gpusuite.h"
#include "fakes/hip/testhip.h"

static void abi5(void) { gpu_fake = "fakehip5"; }
static void abi6(void) { gpu_fake = "fakehip6"; }
static void rocm50(void) { gpu_fake = "fakehip50"; }

static void synchronize(void) { ck_assert_int_eq(hip.hipStreamSynchronize(NULL), 0); }

static const gpu_pool rocm = {
    .synchronize = synchronize,
    .default_reused = {{"hipMallocAsync", 2}, {"hipFreeAsync", 1}, {"hipMalloc", 0}},
    /* hipFreeAsync is stream-ordered: no fence */
    .default_released = {{"hipEventRecord", 0}, {"hipEventQuery", 0}},
    .default_trimmed = {{"hipMemPoolTrimTo", 1}, {"hipFree", 0}},
    .default_retried = {{"hipMallocAsync", 3}, {"hipMemPoolTrimTo", 1}}, /* 4096, 2000 refused, 2000 */
    .default_limited = {{"hipMemPoolTrimTo", 1}, {"hipMallocAsync", 2}}, /* no refusal: trimmed before asking */
    .hdal_reused = {{"hipMalloc", 1}, {"hipMallocAsync", 0}},
    .hdal_trimmed = {{"hipFree", 1}, {"hipMemPoolTrimTo", 0}},
    .hdal_retried = {{"hipFree", 1}},
    .fenced = {{"hipEventRecord", 1}, {"hipEventQuery", 1}}, /* hipErrorNotReady */
    .fence_done = {{"hipEventQuery", 2}, {"hipMalloc", 2}, {"hipMallocAsync", 0}},
    .fence_released = {{"hipFree", 0}},
    .fence_trimmed = {{"hipEventSynchronize", 2}, {"hipFree", 2}},
    .caching_off = {{"hipMalloc", 2}, {"hipFree", 2}, {"hipMallocAsync", 0}},
};

/* ROCm 5.0 has no stream-ordered allocator: hdal's pool serves. */
START_TEST(rocm50_without_the_entry_points) {
  void *h = NULL;
  char path[4200];
  ck_assert(gpu_fake_path(path, sizeof path));
  ck_assert_ptr_nonnull(h = dlopen(path, RTLD_NOW | RTLD_LOCAL));
  ck_assert_ptr_null(dlsym(h, "hipMallocAsync"));
  ck_assert_ptr_null(dlsym(h, "hipDeviceGetDefaultMemPool"));
  dlclose(h);
}
END_TEST

static TCase *cases(const char *name, void (*abi)(void)) {
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, abi, NULL);
  if (abi == rocm50) tcase_add_test(tc, rocm50_without_the_entry_points);
  gpu_pool_add(tc, &rocm, abi != rocm50);
  return tc;
}

int main(void) {
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  unsetenv("FAKEHIP_MEMPOOLS");
  unsetenv("FAKEHIP_MEMORY");
  unsetenv("FAKEHIP_SLOW_NULL");
  gpu_init(&gpu_face_hip);
  Suite *s = suite_create("rocm_pool");
  suite_add_tcase(s, cases("rocm6", abi6));
  suite_add_tcase(s, cases("rocm5", abi5));
  suite_add_tcase(s, cases("rocm50", rocm50));
  return test_run_suite(s);
}
