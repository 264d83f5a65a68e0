/* SPDX-License-Identifier: BSD-3-Clause */
/* ROCm buffers end to end (docs/rocm.md): the GPU buffer suite
 * (tests/gpusuite/buffers.c) on the HIP face, and the caller's current device
 * kept.  Against both fake HIP runtimes (each case runs on the ROCm 5 and the
 * ROCm 6 ABI), or the real one under tests/gpu/ (HDAL_TEST_REAL_ROCM;
 * HDAL_TEST_ROCM_DEVICES says how many GPUs the two-device cases may use). */
#include "gpusuite/gpusuite.h"
#include "fakes/hip/testhip.h"

static void abi5(void) { gpu_fake = "fakehip5"; }
static void abi6(void) { gpu_fake = "fakehip6"; }

static void wrong_gpu(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor claims ROCm device 1, but the runtime says its data %p is on ROCm device 0", data);
}

static void unknown(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor on (kDLROCM, 0): the HIP runtime does not know its data %p", data);
}

/* The fake has memory pools: hdal allocates with hipMallocAsync (docs/memory.md). */
static const char *out_of_memory(void) {
  return !strcmp(gpu_fake, "fakehip5")
             ? "hipMallocAsync of 4096 bytes on ROCm device 0: hipErrorOutOfMemory (2)"
             : "hipMallocAsync of 4096 bytes on ROCm device 0: hipErrorOutOfMemory (2): out of memory";
}

static const gpu_buffers rocm = {
    .peer_copy = "hipMemcpyPeer",
    .enable_peer = "hipDeviceEnablePeerAccess",
    .wait_event = "hipStreamWaitEvent",
    .record = "hipEventRecord",
    .export_on = 0,
    .wrong_gpu = wrong_gpu,
    .unknown = unknown,
    .out_of_memory = out_of_memory,
};

/* The caller's current device is left as found; everything hdal allocated is
 * freed with the context. */
START_TEST(current_device_left_as_found) {
  hdal_context *ctx = gpu_buffers_setup("cpu,rocm");
  float h[2] = {1, 2};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 0, NULL);
  ck_assert_int_eq(hip.hipSetDevice(1), 0);
  hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, 0), HDAL_COPY_IF_NEEDED);
  test_assert_values(b, 2, h);
  int cur = -1;
  ck_assert_int_eq(hip.hipGetDevice(&cur), 0);
  ck_assert_int_eq(cur, 1);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(hip.fakehip_live_allocations(), 0);
}
END_TEST

/* hdal_device_native_handle: the HIP device (its ordinal, which the test selects to copy into hdal's
 * buffer) and the work stream, the null stream; the other APIs' kinds refused. */
START_TEST(native_handles) {
  hdal_context *ctx = gpu_buffers_setup("cpu,rocm");
  int ordinal = gpu_two ? 1 : 0;
  hdal_device *d = gpu_device(ctx, ordinal);
  intptr_t h = 5, stream = 5;
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_HIP_DEVICE, &h));
  ck_assert_int_eq(h, ordinal);
  int64_t n = 4;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, (DLDataType){kDLFloat, 32, 1}, &b));
  float in[4] = {1.5f, 2.5f, 3.5f, 4.5f}, out[4] = {0};
  int prev = -1;
  ck_assert_int_eq(hip.hipGetDevice(&prev), 0);
  ck_assert_int_eq(hip.hipSetDevice((int)h), 0);
  ck_assert_int_eq(hip.hipMemcpy(hdal_buffer_data(b), in, sizeof in, TEST_HIP_MEMCPY_HOST_TO_DEVICE), 0);
  ck_assert_int_eq(hip.hipSetDevice(prev), 0);
  ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_HIP_STREAM, &h));
  ck_assert_ok(hdal_device_work_stream(d, &stream));
  ck_assert_int_eq(h, 0);
  ck_assert_int_eq(stream, h);
  ck_assert_int_eq(hip.hipStreamSynchronize((hipStream_t)h), 0);
  ck_assert_int_eq(test_assert_native_refused(d, HDAL_NATIVE_HIP_DEVICE, HDAL_NATIVE_HIP_STREAM), 10);
  hdal_context_destroy(ctx);
}
END_TEST

static TCase *cases(const char *name, void (*abi)(void)) {
  TCase *tc = tcase_create(name);
  if (abi) tcase_add_checked_fixture(tc, abi, NULL);
  gpu_buffers_add(tc, &rocm);
  tcase_add_test(tc, native_handles);
  if (!gpu_real) tcase_add_test(tc, current_device_left_as_found);
  return tc;
}

int main(void) {
  Suite *s = suite_create("rocm_buffers");
  gpu_init(&gpu_face_hip);
  if (gpu_real) {
    suite_add_tcase(s, cases("rocm_buffers", NULL));
  } else {
    suite_add_tcase(s, cases("rocm6", abi6));
    suite_add_tcase(s, cases("rocm5", abi5));
  }
  return test_run_suite(s);
}
