/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU buffers end to end, for every GPU API (gpusuite.h): import, export,
 * copies and streams, with values checked and every deleter counted.  Against
 * the face's fake with two GPUs on a small synthetic machine, or (gpu_real)
 * the machine's runtime, where the two-GPU cases need two GPUs. */
#include <limits.h>
#include <signal.h>
#include "gpusuite.h"

static const gpu_buffers *spec;

hdal_context *gpu_buffers_setup(const char *backends) {
  if (!gpu_real) {
    gpu_use_fake();
    gpu_set_default("DEVICES", "2");
  }
  return gpu_context(backends);
}

/* "cpu,<the face's backend>" or the face's alone. */
static hdal_context *setup(bool cpu) { return gpu_buffers_setup(gpu_backends(cpu)); }

/* Device memory on GPU `ordinal` holding floats first, first+1, ... */
static void *device_iota(int ordinal, size_t n, float first) {
  float host[64];
  ck_assert_uint_le(n, 64);
  for (size_t i = 0; i < n; i++) host[i] = first + (float)i;
  void *p = NULL;
  ck_assert_int_eq(gpu->alloc(ordinal, host, n * sizeof(float), &p), 0);
  return p;
}

static void device_free(int ordinal, void *p) { ck_assert_int_eq(gpu->free(ordinal, p), 0); }

static DLDevice on(int ordinal) { return (DLDevice){gpu->memory, ordinal}; }

static size_t live_allocations(void) { return gpu_hook.live_allocations ? gpu_hook.live_allocations() : 0; }

/* ---- the fake itself ---- */

/* Its device memory faults on host access, as a GPU's does: every other case
 * passing shows that hdal never touches device memory from the host. */
START_TEST(fake_device_memory_faults_on_host_access) {
  hdal_context *ctx = setup(false);
  float *p = device_iota(0, 4, 1.0f);
  signal(SIGSEGV, SIG_DFL); /* the kernel's verdict, not a sanitizer's report */
  volatile float x = p[0];
  (void)x;
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- import ---- */

START_TEST(device_memory_routed_and_viewed) {
  hdal_context *ctx = setup(true);
  void *p = device_iota(0, 6, 1.0f);
  size_t live = live_allocations();
  hdal_capsule *c = test_wrap(on(0), p, 2, 3, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert_ptr_eq(hdal_buffer_device(b), gpu_device(ctx, 0));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), p); /* zero-copy */
  test_assert_iota(b, 6, 1.0f);
  if (gpu_hook.live_allocations) ck_assert_uint_eq(gpu_hook.live_allocations(), live); /* nothing allocated */
  hdal_capsule_destroy(c); /* consumed: the buffer owns the tensor */
  ck_assert_int_eq(test_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

START_TEST(byte_offset_kept_by_views_and_dropped_by_export) {
  hdal_context *ctx = setup(false);
  char *p = device_iota(0, 8, 0.0f);
  hdal_capsule *c = test_wrap(on(0), p, 6, 0, NULL);
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
  device_free(0, p);
}
END_TEST

/* Two GPUs: a tensor on GPU 0 imported onto GPU 1 is copied there. */
START_TEST(device_memory_copied_to_another_gpu) {
  hdal_context *ctx = setup(false);
  void *p = device_iota(0, 6, 10.0f);
  hdal_capsule *c = test_wrap(on(0), p, 3, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, 1), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1); /* the copy is complete: the source went at once */
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_ne(hdal_buffer_data(b), p);
  ck_assert_ptr_eq(hdal_buffer_device(b), gpu_device(ctx, 1));
  device_free(0, p); /* the copy does not depend on the source any more */
  test_assert_iota(b, 6, 10.0f);
  if (gpu_hook.calls && spec->peer_copy) ck_assert_uint_ge(gpu_hook.calls(spec->peer_copy), 1);
  hdal_buffer_release(b);
  ck_assert_int_eq(test_deleted, 1);
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx);
}
END_TEST

/* Calls of the fake's `entry` so far; 0 where it is not counted (NULL, or a real runtime). */
static unsigned calls_of(const char *entry) { return gpu_hook.calls && entry ? gpu_hook.calls(entry) : 0; }

/* Copies from GPU 0 to GPU 1 in a new context, each checked; how many times that context asked the fake to
 * enable peer access (UINT_MAX where nothing is counted), and how much staging memory it took (*staged). */
static unsigned peer_copies(int copies, unsigned *staged) {
  hdal_context *ctx = setup(false);
  unsigned before = gpu_hook.calls && spec->enable_peer ? gpu_hook.calls(spec->enable_peer) : 0;
  unsigned staged_before = calls_of(spec->staging);
  for (int i = 0; i < copies; i++) {
    void *p = device_iota(0, 6, 20.0f + (float)i);
    hdal_capsule *c = test_wrap(on(0), p, 3, 2, NULL);
    hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, 1), HDAL_COPY_IF_NEEDED);
    device_free(0, p);
    test_assert_iota(b, 6, 20.0f + (float)i);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
  }
  /* The hooks are opened with the first context: a real runtime has none, and counts nothing. */
  unsigned n = gpu_hook.calls && spec->enable_peer ? gpu_hook.calls(spec->enable_peer) - before : UINT_MAX;
  *staged = calls_of(spec->staging) - staged_before;
  hdal_context_destroy(ctx);
  return n;
}

/* A copy between two GPUs the runtime lets address each other enables that once, so that its peer copy
 * goes directly (docs/cuda.md, "Copies between and within GPUs"); where it does not, the runtime's peer
 * copy stages through host memory (CUDA, HIP), or hdal does (Level Zero, whose copies have no peer call):
 * no enabling asked for, the bytes right all the same. */
START_TEST(peer_access_enabled_once_where_granted) {
  unsigned staged, enabled = peer_copies(3, &staged);
  if (enabled != UINT_MAX) ck_assert_uint_eq(enabled, 1); /* a real runtime counts nothing: the copies are checked */
  ck_assert_uint_eq(staged, 0); /* directly */
}
END_TEST

START_TEST(peer_copies_without_peer_access) {
  if (gpu_real) return; /* the machine's runtime answers for itself */
  gpu_set("PEER", "none"); /* read by the fake when the test's first context loads it */
  unsigned staged, enabled = peer_copies(2, &staged);
  if (enabled != UINT_MAX) ck_assert_uint_eq(enabled, 0);
  if (spec->staging) ck_assert_uint_eq(staged, 2); /* through host memory, one piece a copy */
}
END_TEST

/* A runtime whose peer query fails: no access, and the copies right (staged where hdal stages). */
START_TEST(peer_copies_when_the_peer_query_fails) {
  if (gpu_real) return;
  gpu_set("PEER", "fail");
  unsigned staged, enabled = peer_copies(2, &staged);
  if (enabled != UINT_MAX) ck_assert_uint_eq(enabled, 0);
  if (spec->staging) ck_assert_uint_eq(staged, 2);
}
END_TEST

START_TEST(pointer_on_the_wrong_gpu_refused) {
  hdal_context *ctx = setup(false);
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap(on(1), p, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  spec->wrong_gpu(expected, sizeof expected, p);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor"); /* untouched */
  ck_assert_int_eq(test_deleted, 0);
  /* Copying it onto GPU 1 would read it from where the tensor says: refused too. */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, gpu_device(ctx, 1), NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

START_TEST(host_pointer_as_device_tensor_refused) {
  hdal_context *ctx = setup(false);
  float *h = calloc(4, sizeof *h);
  hdal_capsule *c = test_wrap(on(0), h, 4, 0, NULL);
  hdal_buffer *b = NULL;
  char expected[256];
  spec->unknown(expected, sizeof expected, h);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, expected);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* Page-locked host memory, mapped by the GPUs at the same address: viewed by
 * GPU 0 (where it routes) and, where its DLPack type says it is host memory
 * (kDLCUDAHost, kDLROCMHost, not kDLOneAPI), by the CPU; with
 * HDAL_COPY_ALWAYS a copy on the GPU, read from the host side. */
START_TEST(pinned_host_memory_viewed_by_gpu_and_cpu) {
  hdal_context *ctx = setup(true);
  float *h;
  ck_assert_int_eq(gpu->pinned_alloc(6 * sizeof(float), (void **)&h), 0);
  for (int i = 0; i < 6; i++) h[i] = 100.0f + (float)i;
  hdal_device *targets[] = {NULL, gpu_device_of(ctx, "cpu", 0)};
  int n = gpu->pinned != gpu->memory ? 2 : 1;
  for (int i = 0; i < n; i++) {
    hdal_capsule *c = test_wrap((DLDevice){gpu->pinned, 0}, h, 2, 3, NULL);
    hdal_buffer *b = test_import(ctx, c, targets[i], HDAL_COPY_NEVER);
    ck_assert_ptr_eq(hdal_buffer_device(b), targets[i] ? targets[i] : gpu_device(ctx, 0));
    ck_assert(hdal_buffer_is_view(b));
    ck_assert_ptr_eq(hdal_buffer_data(b), h);
    test_assert_iota(b, 6, 100.0f);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
    ck_assert_int_eq(test_deleted, i + 1);
  }
  hdal_capsule *c = test_wrap((DLDevice){gpu->pinned, 0}, h, 6, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_ALWAYS);
  ck_assert(!hdal_buffer_is_view(b));
  test_assert_iota(b, 6, 100.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, n + 1);
  hdal_context_destroy(ctx);
  ck_assert_int_eq(gpu->pinned_free(h), 0);
}
END_TEST

START_TEST(host_memory_copied_to_gpu) {
  hdal_context *ctx = setup(true);
  float *h = malloc(6 * sizeof *h);
  for (int i = 0; i < 6; i++) h[i] = -3.0f + (float)i;
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 3, NULL);
  hdal_buffer *b = NULL;
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, gpu_device(ctx, 0), &never, &b);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
  ck_assert_msg(strstr(hdal_error_message(e), "copying is disabled"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);

  b = test_import(ctx, c, gpu_device(ctx, 0), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  memset(h, 0, 6 * sizeof *h); /* the device holds its own copy */
  test_assert_iota(b, 6, -3.0f);
  float back[6]; /* the runtime agrees the data is device memory of GPU 0 */
  ck_assert_int_eq(gpu->read(back, hdal_buffer_data(b), sizeof back), 0);
  ck_assert(back[0] == -3.0f && back[5] == 2.0f);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

/* Broadcast strides on the device: compacted through host memory. */
START_TEST(strided_device_tensor_compacted) {
  hdal_context *ctx = setup(false);
  void *p = device_iota(0, 3, 7.0f);
  const int64_t strides[2] = {0, 1};
  hdal_capsule *c = test_wrap(on(0), p, 2, 3, strides);
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

START_TEST(export_and_round_trip) {
  hdal_context *ctx = setup(true);
  int g = gpu_two ? spec->export_on : 0;
  size_t live = live_allocations();
  float h[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 2, 2, NULL);
  hdal_buffer *b = test_import(ctx, c, gpu_device(ctx, g), HDAL_COPY_ALWAYS);
  hdal_capsule_destroy(c);

  hdal_capsule *out = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor");
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_int_eq(m->dl_tensor.device.device_type, gpu->memory);
  ck_assert_int_eq(m->dl_tensor.device.device_id, g);
  ck_assert_ptr_eq(m->dl_tensor.data, hdal_buffer_data(b));
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  ck_assert_ptr_nonnull(m->dl_tensor.strides);
  ck_assert_int_eq(m->dl_tensor.strides[0], 2);
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  float back[4];
  ck_assert_int_eq(gpu->read(back, m->dl_tensor.data, sizeof back), 0);
  ck_assert(!memcmp(back, h, sizeof h));

  /* Import of the export on the same device: a view of the same memory. */
  hdal_buffer *again = test_import(ctx, out, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert(hdal_buffer_is_view(again));
  ck_assert_ptr_eq(hdal_buffer_data(again), hdal_buffer_data(b));
  hdal_buffer_release(b);
  test_assert_values(again, 4, h); /* the exported tensor kept the memory alive */
  hdal_buffer_release(again);
  hdal_capsule_destroy(out);
  ck_assert_ok(hdal_device_trim(gpu_device(ctx, g))); /* the pool's cache goes back too (docs/memory.md) */
  if (gpu_hook.live_allocations) ck_assert_uint_eq(gpu_hook.live_allocations(), live); /* all freed */
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(versioned_export) {
  hdal_context *ctx = setup(false);
  void *p = device_iota(0, 4, 0.0f);
  hdal_capsule *c = test_wrap(on(0), p, 4, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 0}};
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor_versioned");
  DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
  ck_assert_uint_eq(v->version.major, 1);
  ck_assert_uint_eq(v->flags & DLPACK_FLAG_BITMASK_IS_COPIED, 0);
  ck_assert_int_eq(v->dl_tensor.device.device_type, gpu->memory);
  ck_assert_ptr_eq(v->dl_tensor.data, p);
  hdal_buffer_release(b);
  hdal_capsule_destroy(out);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  hdal_context_destroy(ctx);
  device_free(0, p);
}
END_TEST

/* ---- copies between devices and backends ---- */

START_TEST(copy_to_device_between_gpus_and_cpu) {
  hdal_context *ctx = setup(true);
  void *p = device_iota(0, 6, 20.0f);
  hdal_capsule *c = test_wrap(on(0), p, 6, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED), *on1 = NULL, *oncpu = NULL, *back = NULL;
  ck_assert_ok(hdal_buffer_copy_to_device(b, gpu_device(ctx, 1), &on1));
  ck_assert_ok(hdal_buffer_copy_to_device(on1, gpu_device_of(ctx, "cpu", 0), &oncpu));
  ck_assert_ok(hdal_buffer_copy_to_device(oncpu, gpu_device(ctx, 0), &back));
  ck_assert_ptr_ne(hdal_buffer_data(on1), p);
  ck_assert_ptr_ne(hdal_buffer_data(back), p);
  ck_assert_ptr_eq(hdal_buffer_device(back), gpu_device(ctx, 0));
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

/* copy_to_device across backends goes through the host: from GPU 0 to the
 * other GPU backends' fakes (where they are built), OpenCL (PoCL, when there
 * is a device), the CPU, and the face's last GPU. */
START_TEST(copy_to_device_across_backends) {
  static const struct {
    const char *platform, *variable, *fake;
  } others[] = {{"cuda", "HDAL_CUDA_LIBRARY", "fakecuda"}, {"rocm", "HDAL_ROCM_LIBRARY", "fakehip6"}};
  const char *modules = getenv("HDAL_TEST_MODULES");
  for (size_t k = 0; modules && k < sizeof others / sizeof others[0]; k++) {
    char lib[4200];
    snprintf(lib, sizeof lib, "%s/%s.so", modules, others[k].fake);
    if (strcmp(others[k].platform, gpu->platform) && access(lib, R_OK) == 0) setenv(others[k].variable, lib, 1);
  }
  bool named = !strcmp(gpu->platform, "cuda") || !strcmp(gpu->platform, "rocm");
  char backends[64];
  snprintf(backends, sizeof backends, "cpu,cuda,opencl,rocm%s%s", named ? "" : ",", named ? "" : gpu->platform);
  hdal_context *ctx = gpu_buffers_setup(backends);
  void *p = device_iota(0, 5, 30.0f);
  hdal_capsule *c = test_wrap(on(0), p, 5, 0, NULL);
  hdal_buffer *b = test_import(ctx, c, NULL, HDAL_COPY_IF_NEEDED);
  const char *platforms[] = {"cuda", "rocm", "opencl"};
  hdal_device *path[5];
  int n = 0;
  for (size_t k = 0; k < 3; k++)
    for (size_t i = 0; strcmp(platforms[k], gpu->platform) && i < hdal_context_device_count(ctx); i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT && !strcmp(hdal_device_platform(d), platforms[k])) {
        path[n++] = d;
        break;
      }
    }
  path[n++] = gpu_device_of(ctx, "cpu", 0);
  path[n++] = gpu_device(ctx, gpu_two ? 1 : 0);
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
  device_free(0, p);
}
END_TEST

/* ---- streams ---- */

/* GPU 0's memory holding 0, 1, 2, 3 with `later` written over it on a stream
 * the caller has not waited for, imported with `copy` and, when `ordered`,
 * that stream. */
typedef struct {
  hdal_context *ctx;
  void *p;
  intptr_t stream;
  hdal_capsule *c;
  hdal_buffer *b;
} stream_case;

static stream_case stream_import(const float later[4], bool ordered, hdal_copy_mode copy) {
  stream_case t = {.ctx = setup(false)};
  t.p = device_iota(0, 4, 0.0f);
  ck_assert_int_eq(gpu->late_write(t.p, later, 4 * sizeof(float), &t.stream), 0);
  t.c = test_wrap(on(0), t.p, 4, 0, NULL);
  hdal_import_options o = {.struct_size = sizeof o, .copy = copy, .has_stream = ordered, .stream = t.stream};
  ck_assert_ok(hdal_buffer_from_dlpack(t.ctx, t.c, NULL, &o, &t.b));
  ck_assert_str_eq(hdal_capsule_name(t.c), "used_dltensor");
  return t;
}

static void stream_done(stream_case *t) {
  hdal_buffer_release(t->b);
  ck_assert_int_eq(test_deleted, 1);
  ck_assert_int_eq(gpu->stream_destroy(t->stream), 0);
  hdal_capsule_destroy(t->c);
  hdal_context_destroy(t->ctx);
  device_free(0, t->p);
}

/* Values written on a non-blocking stream are what a stream-ordered import sees. */
START_TEST(import_ordered_after_the_callers_stream) {
  float later[4] = {9, 8, 7, 6};
  stream_case t = stream_import(later, true, HDAL_COPY_ALWAYS);
  ck_assert_int_eq(test_deleted, 1);
  test_assert_values(t.b, 4, later);
  stream_done(&t);
}
END_TEST

/* A view made with the stream option: hdal's later reads come after the stream's work. */
START_TEST(view_ordered_after_the_callers_stream) {
  float later[4] = {5, 4, 3, 2};
  stream_case t = stream_import(later, true, HDAL_COPY_IF_NEEDED);
  ck_assert(hdal_buffer_is_view(t.b));
  test_assert_values(t.b, 4, later);
  if (gpu_hook.calls) ck_assert_uint_ge(gpu_hook.calls(spec->wait_event), 1);
  stream_done(&t);
}
END_TEST

/* The fake runs stream work late: without the stream, the copy sees the old values
 * (what a GPU may well do), which shows that the tests above can fail. */
START_TEST(fake_stream_work_is_late_without_the_stream_option) {
  float later[4] = {9, 8, 7, 6};
  stream_case t = stream_import(later, false, HDAL_COPY_ALWAYS);
  test_assert_iota(t.b, 4, 0.0f);
  ck_assert_uint_eq(gpu_hook.calls(spec->record), 0);
  stream_done(&t);
}
END_TEST

/* ---- resources ---- */

START_TEST(out_of_device_memory_is_an_error) {
  gpu_set("MEMORY", "1024");
  hdal_context *ctx = setup(true);
  float *h = calloc(1024, sizeof *h);
  hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, h, 1024, 0, NULL);
  hdal_buffer *b = NULL;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, gpu_device(ctx, 0), NULL, &b), HDAL_RESOURCE_EXHAUSTED,
                  spec->out_of_memory());
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(test_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(test_deleted, 1);
  free(h);
  hdal_context_destroy(ctx);
}
END_TEST

void gpu_buffers_add(TCase *tc, const gpu_buffers *s) {
  spec = s;
  tcase_add_test(tc, device_memory_routed_and_viewed);
  tcase_add_test(tc, byte_offset_kept_by_views_and_dropped_by_export);
  tcase_add_test(tc, host_pointer_as_device_tensor_refused);
  tcase_add_test(tc, pinned_host_memory_viewed_by_gpu_and_cpu);
  tcase_add_test(tc, host_memory_copied_to_gpu);
  tcase_add_test(tc, strided_device_tensor_compacted);
  tcase_add_test(tc, export_and_round_trip);
  tcase_add_test(tc, versioned_export);
  tcase_add_test(tc, copy_to_device_across_backends);
  if (gpu->late_write) {
    tcase_add_test(tc, import_ordered_after_the_callers_stream);
    tcase_add_test(tc, view_ordered_after_the_callers_stream);
  }
  if (gpu_two) {
    tcase_add_test(tc, device_memory_copied_to_another_gpu);
    tcase_add_test(tc, peer_access_enabled_once_where_granted);
    tcase_add_test(tc, peer_copies_without_peer_access);
    tcase_add_test(tc, peer_copies_when_the_peer_query_fails);
    tcase_add_test(tc, pointer_on_the_wrong_gpu_refused);
    tcase_add_test(tc, copy_to_device_between_gpus_and_cpu);
  }
  if (!gpu_real) {
    /* valgrind reports the fault as an error before the signal: not under it. */
    const char *pre = getenv("LD_PRELOAD");
    if (gpu->guarded && (!pre || !strstr(pre, "vgpreload")))
      tcase_add_test_raise_signal(tc, fake_device_memory_faults_on_host_access, SIGSEGV);
    if (gpu->late_write) tcase_add_test(tc, fake_stream_work_is_late_without_the_stream_option);
    tcase_add_test(tc, out_of_device_memory_is_an_error);
  }
}
