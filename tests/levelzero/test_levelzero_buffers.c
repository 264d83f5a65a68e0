/* SPDX-License-Identifier: BSD-3-Clause */
/* Level Zero buffers end to end (docs/levelzero.md): the GPU buffer suite
 * (tests/gpusuite/buffers.c) on the Level Zero face, with device USM as
 * device memory and host USM as pinned memory; what only Level Zero has
 * (shared USM, contexts that keep memory apart, the objects hdal makes on the
 * driver); and the device pool's suite (tests/gpusuite/pool.c) on hdal's pool
 * with its fences.  Through the system's real loader and the fake driver
 * (tests/fakes/ze/), or, under tests/gpu/ (HDAL_TEST_REAL_LEVELZERO;
 * HDAL_TEST_LEVELZERO_DEVICES says how many GPUs the two-device cases may
 * use), the machine's own driver; skipped (77) where the loader is not
 * installed. */
#include "gpusuite/gpusuite.h"
#include "fakes/ze/testze.h"

#define ONEAPI(id) ((DLDevice){(DLDeviceType)kDLOneAPI, (id)})

static void wrong_gpu(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor claims Level Zero device 1, but the driver says its data %p is on Level Zero device 0",
           data);
}

static void unknown(char *out, size_t len, const void *data) {
  snprintf(out, len, "DLPack tensor on (kDLOneAPI, 0): the Level Zero driver, in hdal's context, does not know its data %p",
           data);
}

static const char *out_of_memory(void) {
  return "zeMemAllocDevice of 4096 bytes on Level Zero device 0: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)";
}

static const gpu_buffers levelzero = {
    .staging = "zeMemAllocHost",
    .export_on = 1,
    .wrong_gpu = wrong_gpu,
    .unknown = unknown,
    .out_of_memory = out_of_memory,
};

/* hdal's pool (Level Zero has no stream-ordered one): a block freed behind
 * queued work waits for a fence, an event signalled on the device's immediate
 * list when the block went back (docs/memory.md). */
static const gpu_pool pool = {
    .fenced = {{"zeCommandListAppendSignalEvent", 1}, {"zeEventQueryStatus", 1}}, /* ZE_RESULT_NOT_READY */
    .fence_done = {{"zeMemAllocDevice", 2}},
    .hdal_reused = {{"zeMemAllocDevice", 1}},
    .hdal_trimmed = {{"zeMemFree", 1}},
    .hdal_retried = {{"zeMemFree", 1}},
    .caching_off = {{"zeMemAllocDevice", 2}, {"zeMemFree", 2}},
};

/* Shared USM: viewed by either GPU, whichever it was allocated on. */
START_TEST(shared_usm_viewed_by_both_gpus) {
  hdal_context *ctx = gpu_buffers_setup("cpu,levelzero");
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t h = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  float *p = NULL;
  ck_assert_int_eq(ze.zeMemAllocShared(ze.context, &d, &h, 6 * sizeof(float), 0, ze.devices[1], (void **)&p), 0);
  for (int i = 0; i < 6; i++) p[i] = 40.0f + (float)i; /* shared memory: the host writes it */
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap(ONEAPI(1), p, 6, 0, NULL);
    hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, i), HDAL_COPY_NEVER);
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), p);
    test_assert_iota(b, 6, 40.0f);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_context_destroy(ctx);
  ck_assert_int_eq(ze.zeMemFree(ze.context, p), 0);
}
END_TEST

/* Memory that is not USM, or USM of another context (a driver that tells
 * contexts apart, FAKEZE_STRICT_CONTEXTS): refused, not guessed at. */
START_TEST(unknown_memory_refused) {
  setenv("FAKEZE_STRICT_CONTEXTS", "1", 1);
  hdal_context *ctx = gpu_buffers_setup("levelzero");
  float *h = calloc(4, sizeof *h), zeros[4] = {0};
  void *other; /* the test's context, not hdal's */
  ck_assert_int_eq(gpu->alloc(0, zeros, sizeof zeros, &other), 0);
  void *ptrs[] = {h, other};
  for (int i = 0; i < 2; i++) {
    hdal_capsule *c = test_wrap(ONEAPI(0), ptrs[i], 4, 0, NULL);
    hdal_buffer *b = NULL;
    char expected[256];
    unknown(expected, sizeof expected, ptrs[i]);
    ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
    ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(test_deleted, 2);
  free(h);
  ck_assert_int_eq(gpu->free(0, other), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* The context gives back every object it made on the driver: its contexts,
 * the devices' lists, events and pools (the test's own are one of each). */
START_TEST(context_destroy_gives_everything_back) {
  hdal_context *ctx = gpu_buffers_setup("cpu,levelzero");
  size_t live = ze.fakeze_live_allocations();
  hdal_buffer_release(gpu_pool_copy(ctx, 1024));
  hdal_buffer *b = gpu_pool_copy(ctx, 1024);
  ck_assert_int_eq(ze.fakeze_live("list"), 2);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
  ck_assert_int_eq(ze.fakeze_live("context"), 1);
  ck_assert_int_eq(ze.fakeze_live("list"), 1);
  ck_assert_int_eq(ze.fakeze_live("pool"), 1);
  ck_assert_int_eq(ze.fakeze_live("event"), 1);
  ck_assert_uint_eq(ze.fakeze_live_allocations(), live);
}
END_TEST

/* hdal_device_native_handle: the driver and device the loader gives out, and hdal's context on the
 * driver (not the test's), in which hdal's memory lives: device USM the test allocates there is viewed
 * in place, and hdal's allocation is known there (a driver that tells contexts apart); the other APIs'
 * kinds refused, a queue or list among them (Level Zero has no kind of one). */
START_TEST(native_handles) {
  setenv("FAKEZE_STRICT_CONTEXTS", "1", 1);
  hdal_context *ctx = gpu_buffers_setup("cpu,levelzero");
  int ordinal = gpu_two ? 1 : 0;
  hdal_device *d = gpu_device(ctx, ordinal);
  intptr_t h = 5;
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_LEVEL_ZERO_DRIVER, &h));
  ck_assert_ptr_eq((ze_driver_handle_t)h, ze.driver);
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_LEVEL_ZERO_DEVICE, &h));
  ck_assert_ptr_eq((ze_device_handle_t)h, ze.devices[ordinal]);
  ck_assert_ok(hdal_device_native_handle(d, HDAL_NATIVE_LEVEL_ZERO_CONTEXT, &h));
  ze_context_handle_t c = (ze_context_handle_t)h;
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_ne(c, ze.context);
  /* hdal's memory is of that context. */
  int64_t n = 4;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, (DLDataType){kDLFloat, 32, 1}, &b));
  ze_memory_allocation_properties_t props = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ze_device_handle_t on = NULL;
  ck_assert_int_eq(ze.zeMemGetAllocProperties(c, hdal_buffer_data(b), &props, &on), 0);
  ck_assert_int_eq(props.type, ZE_MEMORY_TYPE_DEVICE);
  ck_assert_ptr_eq(on, ze.devices[ordinal]);
  hdal_buffer_release(b);
  /* Memory the test allocates in it is hdal's to view in place. */
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  ck_assert_int_eq(ze.zeMemAllocDevice(c, &desc, 4 * sizeof(float), 0, ze.devices[ordinal], &p), 0);
  hdal_capsule *cap = test_wrap(ONEAPI(ordinal), p, 4, 0, NULL);
  hdal_buffer *view = test_import(ctx, cap, d, HDAL_COPY_NEVER);
  ck_assert(hdal_buffer_is_view(view));
  ck_assert_ptr_eq(hdal_buffer_data(view), p);
  float in[4] = {1.5f, 2.5f, 3.5f, 4.5f}, out[4] = {0};
  ck_assert_ok(hdal_buffer_write(view, 0, in, sizeof in));
  ck_assert_ok(hdal_buffer_read(view, 0, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  hdal_buffer_release(view);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(ze.zeMemFree(c, p), 0);
  ck_assert_int_eq(test_assert_native_refused(d, HDAL_NATIVE_LEVEL_ZERO_DRIVER, HDAL_NATIVE_LEVEL_ZERO_CONTEXT), 9);
  hdal_context_destroy(ctx);
}
END_TEST

/* Two GPUs that cannot reach each other (FAKEZE_PEER=none): a copy larger than one piece of hdal's staging
 * memory (16 MiB, docs/levelzero.md) goes through one host allocation of hdal's context, piece by piece,
 * and arrives whole; the staging memory is given back. */
START_TEST(staged_copy_in_pieces) {
  setenv("FAKEZE_PEER", "none", 1);
  hdal_context *ctx = gpu_buffers_setup("cpu,levelzero");
  size_t n = ((size_t)33 << 20) + 5; /* three pieces, the last 1 MiB and 5 bytes */
  unsigned char *in = malloc(n), *out = malloc(n);
  ck_assert(in && out);
  for (size_t i = 0; i < n; i++) in[i] = (unsigned char)(i * 7 + (i >> 20));
  int64_t shape = (int64_t)n;
  hdal_buffer *a, *b;
  ck_assert_ok(hdal_buffer_allocate(gpu_device(ctx, 0), 1, &shape, (DLDataType){kDLUInt, 8, 1}, &a));
  ck_assert_ok(hdal_buffer_write(a, 0, in, n));
  size_t live = ze.fakeze_live_allocations();
  unsigned hosts = ze.fakeze_calls("zeMemAllocHost"), copies = ze.fakeze_calls("zeCommandListAppendMemoryCopy");
  ck_assert_ok(hdal_buffer_copy_to_device(a, gpu_device(ctx, 1), &b));
  ck_assert_uint_eq(ze.fakeze_calls("zeMemAllocHost") - hosts, 1);
  ck_assert_uint_eq(ze.fakeze_calls("zeCommandListAppendMemoryCopy") - copies, 6); /* each piece read, then written */
  ck_assert_uint_eq(ze.fakeze_live_allocations(), live + 1); /* b's memory; the staging memory went */
  ck_assert_ptr_eq(hdal_buffer_device(b), gpu_device(ctx, 1));
  ck_assert_ok(hdal_buffer_read(b, 0, out, n));
  ck_assert(memcmp(in, out, n) == 0);
  hdal_buffer_release(a);
  hdal_buffer_release(b);
  free(in);
  free(out);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  if (!test_library_loads(TEST_ZE_LOADER)) {
    printf("SKIP: no Level Zero loader (%s; Debian's libze1)\n", TEST_ZE_LOADER);
    return 77;
  }
  Suite *s = suite_create("levelzero_buffers");
  TCase *tc = tcase_create("levelzero_buffers");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HDAL_LEVELZERO_LIBRARY");
  gpu_init(&gpu_face_ze);
  gpu_buffers_add(tc, &levelzero);
  tcase_add_test(tc, native_handles);
  if (gpu_two) tcase_add_test(tc, shared_usm_viewed_by_both_gpus);
  if (!gpu_real) { /* what only the fake can script */
    tcase_add_test(tc, unknown_memory_refused);
    tcase_add_test(tc, context_destroy_gives_everything_back);
    if (gpu_two) tcase_add_test(tc, staged_copy_in_pieces);
    gpu_pool_add(tc, &pool, false);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
