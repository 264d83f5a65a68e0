/* SPDX-License-Identifier: BSD-3-Clause */
/* ROCm buffers end to end (docs/rocm.md): import, export, copies and streams,
 * with values checked and every deleter counted; the CUDA buffer suite's
 * matrix.  Against both fake HIP runtimes (each case runs on the ROCm 5 and
 * the ROCm 6 ABI), or the real one under tests/gpu/ (HDAL_TEST_REAL_ROCM;
 * HDAL_TEST_ROCM_DEVICES says how many GPUs the two-device cases may use). */
#include <signal.h>
#include <unistd.h>
#include "testgpu.h"
#include "fakehip/testhip.h"

static bool real_runtime;
static const char *fake = "fakehip6"; /* set by the test case's fixture */
static test_hip hip;

static void abi5(void) { fake = "fakehip5"; }
static void abi6(void) { fake = "fakehip6"; }

/* Fake mode: two fake GPUs on a small synthetic machine.  Either way, the
 * runtime for the test's own allocations is opened here, in the test's process. */
static hdal_context *setup(const char *backends) {
  if (!real_runtime) {
    test_use_fake_runtime("HDAL_ROCM_LIBRARY", fake);
    if (!getenv("FAKEHIP_DEVICES")) setenv("FAKEHIP_DEVICES", "2", 1);
  }
  ck_assert_msg(test_hip_open(&hip), "cannot open %s", hip.path);
  ck_assert_int_eq(hip.hipInit(0), 0);
  hdal_context *ctx = test_context_with(backends);
  ck_assert_msg(!strncmp(test_backend_status(ctx, "rocm"), "ok: ", 4), "%s", test_backend_status(ctx, "rocm"));
  return ctx;
}

static hdal_device *device_of(hdal_context *ctx, const char *platform, int local) {
  hdal_device *d = test_platform_device(ctx, platform, local);
  ck_assert_msg(d != NULL, "no %s device %d", platform, local);
  return d;
}

/* Device memory on GPU `ordinal` holding floats first, first+1, ... */
static void *device_iota(int ordinal, size_t n, float first) {
  float host[64];
  ck_assert_uint_le(n, 64);
  for (size_t i = 0; i < n; i++) host[i] = first + (float)i;
  void *p;
  ck_assert_int_eq(hip.hipSetDevice(ordinal), 0);
  ck_assert_int_eq(hip.hipMalloc(&p, n * sizeof(float)), 0);
  ck_assert_int_eq(hip.hipMemcpy(p, host, n * sizeof(float), TEST_HIP_MEMCPY_HOST_TO_DEVICE), 0);
  ck_assert_int_eq(hip.hipSetDevice(0), 0);
  return p;
}

static void device_free(void *p) { ck_assert_int_eq(hip.hipFree(p), 0); }

static void device_read(void *host, const void *p, size_t n) {
  ck_assert_int_eq(hip.hipMemcpy(host, p, n, TEST_HIP_MEMCPY_DEVICE_TO_HOST), 0);
}

/* A non-blocking stream of GPU 0 with a copy of `n` bytes into `p` queued on
 * it: work a caller has not finished when it hands the memory over. */
static hipStream_t late_write(void *p, const void *host, size_t n) {
  hipStream_t s;
  ck_assert_int_eq(hip.hipStreamCreateWithFlags(&s, TEST_HIP_STREAM_NON_BLOCKING), 0);
  ck_assert_int_eq(hip.hipMemcpyAsync(p, host, n, TEST_HIP_MEMCPY_HOST_TO_DEVICE, s), 0);
  return s;
}







/* ---- the fake itself ---- */

/* Its device memory faults on host access, as a GPU's does: every other case
 * passing shows that hdal never touches device memory from the host. */
START_TEST(fake_device_memory_faults_on_host_access) {
  hdal_context *ctx = setup("rocm");
  float *p = device_iota(0, 4, 1.0f);
  signal(SIGSEGV, SIG_DFL); /* the kernel's verdict, not a sanitizer's report */
  volatile float x = p[0];
  (void)x;
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- import ---- */

START_TEST(device_memory_routed_and_viewed) {
  hdal_context *ctx = setup("cpu,rocm");
  void *p = device_iota(0, 6, 1.0f);
  size_t live = hip.fakehip_live_allocations ? hip.fakehip_live_allocations() : 0;
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 2, 3, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "rocm", 0));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), p); /* zero-copy */
  test_assert_iota(b, 6, 1.0f);
  if (hip.fakehip_live_allocations) ck_assert_uint_eq(hip.fakehip_live_allocations(), live); /* nothing allocated */
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

START_TEST(byte_offset_kept_by_views_and_dropped_by_export) {
  hdal_context *ctx = setup("rocm");
  char *p = device_iota(0, 8, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 6, 0, NULL);
  ((DLManagedTensor *)hdal_capsule_pointer(c))->dl_tensor.byte_offset = 2 * sizeof(float);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_NEVER);
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), p + 2 * sizeof(float));
  test_assert_iota(b, 6, 2.0f);
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_ptr_eq(m->dl_tensor.data, p + 2 * sizeof(float));
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 0); /* the export keeps the buffer alive */
  hdal_capsule_destroy(out);
  ck_assert_int_eq(test_deleted, 1);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* Two GPUs: a tensor on GPU 0 imported onto GPU 1 is copied there. */
START_TEST(device_memory_copied_to_another_gpu) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 6, 10.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 3, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "rocm", 1), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1); /* the copy is complete: the source went at once */
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_ne(hdal_buffer_data(b), p);
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "rocm", 1));
  device_free(p); /* the copy does not depend on the source any more */
  test_assert_iota(b, 6, 10.0f);
  if (hip.fakehip_calls) ck_assert_uint_ge(hip.fakehip_calls("hipMemcpyPeer"), 1);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(pointer_on_the_wrong_gpu_refused) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 1}, p, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  snprintf(expected, sizeof expected,
           "DLPack tensor claims ROCm device 1, but the runtime says its data %p is on ROCm device 0", p);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor"); /* untouched */
  /* Copying it onto GPU 1 would read it from where the tensor says: refused too. */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "rocm", 1), NULL, &b), HDAL_INVALID_ARGUMENT,
                  expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

START_TEST(host_pointer_as_rocm_tensor_refused) {
  hdal_context *ctx = setup("rocm");
  float *h = calloc(4, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, h, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  snprintf(expected, sizeof expected, "DLPack tensor on (kDLROCM, 0): the HIP runtime does not know its data %p",
           (void *)h);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* kDLROCMHost: hipHostMalloc memory, mapped by the GPUs at the same address. */
START_TEST(pinned_host_memory_viewed_by_gpu_and_cpu) {
  hdal_context *ctx = setup("cpu,rocm");
  float *h;
  /* Allocated with GPU 1 current: the runtime's device for it is 1, which a
   * module reading ROCm 6's numbering as ROCm 5's would take for GPU 1 memory. */
  if (!real_runtime) ck_assert_int_eq(hip.hipSetDevice(1), 0);
  ck_assert_int_eq(hip.hipHostMalloc((void **)&h, 6 * sizeof(float), 0), 0);
  ck_assert_int_eq(hip.hipSetDevice(0), 0);
  for (int i = 0; i < 6; i++) h[i] = 100.0f + (float)i;
  hdal_device *targets[] = {NULL, device_of(ctx, "cpu", 0)};
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap((DLDevice){kDLROCMHost, 0}, h, 2, 3, NULL);
    hdal_buffer *b = test_import(ctx, c, targets[i], HDAL_COPY_NEVER);
    ck_assert_ptr_eq(hdal_buffer_device(b), targets[i] ? targets[i] : device_of(ctx, "rocm", 0));
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), h);
    test_assert_iota(b, 6, 100.0f);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  /* HDAL_COPY_ALWAYS: a copy on the GPU, read from the host side. */
  hdal_capsule *c = test_wrap((DLDevice){kDLROCMHost, 0}, h, 6, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_ALWAYS);
  ck_assert(!hdal_buffer_is_view(b));
  test_assert_iota(b, 6, 100.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  ck_assert_int_eq(hip.hipHostFree(h), 0);
}
END_TEST

START_TEST(host_memory_copied_to_gpu) {
  hdal_context *ctx = setup("cpu,rocm");
  float *h = malloc(6 * sizeof *h);
  for (int i = 0; i < 6; i++) h[i] = -3.0f + (float)i;
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 3, NULL);
  hdal_buffer *b = NULL;
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "rocm", 0), &never, &b);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
  ck_assert_msg(strstr(hdal_error_message(e), "copying is disabled"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);

  b = test_import(ctx, c, device_of(ctx, "rocm", 0), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  memset(h, 0, 6 * sizeof *h); /* the device holds its own copy */
  test_assert_iota(b, 6, -3.0f);
  float back[6]; /* the runtime agrees the data is on GPU 0 */
  device_read(back, hdal_buffer_data(b), sizeof back);
  ck_assert(back[0] == -3.0f && back[5] == 2.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* Broadcast strides on the device: compacted through host memory. */
START_TEST(strided_device_tensor_compacted) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 3, 7.0f);
  const int64_t strides[2] = {0, 1};
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 2, 3, strides);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_int_eq(test_deleted, 1);
  const float expected[] = {7, 8, 9, 7, 8, 9};
  test_assert_values(b, 6, expected);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* ---- export ---- */

START_TEST(export_as_kDLROCM_and_round_trip) {
  hdal_context *ctx = setup("cpu,rocm");
  size_t live = hip.fakehip_live_allocations ? hip.fakehip_live_allocations() : 0;
  float h[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "rocm", 0), HDAL_COPY_ALWAYS);
  hdal_capsule_destroy(c);

  hdal_capsule *out = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor");
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_int_eq(m->dl_tensor.device.device_type, kDLROCM);
  ck_assert_int_eq(m->dl_tensor.device.device_id, 0);
  ck_assert_ptr_eq(m->dl_tensor.data, hdal_buffer_data(b));
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  ck_assert_ptr_nonnull(m->dl_tensor.strides);
  ck_assert_int_eq(m->dl_tensor.strides[0], 2);
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  float back[4];
  device_read(back, m->dl_tensor.data, sizeof back);
  ck_assert(!memcmp(back, h, sizeof h));

  /* Import of the export on the same device: a view of the same memory. */
  hdal_buffer *again = test_import(ctx, out, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(hdal_buffer_is_view(again));
  ck_assert_ptr_eq(hdal_buffer_data(again), hdal_buffer_data(b));
  hdal_buffer_release(b);
  test_assert_values(again, 4, h); /* the exported tensor kept the memory alive */
  hdal_buffer_release(again);
  hdal_capsule_destroy(out);
  ck_assert_ok(hdal_device_trim(device_of(ctx, "rocm", 0))); /* the pool's cache goes back too (docs/memory.md) */
  if (hip.fakehip_live_allocations) ck_assert_uint_eq(hip.fakehip_live_allocations(), live); /* all freed */
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(versioned_export) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 0}};
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor_versioned");
  DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
  ck_assert_uint_eq(v->version.major, 1);
  ck_assert_uint_eq(v->flags & DLPACK_FLAG_BITMASK_IS_COPIED, 0);
  ck_assert_int_eq(v->dl_tensor.device.device_type, kDLROCM);
  ck_assert_ptr_eq(v->dl_tensor.data, p);
  hdal_buffer_release(b);
  hdal_capsule_destroy(out);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* ---- copies between devices ---- */

START_TEST(copy_to_device_between_gpus_and_cpu) {
  hdal_context *ctx = setup("cpu,rocm");
  void *p = device_iota(0, 6, 20.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 6, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED), *on1 = NULL, *oncpu = NULL, *back = NULL;
  ck_assert_ok(hdal_buffer_copy_to_device(b, device_of(ctx, "rocm", 1), &on1));
  ck_assert_ok(hdal_buffer_copy_to_device(on1, device_of(ctx, "cpu", 0), &oncpu));
  ck_assert_ok(hdal_buffer_copy_to_device(oncpu, device_of(ctx, "rocm", 0), &back));
  ck_assert_ptr_ne(hdal_buffer_data(on1), p);
  ck_assert_ptr_ne(hdal_buffer_data(back), p);
  ck_assert_ptr_eq(hdal_buffer_device(back), device_of(ctx, "rocm", 0));
  const float *f = hdal_buffer_data(oncpu);
  ck_assert(f[0] == 20.0f && f[5] == 25.0f);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  device_free(p);
  test_assert_iota(on1, 6, 20.0f);
  test_assert_iota(back, 6, 20.0f);
  hdal_buffer_release(on1);
  hdal_buffer_release(oncpu);
  hdal_buffer_release(back);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

/* copy_to_device across backends goes through the host: ROCm -> CUDA (the
 * fake driver) -> OpenCL (PoCL, when there is a device) -> CPU -> ROCm. */
START_TEST(copy_to_device_across_backends) {
  char cuda[4200];
  snprintf(cuda, sizeof cuda, "%s/fakecuda.so", getenv("HDAL_TEST_MODULES"));
  bool has_cuda = access(cuda, R_OK) == 0;
  if (has_cuda) setenv("HDAL_CUDA_LIBRARY", cuda, 1);
  hdal_context *ctx = setup("cpu,cuda,opencl,rocm");
  void *p = device_iota(0, 5, 30.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 5, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_device *path[4], *cu = NULL, *cl = NULL;
  int n = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_runtime_class(d) != HDAL_RUNTIME_PJRT) continue;
    if (!cu && !strcmp(hdal_device_platform(d), "cuda")) cu = d;
    if (!cl && !strcmp(hdal_device_platform(d), "opencl")) cl = d;
  }
  if (cu) path[n++] = cu;
  if (cl) path[n++] = cl;
  path[n++] = device_of(ctx, "cpu", 0);
  path[n++] = device_of(ctx, "rocm", 1);
  hdal_buffer *cur = b;
  hdal_buffer_retain(cur);
  for (int i = 0; i < n; i++) {
    hdal_buffer *next = NULL;
    ck_assert_ok(hdal_buffer_copy_to_device(cur, path[i], &next));
    ck_assert_ptr_eq(hdal_buffer_device(next), path[i]);
    test_assert_iota(next, 5, 30.0f);
    hdal_buffer_release(cur);
    cur = next;
  }
  hdal_buffer_release(cur);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* ---- streams ---- */

/* Values written on a non-blocking stream are what a stream-ordered import sees. */
START_TEST(import_ordered_after_the_callers_stream) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 4, 0.0f);
  float later[4] = {9, 8, 7, 6};
  hipStream_t s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 4, 0, NULL);
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS, .has_stream = true,
                           .stream = (intptr_t)s};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b));
  ck_assert_int_eq(test_deleted, 1);
  test_assert_values(b, 4, later);
  hdal_buffer_release(b);
  ck_assert_int_eq(hip.hipStreamDestroy(s), 0);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* A view made with the stream option: hdal's later reads come after the stream's work. */
START_TEST(view_ordered_after_the_callers_stream) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 4, 0.0f);
  float later[4] = {5, 4, 3, 2};
  hipStream_t s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 4, 0, NULL);
  hdal_import_options o = {.struct_size = sizeof o, .has_stream = true, .stream = (intptr_t)s};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b));
  ck_assert(hdal_buffer_is_view(b));
  test_assert_values(b, 4, later);
  if (hip.fakehip_calls) ck_assert_uint_ge(hip.fakehip_calls("hipStreamWaitEvent"), 1);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert_int_eq(hip.hipStreamDestroy(s), 0);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* The fake runs stream work late: without the stream, the copy sees the old values
 * (what a GPU may well do), which shows that the tests above can fail. */
START_TEST(fake_stream_work_is_late_without_the_stream_option) {
  hdal_context *ctx = setup("rocm");
  void *p = device_iota(0, 4, 0.0f);
  float later[4] = {9, 8, 7, 6};
  hipStream_t s = late_write(p, later, sizeof later);
  hdal_capsule *c = test_wrap((DLDevice){kDLROCM, 0}, p, 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_ALWAYS);
  test_assert_iota(b, 4, 0.0f);
  ck_assert_uint_eq(hip.fakehip_calls("hipEventRecord"), 0);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(hip.hipStreamDestroy(s), 0);
  hdal_context_destroy(ctx);
  device_free(p);
}
END_TEST

/* ---- resources (the fake has memory pools: hdal allocates with hipMallocAsync, docs/memory.md) ---- */

START_TEST(out_of_device_memory_is_an_error) {
  setenv("FAKEHIP_MEMORY", "1024", 1);
  hdal_context *ctx = setup("cpu,rocm");
  float *h = calloc(1024, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 1024, 0, NULL);
  hdal_buffer *b = NULL;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "rocm", 0), NULL, &b), HDAL_RESOURCE_EXHAUSTED,
                  !strcmp(fake, "fakehip5")
                      ? "hipMallocAsync of 4096 bytes on ROCm device 0: hipErrorOutOfMemory (2)"
                      : "hipMallocAsync of 4096 bytes on ROCm device 0: hipErrorOutOfMemory (2): out of memory");
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* The caller's current device is left as found; everything hdal allocated is
 * freed with the context. */
START_TEST(current_device_left_as_found) {
  hdal_context *ctx = setup("cpu,rocm");
  float h[2] = {1, 2};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 0, NULL);
  ck_assert_int_eq(hip.hipSetDevice(1), 0);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "rocm", 0), HDAL_COPY_IF_NEEDED);
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

static void add_cases(TCase *tc, bool two) {
  tcase_add_test(tc, device_memory_routed_and_viewed);
  tcase_add_test(tc, byte_offset_kept_by_views_and_dropped_by_export);
  tcase_add_test(tc, host_pointer_as_rocm_tensor_refused);
  tcase_add_test(tc, pinned_host_memory_viewed_by_gpu_and_cpu);
  tcase_add_test(tc, host_memory_copied_to_gpu);
  tcase_add_test(tc, strided_device_tensor_compacted);
  tcase_add_test(tc, export_as_kDLROCM_and_round_trip);
  tcase_add_test(tc, versioned_export);
  tcase_add_test(tc, import_ordered_after_the_callers_stream);
  tcase_add_test(tc, view_ordered_after_the_callers_stream);
  if (two) {
    tcase_add_test(tc, device_memory_copied_to_another_gpu);
    tcase_add_test(tc, pointer_on_the_wrong_gpu_refused);
    tcase_add_test(tc, copy_to_device_between_gpus_and_cpu);
    tcase_add_test(tc, copy_to_device_across_backends);
  }
  if (!real_runtime) {
    /* valgrind reports the fault as an error before the signal: not under it. */
    const char *pre = getenv("LD_PRELOAD");
    if (!pre || !strstr(pre, "vgpreload")) tcase_add_test_raise_signal(tc, fake_device_memory_faults_on_host_access, SIGSEGV);
    tcase_add_test(tc, fake_stream_work_is_late_without_the_stream_option);
    tcase_add_test(tc, out_of_device_memory_is_an_error);
    tcase_add_test(tc, current_device_left_as_found);
  }
}

int main(void) {
  Suite *s = suite_create("rocm_buffers");
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  real_runtime = getenv("HDAL_TEST_REAL_ROCM") != NULL;
  if (real_runtime) {
    const char *n = getenv("HDAL_TEST_ROCM_DEVICES");
    TCase *tc = tcase_create("rocm_buffers");
    add_cases(tc, n && atoi(n) >= 2);
    suite_add_tcase(s, tc);
  } else {
    TCase *tc6 = tcase_create("rocm6"), *tc5 = tcase_create("rocm5");
    tcase_add_checked_fixture(tc6, abi6, NULL);
    tcase_add_checked_fixture(tc5, abi5, NULL);
    add_cases(tc6, true);
    add_cases(tc5, true);
    suite_add_tcase(s, tc6);
    suite_add_tcase(s, tc5);
  }
  return test_run_suite(s);
}
