/* SPDX-License-Identifier: BSD-3-Clause */
/* Level Zero buffers end to end (docs/levelzero.md): import of device, shared
 * and host USM, export, copies, the device pool's fences, with values checked
 * and every deleter counted; the cases of the ROCm buffer suite that apply.
 * Through the system's real loader and the fake driver (tests/fakeze/), or,
 * under tests/gpu/ (HDAL_TEST_REAL_LEVELZERO; HDAL_TEST_LEVELZERO_DEVICES says
 * how many GPUs the two-device cases may use), the machine's own driver;
 * skipped (77) where the loader is not installed. */
#include <signal.h>
#include <unistd.h>
#include "testgpu.h"
#include "fakeze/testze.h"

static test_ze ze;
static bool real_driver;

/* Fake mode: two fake GPUs on a small synthetic machine.  Either way, the
 * test's own context on the same driver, for its allocations. */
static hdal_context *setup(const char *backends) {
  if (!real_driver) {
    test_ze_use_fake();
    if (!getenv("FAKEZE_DEVICES")) setenv("FAKEZE_DEVICES", "2", 1);
  }
  ck_assert_msg(test_ze_open(&ze), "cannot open %s", TEST_ZE_LOADER);
  ck_assert_int_eq(test_ze_init(&ze), 0);
  ck_assert(real_driver || ze.fakeze_calls);
  hdal_context *ctx = test_context_with(backends);
  ck_assert_msg(!strncmp(test_backend_status(ctx, "levelzero"), "ok: ", 4), "%s", test_backend_status(ctx, "levelzero"));
  return ctx;
}

static hdal_device *device_of(hdal_context *ctx, const char *platform, int local) {
  hdal_device *d = test_platform_device(ctx, platform, local);
  ck_assert_msg(d != NULL, "no %s device %d", platform, local);
  return d;
}

static void iota(float *f, size_t n, float first) {
  for (size_t i = 0; i < n; i++) f[i] = first + (float)i;
}

/* Device USM on GPU `ordinal` holding floats first, first+1, ... */
static void *device_iota(int ordinal, size_t n, float first) {
  float host[64];
  ck_assert_uint_le(n, 64);
  iota(host, n, first);
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  ck_assert_int_eq(ze.zeMemAllocDevice(ze.context, &d, n * sizeof(float), 0, ze.devices[ordinal], &p), 0);
  ck_assert_int_eq(test_ze_copy(&ze, p, host, n * sizeof(float)), 0);
  return p;
}

static float *shared_iota(int ordinal, size_t n, float first) {
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t h = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p = NULL;
  ck_assert_int_eq(ze.zeMemAllocShared(ze.context, &d, &h, n * sizeof(float), 0, ze.devices[ordinal], &p), 0);
  iota(p, n, first); /* shared memory: the host writes it */
  return p;
}

static float *host_usm_iota(size_t n, float first) {
  ze_host_mem_alloc_desc_t h = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p = NULL;
  ck_assert_int_eq(ze.zeMemAllocHost(ze.context, &h, n * sizeof(float), 0, &p), 0);
  iota(p, n, first);
  return p;
}

static void usm_free(void *p) { ck_assert_int_eq(ze.zeMemFree(ze.context, p), 0); }

static void device_read(void *host, const void *p, size_t n) { ck_assert_int_eq(test_ze_copy(&ze, host, p, n), 0); }

#define ONEAPI(id) ((DLDevice){(DLDeviceType)kDLOneAPI, (id)})

/* ---- the fake itself ---- */

/* Its device memory faults on host access, as a GPU's does: every other case
 * passing shows that hdal never touches device memory from the host. */
START_TEST(fake_device_memory_faults_on_host_access) {
  hdal_context *ctx = setup("levelzero");
  float *p = device_iota(0, 4, 1.0f);
  signal(SIGSEGV, SIG_DFL);
  volatile float x = p[0];
  (void)x;
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- import ---- */

START_TEST(device_usm_routed_and_viewed) {
  hdal_context *ctx = setup("cpu,levelzero");
  void *p = device_iota(0, 6, 1.0f);
  size_t live = ze.fakeze_live_allocations ? ze.fakeze_live_allocations() : 0;
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 2, 3, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "levelzero", 0));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), p); /* zero-copy */
  test_assert_iota(b, 6, 1.0f);
  if (ze.fakeze_live_allocations) ck_assert_uint_eq(ze.fakeze_live_allocations(), live); /* nothing allocated */
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  usm_free(p);
}
END_TEST

/* Shared USM: viewed by either GPU, whichever it was allocated on. */
START_TEST(shared_usm_viewed_by_both_gpus) {
  hdal_context *ctx = setup("cpu,levelzero");
  float *p = shared_iota(1, 6, 40.0f);
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap(ONEAPI(1), p, 6, 0, NULL);
    hdal_buffer *b = test_import(ctx, c, device_of(ctx, "levelzero", i), HDAL_COPY_NEVER);
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), p);
    test_assert_iota(b, 6, 40.0f);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_context_destroy(ctx);
  usm_free(p);
}
END_TEST

/* Host USM: mapped by the devices at its address, viewed by them; a copy reads it from the host side. */
START_TEST(host_usm_viewed_and_copied) {
  hdal_context *ctx = setup("cpu,levelzero");
  float *h = host_usm_iota(6, 100.0f);
  hdal_capsule *c = test_wrap(ONEAPI(0), h, 2, 3, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_NEVER);
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "levelzero", 0));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), h);
  test_assert_iota(b, 6, 100.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  c = test_wrap(ONEAPI(0), h, 6, 0, NULL);
  b = test_import(ctx, c, NULL, HDAL_COPY_ALWAYS);
  ck_assert(!hdal_buffer_is_view(b));
  test_assert_iota(b, 6, 100.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 2);
  hdal_context_destroy(ctx);
  usm_free(h);
}
END_TEST

START_TEST(byte_offset_kept_by_views_and_dropped_by_export) {
  hdal_context *ctx = setup("levelzero");
  char *p = device_iota(0, 8, 0.0f);
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 6, 0, NULL);
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
  usm_free(p);
}
END_TEST

/* Two GPUs: a tensor on GPU 0 imported onto GPU 1 is copied there. */
START_TEST(device_usm_copied_to_another_gpu) {
  hdal_context *ctx = setup("levelzero");
  void *p = device_iota(0, 6, 10.0f);
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 3, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "levelzero", 1), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1); /* the copy is complete: the source went at once */
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_device(b), device_of(ctx, "levelzero", 1));
  usm_free(p);
  test_assert_iota(b, 6, 10.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(pointer_on_the_wrong_gpu_refused) {
  hdal_context *ctx = setup("levelzero");
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap(ONEAPI(1), p, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  snprintf(expected, sizeof expected,
           "DLPack tensor claims Level Zero device 1, but the driver says its data %p is on Level Zero device 0", p);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor"); /* untouched */
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  usm_free(p);
}
END_TEST

/* Memory that is not USM, or USM of another context (a driver that tells
 * contexts apart, FAKEZE_STRICT_CONTEXTS): refused, not guessed at. */
START_TEST(unknown_memory_refused) {
  setenv("FAKEZE_STRICT_CONTEXTS", "1", 1);
  hdal_context *ctx = setup("levelzero");
  float *h = calloc(4, sizeof *h);
  void *other = device_iota(0, 4, 0.0f); /* the test's context, not hdal's */
  void *ptrs[] = {h, other};
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap(ONEAPI(0), ptrs[i], 4, 0, NULL);
    hdal_buffer *b = NULL;
    char expected[256];
    snprintf(expected, sizeof expected,
             "DLPack tensor on (kDLOneAPI, 0): the Level Zero driver, in hdal's context, does not know its data %p", ptrs[i]);
    ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
    ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(test_deleted, 2);
  free(h);
  usm_free(other);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(host_memory_copied_to_gpu) {
  hdal_context *ctx = setup("cpu,levelzero");
  float *h = malloc(6 * sizeof *h);
  iota(h, 6, -3.0f);
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 3, NULL);
  hdal_buffer *b = NULL;
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "levelzero", 0), &never, &b);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
  ck_assert_msg(strstr(hdal_error_message(e), "copying is disabled"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  b = test_import(ctx, c, device_of(ctx, "levelzero", 0), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  memset(h, 0, 6 * sizeof *h); /* the device holds its own copy */
  test_assert_iota(b, 6, -3.0f);
  float back[6]; /* the driver agrees the data is device memory */
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
  hdal_context *ctx = setup("levelzero");
  void *p = device_iota(0, 3, 7.0f);
  const int64_t strides[2] = {0, 1};
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 2, 3, strides);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(!hdal_buffer_is_view(b));
  const float expected[] = {7, 8, 9, 7, 8, 9};
  test_assert_values(b, 6, expected);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
  usm_free(p);
}
END_TEST

/* ---- export ---- */

START_TEST(export_as_kDLOneAPI_and_round_trip) {
  hdal_context *ctx = setup("cpu,levelzero");
  size_t live = ze.fakeze_live_allocations ? ze.fakeze_live_allocations() : 0;
  float h[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, device_of(ctx, "levelzero", 1), HDAL_COPY_ALWAYS);
  hdal_capsule_destroy(c);
  hdal_capsule *out = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_int_eq(m->dl_tensor.device.device_type, kDLOneAPI);
  ck_assert_int_eq(m->dl_tensor.device.device_id, 1);
  ck_assert_ptr_eq(m->dl_tensor.data, hdal_buffer_data(b));
  float back[4];
  device_read(back, m->dl_tensor.data, sizeof back);
  ck_assert(!memcmp(back, h, sizeof h));
  /* Import of the export on the same device: a view of the same memory. */
  hdal_buffer *again = test_import(ctx, out, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(hdal_buffer_is_view(again));
  ck_assert_ptr_eq(hdal_buffer_data(again), hdal_buffer_data(b));
  hdal_buffer_release(b);
  test_assert_values(again, 4, h);
  hdal_buffer_release(again);
  hdal_capsule_destroy(out);
  ck_assert_ok(hdal_device_trim(device_of(ctx, "levelzero", 1))); /* the pool's cache goes back too */
  if (ze.fakeze_live_allocations) ck_assert_uint_eq(ze.fakeze_live_allocations(), live);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(versioned_export) {
  hdal_context *ctx = setup("levelzero");
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 0}};
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor_versioned");
  DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
  ck_assert_int_eq(v->dl_tensor.device.device_type, kDLOneAPI);
  ck_assert_ptr_eq(v->dl_tensor.data, p);
  hdal_buffer_release(b);
  hdal_capsule_destroy(out);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  usm_free(p);
}
END_TEST

/* ---- copies between devices and backends ---- */

/* Level Zero -> CUDA (fake) -> ROCm (fake) -> OpenCL (PoCL, when it has a
 * device) -> CPU -> Level Zero GPU 1, through host memory between backends. */
START_TEST(copy_to_device_across_backends) {
  char lib[4200];
  snprintf(lib, sizeof lib, "%s/fakecuda.so", getenv("HDAL_TEST_MODULES"));
  if (access(lib, R_OK) == 0) setenv("HDAL_CUDA_LIBRARY", lib, 1);
  snprintf(lib, sizeof lib, "%s/fakehip6.so", getenv("HDAL_TEST_MODULES"));
  if (access(lib, R_OK) == 0) setenv("HDAL_ROCM_LIBRARY", lib, 1);
  hdal_context *ctx = setup("cpu,cuda,opencl,rocm,levelzero");
  void *p = device_iota(0, 5, 30.0f);
  hdal_capsule *c = test_wrap(ONEAPI(0), p, 5, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_device *path[6];
  int n = 0;
  const char *platforms[] = {"cuda", "rocm", "opencl"};
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT && !strcmp(hdal_device_platform(d), platforms[k])) {
        path[n++] = d;
        break;
      }
    }
  path[n++] = device_of(ctx, "cpu", 0);
  path[n++] = device_of(ctx, "levelzero", 1);
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
  usm_free(p);
}
END_TEST

/* ---- resources ---- */

START_TEST(out_of_device_memory_is_an_error) {
  setenv("FAKEZE_MEMORY", "1024", 1);
  hdal_context *ctx = setup("cpu,levelzero");
  float *h = calloc(1024, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 1024, 0, NULL);
  hdal_buffer *b = NULL;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "levelzero", 0), NULL, &b), HDAL_RESOURCE_EXHAUSTED,
                  "zeMemAllocDevice of 4096 bytes on Level Zero device 0: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)");
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

static float host[1024];
static void no_deleter(DLManagedTensor *m) { free(m); }

static hdal_buffer *to_gpu(hdal_context *ctx) {
  int64_t shape[1] = {1024};
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  m->deleter = no_deleter;
  hdal_capsule *c = hdal_capsule_wrap(m);
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, device_of(ctx, "levelzero", 0), NULL, &b));
  hdal_capsule_destroy(c);
  return b;
}

/* hdal's pool with a slow list: a block freed behind a running kernel is not
 * handed out before the kernel is done (the fence: an event signalled on the
 * device's immediate list when the block went back, docs/memory.md). */
START_TEST(block_freed_behind_queued_work_waits) {
  setenv("FAKEZE_SLOW_LIST", "1", 1);
  hdal_context *ctx = setup("cpu,levelzero");
  size_t live = ze.fakeze_live_allocations ? ze.fakeze_live_allocations() : 0;
  hdal_buffer *a = to_gpu(ctx);
  void *pa = hdal_buffer_data(a);
  ze.fakeze_slow_launch(); /* a kernel using a, still running */
  hdal_buffer_release(a);
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_ptr_ne(hdal_buffer_data(b), pa); /* not while the kernel may use it */
  ck_assert_uint_eq(ze.fakeze_calls("zeCommandListAppendSignalEvent"), 1);
  ck_assert_uint_eq(ze.fakeze_calls("zeEventQueryStatus"), 1); /* ZE_RESULT_NOT_READY */
  /* b's copy was waited for on the host: the kernel is done, a's block is free. */
  hdal_buffer *c = to_gpu(ctx);
  ck_assert_ptr_eq(hdal_buffer_data(c), pa);
  ck_assert_uint_eq(ze.fakeze_calls("zeMemAllocDevice"), 2);
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  ck_assert_ok(hdal_device_trim(device_of(ctx, "levelzero", 0)));
  if (ze.fakeze_live_allocations) ck_assert_uint_eq(ze.fakeze_live_allocations(), live);
  hdal_context_destroy(ctx);
}
END_TEST

/* The context gives back every object it made on the driver: its contexts,
 * the devices' lists, events and pools (the test's own are one of each). */
START_TEST(context_destroy_gives_everything_back) {
  hdal_context *ctx = setup("cpu,levelzero");
  size_t live = ze.fakeze_live_allocations ? ze.fakeze_live_allocations() : 0;
  hdal_buffer_release(to_gpu(ctx));
  hdal_buffer *b = to_gpu(ctx);
  ck_assert_int_eq(ze.fakeze_live("list"), 2);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
  ck_assert_int_eq(ze.fakeze_live("context"), 1);
  ck_assert_int_eq(ze.fakeze_live("list"), 1);
  ck_assert_int_eq(ze.fakeze_live("pool"), 1);
  ck_assert_int_eq(ze.fakeze_live("event"), 1);
  if (ze.fakeze_live_allocations) ck_assert_uint_eq(ze.fakeze_live_allocations(), live);
}
END_TEST

int main(void) {
  if (!test_ze_have_loader()) {
    printf("SKIP: no Level Zero loader (%s; Debian's libze1)\n", TEST_ZE_LOADER);
    return 77;
  }
  Suite *s = suite_create("levelzero_buffers");
  TCase *tc = tcase_create("levelzero_buffers");
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HDAL_LEVELZERO_LIBRARY");
  real_driver = getenv("HDAL_TEST_REAL_LEVELZERO") != NULL;
  const char *n = getenv("HDAL_TEST_LEVELZERO_DEVICES");
  bool two = !real_driver || (n && atoi(n) >= 2);
  const char *pre = getenv("LD_PRELOAD"); /* valgrind reports the fault as an error before the signal */
  if (!real_driver && (!pre || !strstr(pre, "vgpreload")))
    tcase_add_test_raise_signal(tc, fake_device_memory_faults_on_host_access, SIGSEGV);
  tcase_add_test(tc, device_usm_routed_and_viewed);
  tcase_add_test(tc, host_usm_viewed_and_copied);
  tcase_add_test(tc, byte_offset_kept_by_views_and_dropped_by_export);
  tcase_add_test(tc, host_memory_copied_to_gpu);
  tcase_add_test(tc, strided_device_tensor_compacted);
  tcase_add_test(tc, export_as_kDLOneAPI_and_round_trip);
  tcase_add_test(tc, versioned_export);
  tcase_add_test(tc, copy_to_device_across_backends);
  if (two) {
    tcase_add_test(tc, shared_usm_viewed_by_both_gpus);
    tcase_add_test(tc, device_usm_copied_to_another_gpu);
    tcase_add_test(tc, pointer_on_the_wrong_gpu_refused);
  }
  if (!real_driver) { /* what only the fake can script */
    tcase_add_test(tc, unknown_memory_refused);
    tcase_add_test(tc, out_of_device_memory_is_an_error);
    tcase_add_test(tc, block_freed_behind_queued_work_waits);
    tcase_add_test(tc, context_destroy_gives_everything_back);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
