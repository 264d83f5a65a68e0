/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA buffers end to end (docs/dlpack.md for CUDA devices): import,
 * export, copies and streams, with values checked and every deleter counted.
 * Against the fake driver, or the real one under tests/gpu/ (HDAL_TEST_REAL_CUDA;
 * HDAL_TEST_CUDA_DEVICES says how many GPUs the two-device cases may use). */
#include <unistd.h>
#include "testgpu.h"
#include "fakecuda/testcuda.h"

static bool real_driver;
static test_cuda cu;

/* Fake mode: two fake GPUs on a small synthetic machine.  Either way, the driver
 * for the test's own allocations is opened and initialised here, in the test's
 * own process. */
static hdal_context *setup(const char *backends) {
  if (!real_driver) {
    test_use_fake_runtime("HDAL_CUDA_LIBRARY", "fakecuda");
    if (!getenv("FAKECUDA_DEVICES")) setenv("FAKECUDA_DEVICES", "2", 1);
  }
  ck_assert_msg(test_cuda_open(&cu), "cannot open %s", test_cuda_library());
  ck_assert_int_eq(cu.cuInit(0), 0);
  hdal_context *ctx = test_context_with(backends);
  ck_assert_msg(!strncmp(test_backend_status(ctx, "cuda"), "ok: ", 4), "%s", test_backend_status(ctx, "cuda"));
  return ctx;
}

static hdal_device *device_of(hdal_context *ctx, const char *platform, int local) {
  hdal_device *d = test_platform_device(ctx, platform, local);
  ck_assert_msg(d != NULL, "no %s device %d", platform, local);
  return d;
}

/* The test's own context on GPU `ordinal`, current until leave().  The test
 * holds it from first use until it exits, as an application does: the last
 * release destroys a primary context with every allocation made in it, so a
 * test that released it would hand hdal freed memory (as it did on a real
 * H200 before the fake driver modelled that). */
static CUcontext held[8];

static void enter(int ordinal) {
  ck_assert_int_lt(ordinal, 8);
  if (!held[ordinal]) {
    CUdevice dev;
    ck_assert_int_eq(cu.cuDeviceGet(&dev, ordinal), 0);
    ck_assert_int_eq(cu.cuDevicePrimaryCtxRetain(&held[ordinal], dev), 0);
  }
  ck_assert_int_eq(cu.cuCtxPushCurrent(held[ordinal]), 0);
}

static void leave(int ordinal) {
  CUcontext c;
  ck_assert_int_eq(cu.cuCtxPopCurrent(&c), 0);
  ck_assert_ptr_eq(c, held[ordinal]);
}

/* Device memory on GPU `ordinal` holding floats first, first+1, ... */
static CUdeviceptr device_iota(int ordinal, size_t n, float first) {
  float host[64];
  ck_assert_uint_le(n, 64);
  for (size_t i = 0; i < n; i++) host[i] = first + (float)i;
  CUdeviceptr p;
  enter(ordinal);
  ck_assert_int_eq(cu.cuMemAlloc(&p, n * sizeof(float)), 0);
  ck_assert_int_eq(cu.cuMemcpyHtoD(p, host, n * sizeof(float)), 0);
  leave(ordinal);
  return p;
}

static void device_free(int ordinal, CUdeviceptr p) {
  enter(ordinal);
  ck_assert_int_eq(cu.cuMemFree(p), 0);
  leave(ordinal);
}

/* A non-blocking stream of GPU 0 with a copy of `n` bytes into `p` queued on
 * it: work a caller has not finished when it hands the memory over. */
static CUstream late_write(CUdeviceptr p, const void *host, size_t n) {
  CUstream s;
  enter(0);
  ck_assert_int_eq(cu.cuStreamCreate(&s, TEST_CU_STREAM_NON_BLOCKING), 0);
  ck_assert_int_eq(cu.cuMemcpyHtoDAsync(p, host, n, s), 0);
  leave(0);
  return s;
}

static void stream_destroy(CUstream s) {
  enter(0);
  ck_assert_int_eq(cu.cuStreamDestroy(s), 0);
  leave(0);
}




static void *ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }




/* ---- import ---- */

START_TEST(device_memory_routed_and_viewed) {
  hdal_context *ctx = setup("cpu,cuda");
  CUdeviceptr p = device_iota(0, 6, 1.0f);
  size_t live = cu.fakecuda_live_allocations ? cu.fakecuda_live_allocations() : 0;
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 2, 3, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "cuda", 0));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), ptr(p)); /* zero-copy */
  test_assert_iota(b, 6, 1.0f);
  if (cu.fakecuda_live_allocations) ck_assert_uint_eq(cu.fakecuda_live_allocations(), live); /* nothing allocated */
  hdal_capsule_destroy(c); /* consumed: the buffer owns the tensor */
  ck_assert_int_eq(test_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

START_TEST(byte_offset_kept_by_views_and_dropped_by_export) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 8, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 6, 0, NULL);
  ((DLManagedTensor *)hdal_capsule_pointer(c))->dl_tensor.byte_offset = 2 * sizeof(float);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_NEVER);
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), ptr(p + 2 * sizeof(float)));
  test_assert_iota(b, 6, 2.0f);
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_ptr_eq(m->dl_tensor.data, ptr(p + 2 * sizeof(float)));
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 0); /* the export keeps the buffer alive */
  hdal_capsule_destroy(out);
  ck_assert_int_eq(test_deleted, 1);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* Two GPUs: a tensor on GPU 0 imported onto GPU 1 is copied there. */
START_TEST(device_memory_copied_to_another_gpu) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 6, 10.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 3, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "cuda", 1), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1); /* the copy is complete: the source went at once */
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_ne(hdal_buffer_data(b), ptr(p));
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "cuda", 1));
  device_free(0, p); /* the copy does not depend on the source any more */
  test_assert_iota(b, 6, 10.0f);
  if (cu.fakecuda_calls) ck_assert_uint_ge(cu.fakecuda_calls("cuMemcpyPeer"), 1);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(pointer_on_the_wrong_gpu_refused) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 1}, ptr(p), 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  snprintf(expected, sizeof expected,
           "DLPack tensor claims CUDA device 1, but the driver says its data %#llx is on CUDA device 0", p);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor"); /* untouched */
  ck_assert_int_eq(test_deleted, 0);
  /* Copying it onto GPU 1 would read it from where the tensor says: refused too. */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "cuda", 1), NULL, &b), HDAL_INVALID_ARGUMENT,
                  expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

START_TEST(host_pointer_as_cuda_tensor_refused) {
  hdal_context *ctx = setup("cuda");
  float *h = calloc(4, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, h, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  snprintf(expected, sizeof expected, "DLPack tensor on (kDLCUDA, 0): the CUDA driver does not know its data %#llx",
           (unsigned long long)(uintptr_t)h);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(managed_memory_viewed_by_gpus_and_cpu) {
  hdal_context *ctx = setup("cpu,cuda");
  CUdeviceptr p;
  enter(0);
  ck_assert_int_eq(cu.cuMemAllocManaged(&p, 4 * sizeof(float), TEST_CU_MEM_ATTACH_GLOBAL), 0);
  leave(0);
  float *f = ptr(p);
  for (int i = 0; i < 4; i++) f[i] = 0.5f * (float)i;
  const float expected[] = {0.0f, 0.5f, 1.0f, 1.5f};
  hdal_device *targets[3] = {NULL, device_of(ctx, "cpu", 0), NULL};
  int n = 2;
  if (!real_driver || atoi(getenv("HDAL_TEST_CUDA_DEVICES") ? getenv("HDAL_TEST_CUDA_DEVICES") : "1") >= 2)
    targets[n++] = device_of(ctx, "cuda", 1);
  for (int i = 0; i < n; i++) {
    hdal_capsule *c = test_wrap((DLDevice){kDLCUDAManaged, 0}, f, 4, 0, NULL);
    hdal_buffer *b = test_import(ctx, c, targets[i], HDAL_COPY_NEVER);
    ck_assert_ptr_eq(hdal_buffer_device(b), targets[i] ? targets[i] : device_of(ctx, "cuda", 0));
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), f);
    test_assert_values(b, 4, expected);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

START_TEST(pinned_host_memory_viewed_by_gpu_and_cpu) {
  hdal_context *ctx = setup("cpu,cuda");
  float *h;
  enter(0);
  ck_assert_int_eq(cu.cuMemAllocHost((void **)&h, 6 * sizeof(float)), 0);
  leave(0);
  for (int i = 0; i < 6; i++) h[i] = 100.0f + (float)i;
  hdal_device *targets[] = {NULL, device_of(ctx, "cpu", 0)};
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap((DLDevice){kDLCUDAHost, 0}, h, 2, 3, NULL);
    hdal_buffer *b = test_import(ctx, c, targets[i], HDAL_COPY_NEVER);
    ck_assert_ptr_eq(hdal_buffer_device(b), targets[i] ? targets[i] : device_of(ctx, "cuda", 0));
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), h);
    test_assert_iota(b, 6, 100.0f);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_context_destroy(ctx);
  enter(0);
  ck_assert_int_eq(cu.cuMemFreeHost(h), 0);
  leave(0);
}
END_TEST

START_TEST(host_memory_copied_to_gpu) {
  hdal_context *ctx = setup("cpu,cuda");
  float *h = malloc(6 * sizeof *h);
  for (int i = 0; i < 6; i++) h[i] = -3.0f + (float)i;
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 3, NULL);
  hdal_buffer *b = NULL;
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "cuda", 0), &never, &b);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
  ck_assert_msg(strstr(hdal_error_message(e), "copying is disabled"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);

  b = test_import(ctx, c, device_of(ctx, "cuda", 0), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  memset(h, 0, 6 * sizeof *h); /* the device holds its own copy */
  test_assert_iota(b, 6, -3.0f);
  /* The driver agrees the data is on GPU 0. */
  float back[6];
  enter(0);
  ck_assert_int_eq(cu.cuMemcpyDtoH(back, (CUdeviceptr)(uintptr_t)hdal_buffer_data(b), sizeof back), 0);
  leave(0);
  ck_assert(back[0] == -3.0f && back[5] == 2.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* Broadcast strides on the device: compacted through host memory. */
START_TEST(strided_device_tensor_compacted) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 3, 7.0f);
  const int64_t strides[2] = {0, 1};
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 2, 3, strides);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_int_eq(test_deleted, 1);
  const float expected[] = {7, 8, 9, 7, 8, 9};
  test_assert_values(b, 6, expected);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* ---- export ---- */

START_TEST(export_as_kDLCUDA_and_round_trip) {
  hdal_context *ctx = setup("cpu,cuda");
  size_t live = cu.fakecuda_live_allocations ? cu.fakecuda_live_allocations() : 0;
  float h[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "cuda", 0), HDAL_COPY_ALWAYS);
  hdal_capsule_destroy(c);

  hdal_capsule *out = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor");
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCUDA);
  ck_assert_int_eq(m->dl_tensor.device.device_id, 0);
  ck_assert_ptr_eq(m->dl_tensor.data, hdal_buffer_data(b));
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  ck_assert_ptr_nonnull(m->dl_tensor.strides);
  ck_assert_int_eq(m->dl_tensor.strides[0], 2);
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  float back[4];
  enter(0);
  ck_assert_int_eq(cu.cuMemcpyDtoH(back, (CUdeviceptr)(uintptr_t)m->dl_tensor.data, sizeof back), 0);
  leave(0);
  ck_assert(!memcmp(back, h, sizeof h));

  /* Import of the export on the same device: a view of the same memory. */
  hdal_buffer *again = test_import(ctx, out, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(hdal_buffer_is_view(again));
  ck_assert_ptr_eq(hdal_buffer_data(again), hdal_buffer_data(b));
  hdal_buffer_release(b);
  test_assert_values(again, 4, h); /* the exported tensor kept the memory alive */
  hdal_buffer_release(again);
  hdal_capsule_destroy(out);
  ck_assert_ok(hdal_device_trim(device_of(ctx, "cuda", 0))); /* the pool's cache goes back too */
  if (cu.fakecuda_live_allocations) ck_assert_uint_eq(cu.fakecuda_live_allocations(), live); /* all freed */
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(versioned_export) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 0}};
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor_versioned");
  DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
  ck_assert_uint_eq(v->version.major, 1);
  ck_assert_uint_eq(v->flags & DLPACK_FLAG_BITMASK_IS_COPIED, 0);
  ck_assert_int_eq(v->dl_tensor.device.device_type, kDLCUDA);
  ck_assert_ptr_eq(v->dl_tensor.data, ptr(p));
  hdal_buffer_release(b);
  hdal_capsule_destroy(out);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* ---- copies between devices ---- */

START_TEST(copy_to_device_between_gpus_and_cpu) {
  hdal_context *ctx = setup("cpu,cuda");
  CUdeviceptr p = device_iota(0, 6, 20.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 6, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED), *on1 = NULL, *oncpu = NULL, *back = NULL;
  ck_assert_ok(hdal_buffer_copy_to_device(b, device_of(ctx, "cuda", 1), &on1));
  ck_assert_ok(hdal_buffer_copy_to_device(on1, device_of(ctx, "cpu", 0), &oncpu));
  ck_assert_ok(hdal_buffer_copy_to_device(oncpu, device_of(ctx, "cuda", 0), &back));
  ck_assert_ptr_ne(hdal_buffer_data(on1), ptr(p));
  ck_assert_ptr_ne(hdal_buffer_data(back), ptr(p));
  ck_assert_ptr_eq(hdal_buffer_device(back), device_of(ctx, "cuda", 0));
  const float *f = hdal_buffer_data(oncpu);
  ck_assert(f[0] == 20.0f && f[5] == 25.0f);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  device_free(0, p);
  test_assert_iota(on1, 6, 20.0f);
  test_assert_iota(back, 6, 20.0f);
  hdal_buffer_release(on1);
  hdal_buffer_release(oncpu);
  hdal_buffer_release(back);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- streams ---- */

/* Values written on a non-blocking stream are what a stream-ordered import sees. */
START_TEST(import_ordered_after_the_callers_stream) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 4, 0.0f);
  float later[4] = {9, 8, 7, 6};
  CUstream s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 4, 0, NULL);
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS, .has_stream = true,
                           .stream = (intptr_t)s};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b));
  ck_assert_int_eq(test_deleted, 1);
  test_assert_values(b, 4, later);
  hdal_buffer_release(b);
  stream_destroy(s);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* A view made with the stream option: hdal's later reads come after the stream's work. */
START_TEST(view_ordered_after_the_callers_stream) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 4, 0.0f);
  float later[4] = {5, 4, 3, 2};
  CUstream s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 4, 0, NULL);
  hdal_import_options o = {.struct_size = sizeof o, .has_stream = true, .stream = (intptr_t)s};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b));
  ck_assert(hdal_buffer_is_view(b));
  test_assert_values(b, 4, later);
  if (cu.fakecuda_calls) ck_assert_uint_ge(cu.fakecuda_calls("cuStreamWaitEvent"), 1);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  stream_destroy(s);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* The fake runs stream work late: without the stream, the copy sees the old values
 * (what a GPU may well do), which shows that the test above can fail. */
START_TEST(fake_stream_work_is_late_without_the_stream_option) {
  hdal_context *ctx = setup("cuda");
  CUdeviceptr p = device_iota(0, 4, 0.0f);
  float later[4] = {9, 8, 7, 6};
  CUstream s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLCUDA, 0}, ptr(p), 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_ALWAYS);
  test_assert_iota(b, 4, 0.0f);
  ck_assert_uint_eq(cu.fakecuda_calls("cuEventRecord"), 0);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  stream_destroy(s);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* ---- resources ---- */

START_TEST(out_of_device_memory_is_an_error) {
  setenv("FAKECUDA_MEMORY", "1024", 1);
  hdal_context *ctx = setup("cpu,cuda");
  float *h = calloc(1024, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 1024, 0, NULL);
  hdal_buffer *b = NULL;
  /* The device's memory pool serves hdal's allocations unless caching is off (docs/memory.md). */
  const char *pool = getenv("HDAL_MEMORY_POOL");
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "cuda", 0), NULL, &b), HDAL_RESOURCE_EXHAUSTED,
                  pool && !strcmp(pool, "0")
                      ? "cuMemAlloc of 4096 bytes on CUDA device 0: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
                      : "cuMemAllocAsync of 4096 bytes on CUDA device 0: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* hdal_buffer_allocate: device memory of hdal's pool, which the driver knows; the work stream is
 * the legacy default stream (0). */
START_TEST(allocated_on_the_gpu) {
  hdal_context *ctx = setup("cpu,cuda");
  hdal_device *d = device_of(ctx, "cuda", 0);
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
  hdal_context *ctx = setup("cpu,cuda");
  ck_assert_int_eq(cu.fakecuda_primary_refs(0), 0);
  ck_assert_int_eq(cu.fakecuda_primary_refs(1), 0);
  float h[2] = {1, 2};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 0, NULL);
  enter(1); /* the caller's own context is current meanwhile */
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "cuda", 0), HDAL_COPY_IF_NEEDED);
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

int main(void) {
  Suite *s = suite_create("cuda_buffers");
  TCase *tc = tcase_create("cuda_buffers");
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  real_driver = getenv("HDAL_TEST_REAL_CUDA") != NULL;
  const char *n = getenv("HDAL_TEST_CUDA_DEVICES");
  bool two = !real_driver || (n && atoi(n) >= 2);
  tcase_add_test(tc, device_memory_routed_and_viewed);
  tcase_add_test(tc, byte_offset_kept_by_views_and_dropped_by_export);
  tcase_add_test(tc, host_pointer_as_cuda_tensor_refused);
  tcase_add_test(tc, managed_memory_viewed_by_gpus_and_cpu);
  tcase_add_test(tc, pinned_host_memory_viewed_by_gpu_and_cpu);
  tcase_add_test(tc, host_memory_copied_to_gpu);
  tcase_add_test(tc, strided_device_tensor_compacted);
  tcase_add_test(tc, export_as_kDLCUDA_and_round_trip);
  tcase_add_test(tc, versioned_export);
  tcase_add_test(tc, import_ordered_after_the_callers_stream);
  tcase_add_test(tc, view_ordered_after_the_callers_stream);
  tcase_add_test(tc, allocated_on_the_gpu);
  if (two) {
    tcase_add_test(tc, device_memory_copied_to_another_gpu);
    tcase_add_test(tc, pointer_on_the_wrong_gpu_refused);
    tcase_add_test(tc, copy_to_device_between_gpus_and_cpu);
  }
  if (!real_driver) {
    tcase_add_test(tc, fake_stream_work_is_late_without_the_stream_option);
    tcase_add_test(tc, out_of_device_memory_is_an_error);
    tcase_add_test(tc, primary_contexts_retained_lazily_and_released);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
