/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA buffers end to end (docs/dlpack.md for CUDA devices): the GPU buffer
 * suite (tests/gpusuite/buffers.c) on the CUDA face, and what only CUDA has:
 * managed memory, hdal_buffer_allocate's legacy stream, primary contexts.
 * Against the fake driver, or the real one under tests/gpu/ (HDAL_TEST_REAL_CUDA;
 * HDAL_TEST_CUDA_DEVICES says how many GPUs the two-device cases may use). */
#include "gpusuite/gpusuite.h"
#include "fakes/cuda/testcuda.h"

static void wrong_gpu(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor claims CUDA device 1, but the driver says its data %#llx is on CUDA device 0",
           (unsigned long long)(uintptr_t)data);
}

static void unknown(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor on (kDLCUDA, 0): the CUDA driver does not know its data %#llx",
           (unsigned long long)(uintptr_t)data);
}

/* The device's memory pool serves hdal's allocations unless caching is off (docs/memory.md). */
static const char *out_of_memory(void) {
  const char *pool = getenv("HDAL_MEMORY_POOL");
  return pool && !strcmp(pool, "0")
             ? "cuMemAlloc of 4096 bytes on CUDA device 0: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
             : "cuMemAllocAsync of 4096 bytes on CUDA device 0: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory";
}

static const gpu_buffers cuda = {
    .peer_copy = "cuMemcpyPeer",
    .enable_peer = "cuCtxEnablePeerAccess",
    .wait_event = "cuStreamWaitEvent",
    .record = "cuEventRecord",
    .export_on = 0,
    .wrong_gpu = wrong_gpu,
    .unknown = unknown,
    .out_of_memory = out_of_memory,
};

static void enter(int ordinal) { ck_assert_int_eq(test_cuda_enter(ordinal), 0); }
static void leave(int ordinal) { ck_assert_int_eq(test_cuda_leave(ordinal), 0); }

START_TEST(managed_memory_viewed_by_gpus_and_cpu) {
  hdal_context *ctx = gpu_buffers_setup("cpu,cuda");
  CUdeviceptr p;
  enter(0);
  ck_assert_int_eq(cu.cuMemAllocManaged(&p, 4 * sizeof(float), TEST_CU_MEM_ATTACH_GLOBAL), 0);
  leave(0);
  float *f = (void *)(uintptr_t)p;
  for (int i = 0; i < 4; i++) f[i] = 0.5f * (float)i;
  const float expected[] = {0.0f, 0.5f, 1.0f, 1.5f};
  hdal_device *targets[3] = {NULL, gpu_device_of(ctx, "cpu", 0), NULL};
  int n = 2;
  if (gpu_two) targets[n++] = gpu_device(ctx, 1);
  for (int i = 0; i < n; i++) {
    hdal_capsule *c = test_wrap((DLDevice){kDLCUDAManaged, 0}, f, 4, 0, NULL);
    hdal_buffer *b = test_import(ctx, c, targets[i], HDAL_COPY_NEVER);
    ck_assert_ptr_eq(hdal_buffer_device(b), targets[i] ? targets[i] : gpu_device(ctx, 0));
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), f);
    test_assert_values(b, 4, expected);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_context_destroy(ctx);
  ck_assert_int_eq(gpu->free(0, f), 0);
}
END_TEST

/* hdal_buffer_allocate: device memory of hdal's pool, which the driver knows; the work stream is
 * the legacy default stream (0). */
START_TEST(allocated_on_the_gpu) {
  hdal_context *ctx = gpu_buffers_setup("cpu,cuda");
  hdal_device *d = gpu_device(ctx, 0);
  int64_t shape[1] = {6};
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, shape, (DLDataType){kDLFloat, 32, 1}, &b));
  ck_assert(!hdal_buffer_is_view(b));
  float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
  enter(0);
  ck_assert_int_eq(cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)hdal_buffer_data(b), in, sizeof in), 0);
  leave(0);
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  intptr_t s = 5;
  ck_assert_ok(hdal_device_work_stream(d, &s));
  ck_assert_int_eq(s, 0);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* Primary contexts: none retained by discovery, one per used device after, all
 * released with the context; the caller's context stack is left as found. */
START_TEST(primary_contexts_retained_lazily_and_released) {
  hdal_context *ctx = gpu_buffers_setup("cpu,cuda");
  ck_assert_int_eq(cu.fakecuda_primary_refs(0), 0);
  ck_assert_int_eq(cu.fakecuda_primary_refs(1), 0);
  float h[2] = {1, 2};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 0, NULL);
  enter(1); /* the caller's own context is current meanwhile */
  hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, 0), HDAL_COPY_IF_NEEDED);
  test_assert_values(b, 2, h);
  ck_assert_int_eq(cu.fakecuda_context_depth(), 1);
  leave(1);
  ck_assert_int_eq(cu.fakecuda_primary_refs(0), 1);
  ck_assert_int_eq(cu.fakecuda_primary_refs(1), 1); /* the test's own, not hdal's */
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(cu.fakecuda_primary_refs(0), 1); /* until the context goes */
  hdal_context_destroy(ctx);
  ck_assert_int_eq(cu.fakecuda_primary_refs(0), 0);
  ck_assert_uint_eq(cu.fakecuda_live_allocations(), 0);
}
END_TEST

/* hdal_buffer_write and hdal_buffer_read, and the ordering rule of
 * include/hdal.h ("Work streams"): work queued on a blocking stream before the
 * call is done before hdal's transfer (the legacy stream comes after it); a
 * non-blocking stream's is not ordered (the fake runs it only when waited
 * for); hdal_device_synchronize synchronises the legacy stream. */
START_TEST(write_read_ordered_after_blocking_streams) {
  hdal_context *ctx = gpu_buffers_setup("cpu,cuda");
  hdal_device *d = gpu_device(ctx, 0);
  int64_t n = 8;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, (DLDataType){kDLFloat, 32, 1}, &b));
  float zero[8] = {0}, in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], two[2] = {-1, -2};
  ck_assert_ok(hdal_buffer_write(b, 0, zero, sizeof zero));
  ck_assert_ok(hdal_buffer_write(b, 3 * sizeof(float), two, sizeof two));
  ck_assert_ok(hdal_buffer_read(b, 2 * sizeof(float), out, 4 * sizeof(float)));
  ck_assert_float_eq(out[0], 0);
  ck_assert_float_eq(out[1], -1);
  ck_assert_float_eq(out[2], -2);
  ck_assert_float_eq(out[3], 0);
  ck_assert_error(hdal_buffer_read(b, 4, out, sizeof out), HDAL_OUT_OF_RANGE,
                  "hdal_buffer_read: 32 bytes at offset 4 are past the end of the buffer (32 bytes)");
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)hdal_buffer_data(b);
  CUstream blocking, nonblocking;
  enter(0);
  ck_assert_int_eq(cu.cuStreamCreate(&blocking, 0), 0);
  ck_assert_int_eq(cu.cuStreamCreate(&nonblocking, TEST_CU_STREAM_NON_BLOCKING), 0);
  ck_assert_int_eq(cu.cuMemcpyHtoDAsync(p, in, sizeof in, blocking), 0); /* the application's work, not waited for */
  leave(0);
  ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  if (!gpu_real) {
    enter(0);
    ck_assert_int_eq(cu.cuMemcpyHtoDAsync(p, zero, sizeof zero, nonblocking), 0);
    leave(0);
    ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
    ck_assert_mem_eq(out, in, sizeof in); /* not ordered: the fake has not run it yet */
    enter(0);
    ck_assert_int_eq(cu.cuStreamSynchronize(nonblocking), 0);
    leave(0);
    ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
    ck_assert_mem_eq(out, zero, sizeof zero);
    unsigned syncs = cu.fakecuda_calls("cuStreamSynchronize");
    ck_assert_ok(hdal_device_synchronize(d));
    ck_assert_uint_eq(cu.fakecuda_calls("cuStreamSynchronize"), syncs + 1);
    ck_assert_int_eq(cu.fakecuda_context_depth(), 0); /* the caller's context stack left as found */
  } else {
    ck_assert_ok(hdal_device_synchronize(d));
  }
  enter(0);
  ck_assert_int_eq(cu.cuStreamDestroy(blocking), 0);
  ck_assert_int_eq(cu.cuStreamDestroy(nonblocking), 0);
  leave(0);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* hdal_device_native_handle: the CUdevice, the primary context hdal works in (the driver's, which hdal
 * retains on first use and releases with the context) and the work stream, 0; the other APIs' kinds refused.
 * The context is the one of hdal's memory: a copy of the test's own in it lands in hdal's buffer. */
START_TEST(native_handles) {
  hdal_context *ctx = gpu_buffers_setup("cpu,cuda");
  int ordinal = gpu_two ? 1 : 0;
  hdal_device *d = gpu_device(ctx, ordinal);
  CUdevice dev;
  ck_assert_int_eq(cu.cuDeviceGet(&dev, ordinal), 0);
  intptr_t h = 5;
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_CUDA_DEVICE, &h));
  ck_assert_int_eq(h, dev);
  if (!gpu_real) ck_assert_int_eq(cu.fakecuda_primary_refs(ordinal), 0);
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_CUDA_CONTEXT, &h));
  if (!gpu_real) ck_assert_int_eq(cu.fakecuda_primary_refs(ordinal), 1); /* hdal's reference, taken now */
  CUcontext primary;
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&primary, dev), 0);
  ck_assert_ptr_eq((CUcontext)h, primary);
  ck_assert_int_eq(cu.cuDevicePrimaryCtxRelease(dev), 0);
  intptr_t again = 0;
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_CUDA_CONTEXT, &again));
  ck_assert_int_eq(again, h);
  if (!gpu_real) ck_assert_int_eq(cu.fakecuda_primary_refs(ordinal), 1); /* taken once */
  int64_t n = 4;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, (DLDataType){kDLFloat, 32, 1}, &b));
  float in[4] = {1.5f, 2.5f, 3.5f, 4.5f}, out[4] = {0};
  ck_assert_int_eq(cu.cuCtxPushCurrent((CUcontext)h), 0);
  ck_assert_int_eq(cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)hdal_buffer_data(b), in, sizeof in), 0);
  CUcontext popped;
  ck_assert_int_eq(cu.cuCtxPopCurrent(&popped), 0);
  ck_assert_ptr_eq(popped, (CUcontext)h);
  ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  hdal_buffer_release(b);
  h = 5;
  intptr_t stream = 5;
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_CUDA_STREAM, &h));
  ck_assert_ok(hdal_device_work_stream(d, &stream));
  ck_assert_int_eq(h, 0);
  ck_assert_int_eq(stream, h);
  ck_assert_int_eq(test_assert_native_refused(d, HDAL_NATIVE_CUDA_DEVICE, HDAL_NATIVE_CUDA_STREAM), 9);
  if (!gpu_real) ck_assert_int_eq(cu.fakecuda_context_depth(), 0);
  hdal_context_destroy(ctx);
  if (!gpu_real) ck_assert_int_eq(cu.fakecuda_primary_refs(ordinal), 0); /* released with the context */
}
END_TEST

int main(void) {
  Suite *s = suite_create("cuda_buffers");
  TCase *tc = tcase_create("cuda_buffers");
  gpu_init(&gpu_face_cuda);
  gpu_buffers_add(tc, &cuda);
  tcase_add_test(tc, managed_memory_viewed_by_gpus_and_cpu);
  tcase_add_test(tc, allocated_on_the_gpu);
  tcase_add_test(tc, write_read_ordered_after_blocking_streams);
  tcase_add_test(tc, native_handles);
  if (!gpu_real) tcase_add_test(tc, primary_contexts_retained_lazily_and_released);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
