/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack through the OpenCL backend on real PoCL (docs/dlpack.md):
 * host <-> OpenCL round trips for every dtype width, layouts, zero-copy import
 * of a cl_mem (the same handle), a foreign context's cl_mem copied, export as a
 * cl_mem OpenCL accepts, copies between devices, streams, and every deleter
 * exactly once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "test_opencl.h"

/* ---- tensors the test owns, with deleter counts ---- */

static atomic_int deleted; /* deleter calls, all tensors (threads included) */

typedef struct {
  DLManagedTensor m;
  int64_t shape[4], strides[4];
  void *host; /* freed by the deleter (host tensors) */
  cl_mem mem; /* released by the deleter (OpenCL tensors) */
} tensor;

static void tensor_deleter(DLManagedTensor *m) {
  tensor *t = m->manager_ctx;
  free(t->host);
  if (t->mem) clReleaseMemObject(t->mem);
  free(t);
  deleted++;
}

static tensor *tensor_new(int ndim, const int64_t *shape, const int64_t *strides, DLDataType dt) {
  tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  if (ndim) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  if (strides) memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
  t->m.manager_ctx = t;
  t->m.deleter = tensor_deleter;
  t->m.dl_tensor = (DLTensor){.ndim = ndim, .dtype = dt, .shape = t->shape, .strides = strides ? t->strides : NULL};
  return t;
}

/* A host tensor over `span` bytes filled with a pattern of its own. */
static tensor *host_tensor(int ndim, const int64_t *shape, const int64_t *strides, DLDataType dt, size_t span) {
  tensor *t = tensor_new(ndim, shape, strides, dt);
  ck_assert_int_eq(posix_memalign(&t->host, 64, span ? span : 1), 0);
  for (size_t i = 0; i < span; i++) ((unsigned char *)t->host)[i] = (unsigned char)(i * 131 + 17);
  t->m.dl_tensor.data = t->host;
  t->m.dl_tensor.device = (DLDevice){kDLCPU, 0};
  return t;
}

static hdal_context *ctx;
static cl_device_id ids[2];

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  ctx = test_context_with("cpu,opencl");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  ck_assert_uint_eq(cl_all_devices(ids, 2), 2);
  deleted = 0;
}

static void teardown(void) { hdal_context_destroy(ctx); }

static hdal_device *cpu_dev(void) { return hdal_context_device(ctx, 0); }
static hdal_device *ocl_dev(int i) { return hdal_context_device(ctx, (size_t)(1 + i)); }

static hdal_buffer *import(tensor *t, hdal_device *d, hdal_copy_mode mode) {
  hdal_capsule *c = hdal_capsule_wrap(&t->m);
  hdal_import_options o = {.struct_size = sizeof o, .copy = mode};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, &o, &b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  hdal_capsule_destroy(c);
  return b;
}

/* The bytes of a cl_mem, read on a queue of the caller's own in the cl_mem's context. */
static void read_cl_mem(cl_mem m, size_t offset, void *dst, size_t n) {
  cl_context c;
  cl_device_id d[4];
  ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof c, &c, NULL));
  ck_assert_cl(clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof d, d, NULL));
  cl_int e;
  cl_command_queue q = clCreateCommandQueue(c, d[0], 0, &e);
  ck_assert_cl(e);
  ck_assert_cl(clEnqueueReadBuffer(q, m, CL_TRUE, offset, n, dst, 0, NULL, NULL));
  clReleaseCommandQueue(q);
}

/* A cl_mem of the caller's own context on `id`, holding `n` bytes from `src`. */
static cl_mem own_cl_mem(cl_context c, const void *src, size_t n) {
  cl_int e;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, (void *)src, &e);
  ck_assert_cl(e);
  return m;
}

/* ---- host -> OpenCL -> host ---- */

START_TEST(round_trip_every_dtype_width) {
  static const DLDataType types[] = {
      {kDLBool, 8, 1},    {kDLInt, 8, 1},     {kDLUInt, 16, 1}, {kDLFloat, 16, 1}, {kDLBfloat, 16, 1},
      {kDLInt, 32, 1},    {kDLFloat, 32, 1},  {kDLUInt, 64, 1}, {kDLFloat, 64, 1}, {kDLComplex, 64, 1},
      {kDLComplex, 128, 1}, {kDLFloat8_e4m3fn, 8, 1}, {kDLFloat4_e2m1fn, 4, 1},
  };
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    for (int dev = 0; dev < 2; dev++) {
      int64_t shape[2] = {37, 6};
      size_t n = (size_t)(37 * 6) * types[k].bits / 8;
      tensor *t = host_tensor(2, shape, NULL, types[k], n);
      unsigned char *want = malloc(n), *got = malloc(n);
      memcpy(want, t->host, n);
      if (types[k].code == kDLBool)
        for (size_t i = 0; i < n; i++) want[i] = ((unsigned char *)t->host)[i] = want[i] & 1;
      int before = deleted;
      hdal_buffer *b = import(t, ocl_dev(dev), HDAL_COPY_IF_NEEDED);
      ck_assert_int_eq(deleted, before + 1); /* the copy is done: the source is gone */
      ck_assert_ptr_eq(hdal_buffer_device(b), ocl_dev(dev));
      ck_assert(!hdal_buffer_is_view(b));
      memset(got, 0, n);
      ck_assert_ok(hdal_buffer_copy_to_host(b, got, n));
      ck_assert_msg(!memcmp(got, want, n), "dtype code %d bits %d on device %d", types[k].code, types[k].bits, dev);
      /* The device memory itself holds those bytes. */
      cl_mem m = hdal_buffer_data(b);
      size_t size = 0;
      ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL));
      ck_assert_uint_eq(size, n);
      memset(got, 0, n);
      read_cl_mem(m, 0, got, n);
      ck_assert(!memcmp(got, want, n));
      hdal_buffer_release(b);
      free(want);
      free(got);
    }
}
END_TEST

/* Element (i, j, k) of a strided host tensor of 4-byte elements. */
static uint32_t at(const tensor *t, int64_t i, int64_t j, int64_t k) {
  const int64_t *s = t->strides;
  return ((const uint32_t *)t->host)[i * s[0] + j * s[1] + k * s[2]];
}

START_TEST(layouts_land_row_major) {
  /* A permutation (column-major), padding, a broadcast dimension and a negative stride. */
  static const int64_t shape[3] = {4, 5, 3};
  static const struct {
    int64_t strides[3];
    int64_t base; /* element offset of (0,0,0) */
    size_t span;  /* elements the tensor's memory holds */
  } cases[] = {
      {{1, 4, 20}, 0, 60},   /* column-major */
      {{3, 12, 1}, 0, 60},   /* another permutation */
      {{40, 8, 2}, 0, 160},  /* padded */
      {{15, 0, 1}, 0, 60},   /* broadcast along j */
      {{-15, 3, 1}, 45, 60}, /* rows reversed */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tensor *t = host_tensor(3, shape, cases[c].strides, (DLDataType){kDLUInt, 32, 1}, cases[c].span * 4);
    t->m.dl_tensor.byte_offset = (uint64_t)cases[c].base * 4;
    uint32_t want[60], got[60];
    tensor ref = *t;
    ref.host = (uint32_t *)t->host + cases[c].base;
    for (int64_t i = 0, n = 0; i < 4; i++)
      for (int64_t j = 0; j < 5; j++)
        for (int64_t k = 0; k < 3; k++) want[n++] = at(&ref, i, j, k);
    hdal_buffer *b = import(t, ocl_dev(1), HDAL_COPY_IF_NEEDED);
    ck_assert_int_eq(deleted, (int)c + 1);
    ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
    ck_assert_msg(!memcmp(got, want, sizeof want), "layout case %zu", c);
    const int64_t *st = hdal_buffer_strides(b);
    ck_assert_int_eq(st[0], 15);
    ck_assert_int_eq(st[1], 3);
    ck_assert_int_eq(st[2], 1);
    hdal_buffer_release(b);
  }
}
END_TEST

START_TEST(zero_size_and_zero_dim_tensors) {
  int64_t empty[2] = {0, 7};
  tensor *t = host_tensor(2, empty, NULL, (DLDataType){kDLFloat, 32, 1}, 0);
  hdal_buffer *b = import(t, ocl_dev(0), HDAL_COPY_IF_NEEDED);
  ck_assert_ok(hdal_buffer_copy_to_host(b, NULL, 0));
  hdal_buffer_release(b);
  tensor *s = host_tensor(0, NULL, NULL, (DLDataType){kDLFloat, 64, 1}, 8);
  double want;
  memcpy(&want, s->host, 8);
  b = import(s, ocl_dev(0), HDAL_COPY_IF_NEEDED);
  double got = 0;
  ck_assert_ok(hdal_buffer_copy_to_host(b, &got, 8));
  ck_assert_mem_eq(&got, &want, 8);
  hdal_buffer_release(b);
  ck_assert_int_eq(deleted, 2);
}
END_TEST

/* ---- cl_mem imports ---- */

START_TEST(cl_mem_of_a_context_holding_the_device_is_zero_copy) {
  cl_context c = cl_own_context(ids[1]);
  float data[64];
  for (int i = 0; i < 64; i++) data[i] = (float)i * 0.5f;
  int64_t shape[2] = {8, 8};
  tensor *t = tensor_new(2, shape, NULL, (DLDataType){kDLFloat, 32, 1});
  t->mem = own_cl_mem(c, data, sizeof data);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 1};
  cl_mem m = t->mem;
  hdal_buffer *b = import(t, NULL, HDAL_COPY_NEVER); /* routed by (kDLOpenCL, 1) */
  ck_assert_ptr_eq(hdal_buffer_device(b), ocl_dev(1));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), m); /* the very handle */
  ck_assert_uint_eq(cl_mem_refcount(m), 2); /* the producer's and the view's */
  ck_assert_int_eq(deleted, 0);
  float got[64];
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert_mem_eq(got, data, sizeof data);
  /* Writes through the producer's own queue show through the view. */
  cl_command_queue q = clCreateCommandQueue(c, ids[1], 0, NULL);
  float nine = 9.0f;
  ck_assert_cl(clEnqueueWriteBuffer(q, m, CL_TRUE, 4 * 10, 4, &nine, 0, NULL, NULL));
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert(got[10] == 9.0f);
  clRetainMemObject(m); /* to watch it after the deleter */
  hdal_buffer_release(b);
  ck_assert_int_eq(deleted, 1);
  ck_assert_uint_eq(cl_mem_refcount(m), 1); /* only the watcher's: hdal and the producer let go */
  clReleaseMemObject(m);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
}
END_TEST

START_TEST(cl_mem_view_at_an_offset_exports_a_sub_buffer) {
  cl_uint align = cl_device_uint(ids[0], CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  cl_context c = cl_own_context(ids[0]);
  size_t n = 4 * align;
  unsigned char *data = malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 3);
  int64_t shape[1] = {(int64_t)align};
  tensor *t = tensor_new(1, shape, NULL, (DLDataType){kDLUInt, 8, 1});
  t->mem = own_cl_mem(c, data, n);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  t->m.dl_tensor.byte_offset = 2 * align;
  cl_mem m = t->mem;
  hdal_buffer *b = import(t, NULL, HDAL_COPY_NEVER);
  ck_assert(hdal_buffer_is_view(b));
  cl_mem sub = hdal_buffer_data(b); /* a cl_mem that starts at the first element */
  ck_assert_ptr_ne(sub, m);
  cl_mem parent = NULL;
  size_t off = 0;
  ck_assert_cl(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL));
  ck_assert_cl(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof off, &off, NULL));
  ck_assert_ptr_eq(parent, m);
  ck_assert_uint_eq(off, 2 * align);
  unsigned char *got = malloc(align);
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, align));
  ck_assert_mem_eq(got, data + 2 * align, align);
  hdal_buffer_release(b);
  ck_assert_int_eq(deleted, 1);
  clReleaseContext(c);
  free(data);
  free(got);
}
END_TEST

/* A sub-buffer cannot start off the base address alignment, so such a view
 * could not be handed out as a cl_mem: the import copies. */
START_TEST(cl_mem_at_an_unaligned_offset_is_copied) {
  cl_context c = cl_own_context(ids[0]);
  float data[64];
  for (int i = 0; i < 64; i++) data[i] = (float)i;
  int64_t shape[1] = {8};
  tensor *t = tensor_new(1, shape, NULL, (DLDataType){kDLFloat, 32, 1});
  t->mem = own_cl_mem(c, data, sizeof data);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  t->m.dl_tensor.byte_offset = 4; /* element-aligned, not base-address-aligned */
  cl_mem m = t->mem;
  hdal_buffer *b = import(t, NULL, HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_nonnull(hdal_buffer_data(b));
  ck_assert_ptr_ne(hdal_buffer_data(b), m);
  float got[8];
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert_mem_eq(got, data + 1, sizeof got);
  hdal_capsule *out = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &out));
  size_t size = 0;
  ck_assert_cl(clGetMemObjectInfo(((DLManagedTensor *)hdal_capsule_pointer(out))->dl_tensor.data, CL_MEM_SIZE,
                                  sizeof size, &size, NULL));
  ck_assert_uint_eq(size, sizeof got);
  hdal_capsule_destroy(out);
  hdal_buffer_release(b);
  clReleaseContext(c);
}
END_TEST

START_TEST(cl_mem_of_a_foreign_context_is_copied) {
  /* A context holding only device 1: device 0 cannot use that memory in place. */
  cl_context c = cl_own_context(ids[1]);
  int32_t data[30];
  for (int i = 0; i < 30; i++) data[i] = 1000 - 7 * i;
  int64_t shape[2] = {5, 6};
  tensor *t = tensor_new(2, shape, NULL, (DLDataType){kDLInt, 32, 1});
  t->mem = own_cl_mem(c, data, sizeof data);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 1};
  cl_mem m = t->mem;
  clRetainMemObject(m);

  /* Copying disabled: refused, and the capsule is untouched. */
  hdal_capsule *cap = hdal_capsule_wrap(&t->m);
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_buffer *b = NULL;
  char msg[512];
  snprintf(msg, sizeof msg,
           "Can't create a view of a DLPack tensor on (kDLOpenCL, 1) on hdal device 1 (opencl, %s): that device "
           "cannot address the tensor's memory, and copying is disabled (HDAL_COPY_NEVER)",
           hdal_device_kind(ocl_dev(0)));
  ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, cap, ocl_dev(0), &never, &b), HDAL_INVALID_ARGUMENT, msg,
                        HDAL_CAUSE_COPY_REFUSED);
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  ck_assert_int_eq(deleted, 0);

  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, ocl_dev(0), NULL, &b));
  ck_assert_str_eq(hdal_capsule_name(cap), "used_dltensor");
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1); /* copied, so the source went at once */
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ptr_ne(hdal_buffer_data(b), m);
  ck_assert_uint_eq(cl_mem_refcount(m), 1); /* no reference kept on the source */
  int32_t got[30];
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert_mem_eq(got, data, sizeof data);
  hdal_buffer_release(b);
  clReleaseMemObject(m);
  clReleaseContext(c);
}
END_TEST

/* A cl_mem whose context lacks the device its tensor names: refused in words
 * (the device claimed, the devices of the memory's context), whether the
 * tensor is routed by its DLDevice or read for a copy elsewhere; the capsule
 * untouched. */
START_TEST(cl_mem_of_a_context_without_the_named_device_is_refused) {
  cl_context c = cl_own_context(ids[0]);
  float data[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  tensor *t = tensor_new(1, shape, NULL, (DLDataType){kDLFloat, 32, 1});
  t->mem = own_cl_mem(c, data, sizeof data);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 1};
  hdal_capsule *cap = hdal_capsule_wrap(&t->m);
  hdal_buffer *b = NULL;
  char msg[512];
  snprintf(msg, sizeof msg,
           "DLPack tensor on (kDLOpenCL, 1) names OpenCL device 1 (%s), but its cl_mem belongs to an OpenCL context "
           "that does not hold that device (the context holds OpenCL device 0)",
           hdal_device_kind(ocl_dev(1)));
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, cpu_dev(), NULL, &b), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, ocl_dev(1), NULL, &b), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  ck_assert_int_eq(deleted, 0);
  /* Named right, the same memory imports (a view on device 0). */
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, NULL, NULL, &b));
  ck_assert(hdal_buffer_is_view(b));
  float got[4];
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert_mem_eq(got, data, sizeof data);
  hdal_buffer_release(b);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1);
  clReleaseContext(c);
}
END_TEST

START_TEST(cl_mem_imported_onto_the_cpu_is_read_back) {
  cl_context c = cl_own_context(ids[0]);
  uint16_t data[100];
  for (int i = 0; i < 100; i++) data[i] = (uint16_t)(i * 601);
  int64_t shape[1] = {50}, strides[1] = {2}; /* every other element */
  tensor *t = tensor_new(1, shape, strides, (DLDataType){kDLUInt, 16, 1});
  t->mem = own_cl_mem(c, data, sizeof data);
  t->m.dl_tensor.data = t->mem;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  hdal_buffer *b = import(t, cpu_dev(), HDAL_COPY_IF_NEEDED);
  ck_assert_int_eq(deleted, 1);
  ck_assert_ptr_eq(hdal_buffer_device(b), cpu_dev());
  const uint16_t *got = hdal_buffer_data(b);
  for (int i = 0; i < 50; i++) ck_assert_uint_eq(got[i], data[2 * i]);
  hdal_buffer_release(b);
  clReleaseContext(c);
}
END_TEST

/* The caller's queue orders the import after the work already on it. */
START_TEST(import_stream_waits_for_the_callers_queue) {
  cl_context c = cl_own_context(ids[0]);
  static uint8_t zeros[1 << 20], ones[1 << 20], got[1 << 20];
  memset(ones, 1, sizeof ones);
  cl_mem m = own_cl_mem(c, zeros, sizeof zeros);
  cl_command_queue q = clCreateCommandQueue(c, ids[0], 0, NULL);
  ck_assert_cl(clEnqueueWriteBuffer(q, m, CL_FALSE, 0, sizeof ones, ones, 0, NULL, NULL));
  int64_t shape[1] = {sizeof ones};
  tensor *t = tensor_new(1, shape, NULL, (DLDataType){kDLUInt, 8, 1});
  t->mem = m;
  t->m.dl_tensor.data = m;
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  hdal_capsule *cap = hdal_capsule_wrap(&t->m);
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS, .has_stream = true, .stream = (intptr_t)q};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, ocl_dev(1), &o, &b));
  hdal_capsule_destroy(cap);
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, sizeof got));
  ck_assert_mem_eq(got, ones, sizeof ones);
  hdal_buffer_release(b);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  ck_assert_int_eq(deleted, 1);
}
END_TEST

/* ---- export ---- */

static int64_t prod(const int64_t *v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= v[i];
  return p;
}

START_TEST(export_gives_a_cl_mem_opencl_accepts) {
  int64_t shape[3] = {3, 4, 5};
  size_t n = (size_t)prod(shape, 3) * 8;
  tensor *t = host_tensor(3, shape, NULL, (DLDataType){kDLFloat, 64, 1}, n);
  unsigned char *want = malloc(n), *got = malloc(n);
  memcpy(want, t->host, n);
  hdal_buffer *b = import(t, ocl_dev(1), HDAL_COPY_IF_NEEDED);
  hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {1, 1}};
  hdal_capsule *cap = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &eo, &cap));
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor_versioned");
  DLManagedTensorVersioned *v = hdal_capsule_pointer(cap);
  ck_assert_uint_eq(v->version.major, 1);
  DLTensor *dl = &v->dl_tensor;
  ck_assert_int_eq(dl->device.device_type, kDLOpenCL);
  ck_assert_int_eq(dl->device.device_id, 1);
  ck_assert_uint_eq(dl->byte_offset, 0);
  ck_assert_ptr_nonnull(dl->strides);
  ck_assert_int_eq(dl->strides[0], 20);
  ck_assert_int_eq(dl->strides[2], 1);
  cl_mem m = dl->data;
  size_t size = 0;
  cl_mem_object_type type = 0;
  ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL));
  ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, NULL));
  ck_assert_uint_eq(size, n);
  ck_assert_uint_eq(type, CL_MEM_OBJECT_BUFFER);
  cl_context c;
  cl_device_id d;
  ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof c, &c, NULL));
  ck_assert_cl(clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof d, &d, NULL));
  ck_assert_ptr_eq(d, ids[1]);
  read_cl_mem(m, 0, got, n);
  ck_assert_mem_eq(got, want, n);
  /* The export keeps the buffer alive after the caller's release. */
  hdal_buffer_release(b);
  memset(got, 0, n);
  read_cl_mem(m, 0, got, n);
  ck_assert_mem_eq(got, want, n);
  hdal_capsule_destroy(cap); /* runs the export's deleter: the last reference goes */
  ck_assert_int_eq(deleted, 1);
  free(want);
  free(got);
}
END_TEST

START_TEST(export_then_import_on_the_same_device_is_zero_copy) {
  int64_t shape[2] = {16, 16};
  tensor *t = host_tensor(2, shape, NULL, (DLDataType){kDLInt, 16, 1}, 512);
  hdal_buffer *b = import(t, ocl_dev(0), HDAL_COPY_IF_NEEDED);
  hdal_capsule *cap = NULL;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &cap));
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  void *exported = ((DLManagedTensor *)hdal_capsule_pointer(cap))->dl_tensor.data;
  hdal_buffer *b2 = NULL;
  hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, NULL, &never, &b2));
  hdal_capsule_destroy(cap);
  ck_assert_ptr_eq(hdal_buffer_device(b2), ocl_dev(0));
  ck_assert(hdal_buffer_is_view(b2));
  ck_assert_ptr_eq(hdal_buffer_data(b2), exported);
  ck_assert_ptr_eq(hdal_buffer_data(b2), hdal_buffer_data(b));
  hdal_buffer_release(b);
  unsigned char got[512], want[512];
  for (int i = 0; i < 512; i++) want[i] = (unsigned char)(i * 131 + 17);
  ck_assert_ok(hdal_buffer_copy_to_host(b2, got, 512));
  ck_assert_mem_eq(got, want, 512);
  hdal_buffer_release(b2);
  ck_assert_int_eq(deleted, 1);
}
END_TEST

/* ---- copies between devices ---- */

START_TEST(copy_to_device_between_cpu_and_opencl_devices) {
  int64_t shape[1] = {1000};
  tensor *t = host_tensor(1, shape, NULL, (DLDataType){kDLFloat, 32, 1}, 4000);
  unsigned char want[4000], got[4000];
  memcpy(want, t->host, 4000);
  hdal_buffer *cpu = import(t, cpu_dev(), HDAL_COPY_ALWAYS);
  hdal_buffer *o0 = NULL, *o1 = NULL, *back = NULL;
  ck_assert_ok(hdal_buffer_copy_to_device(cpu, ocl_dev(0), &o0));
  ck_assert_ok(hdal_buffer_copy_to_device(o0, ocl_dev(1), &o1)); /* two contexts: through the host */
  ck_assert_ok(hdal_buffer_copy_to_device(o1, cpu_dev(), &back));
  ck_assert_ptr_eq(hdal_buffer_device(o0), ocl_dev(0));
  ck_assert_ptr_eq(hdal_buffer_device(o1), ocl_dev(1));
  ck_assert_ptr_ne(hdal_buffer_data(o0), hdal_buffer_data(o1));
  ck_assert_mem_eq(hdal_buffer_data(back), want, 4000);
  read_cl_mem(hdal_buffer_data(o1), 0, got, 4000);
  ck_assert_mem_eq(got, want, 4000);
  hdal_buffer *same = NULL;
  ck_assert_ok(hdal_buffer_copy_to_device(o0, ocl_dev(0), &same)); /* one context: clEnqueueCopyBuffer */
  ck_assert_ptr_ne(hdal_buffer_data(same), hdal_buffer_data(o0));
  ck_assert_ok(hdal_buffer_copy_to_host(same, got, 4000));
  ck_assert_mem_eq(got, want, 4000);
  hdal_buffer_release(same);
  hdal_buffer_release(back);
  hdal_buffer_release(o1);
  hdal_buffer_release(o0);
  hdal_buffer_release(cpu);
  ck_assert_int_eq(deleted, 1);
}
END_TEST

START_TEST(export_to_another_device_under_copy_never_is_refused) {
  /* A CPU buffer asked for as a kDLOpenCL tensor needs a copy: refused under HDAL_COPY_NEVER with
   * HDAL_CAUSE_COPY_REFUSED, and copied under HDAL_COPY_IF_NEEDED. */
  int64_t shape[1] = {16};
  tensor *t = host_tensor(1, shape, NULL, (DLDataType){kDLFloat, 32, 1}, 64);
  hdal_buffer *cpu = import(t, cpu_dev(), HDAL_COPY_ALWAYS);
  hdal_export_options o = {.struct_size = sizeof o, .has_dl_device = true, .dl_device = {kDLOpenCL, 0},
                           .copy = HDAL_COPY_NEVER};
  hdal_capsule *c = NULL;
  char msg[256];
  snprintf(msg, sizeof msg,
           "Can't export buffer of hdal device 0 (cpu) to DLPack device (4, 0) (hdal device %d) without a copy, "
           "and copying is disabled (HDAL_COPY_NEVER)",
           hdal_device_id(ocl_dev(0)));
  ck_assert_error_cause(hdal_buffer_to_dlpack(cpu, &o, &c), HDAL_INVALID_ARGUMENT, msg, HDAL_CAUSE_COPY_REFUSED);
  ck_assert_ptr_null(c);
  o.copy = HDAL_COPY_IF_NEEDED;
  ck_assert_ok(hdal_buffer_to_dlpack(cpu, &o, &c));
  ck_assert_ptr_nonnull(c);
  hdal_capsule_destroy(c);
  /* A device that does not exist is no copy refusal. */
  o.dl_device = (DLDevice){kDLOpenCL, 99};
  o.copy = HDAL_COPY_NEVER;
  hdal_error *e = hdal_buffer_to_dlpack(cpu, &o, &c);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_cause(e), HDAL_CAUSE_NONE);
  hdal_error_destroy(e);
  hdal_buffer_release(cpu);
  ck_assert_int_eq(deleted, 1);
}
END_TEST

/* ---- threads ---- */

enum { THREADS = 4, ROUNDS = 10 };

/* Host -> device -> export -> import (zero-copy) -> host, over and over; the
 * first operations race to create the devices' queues. */
static void *worker(void *arg) {
  intptr_t k = (intptr_t)arg;
  for (int r = 0; r < ROUNDS; r++) {
    int64_t shape[1] = {1024 + k};
    size_t n = (size_t)shape[0] * 4;
    tensor *t = host_tensor(1, shape, NULL, (DLDataType){kDLInt, 32, 1}, n);
    for (size_t i = 0; i < (size_t)shape[0]; i++) ((int32_t *)t->host)[i] = (int32_t)(k * 100000 + r * 1000) + (int32_t)i;
    int32_t *want = malloc(n), *got = malloc(n);
    memcpy(want, t->host, n);
    hdal_capsule *cap = hdal_capsule_wrap(&t->m);
    hdal_buffer *b = NULL, *b2 = NULL;
    hdal_error *e = hdal_buffer_from_dlpack(ctx, cap, ocl_dev((int)((k + r) % 2)), NULL, &b);
    hdal_capsule_destroy(cap);
    hdal_capsule *out = NULL;
    if (!e) e = hdal_buffer_to_dlpack(b, NULL, &out);
    if (!e) e = hdal_buffer_from_dlpack(ctx, out, NULL, NULL, &b2);
    if (!e) e = hdal_buffer_copy_to_host(b2, got, n);
    bool ok = !e && hdal_buffer_is_view(b2) && hdal_buffer_data(b2) == hdal_buffer_data(b) && !memcmp(got, want, n);
    hdal_error_destroy(e);
    hdal_capsule_destroy(out);
    if (b2) hdal_buffer_release(b2);
    if (b) hdal_buffer_release(b);
    free(want);
    free(got);
    if (!ok) return (void *)1;
  }
  return NULL;
}

START_TEST(many_threads_at_once) {
  pthread_t th[THREADS];
  for (intptr_t k = 0; k < THREADS; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, worker, (void *)k), 0);
  int failed = 0;
  for (int k = 0; k < THREADS; k++) {
    void *r;
    pthread_join(th[k], &r);
    failed += r != NULL;
  }
  ck_assert_int_eq(failed, 0);
  ck_assert_int_eq(deleted, THREADS * ROUNDS);
}
END_TEST

/* ---- refusals ---- */

START_TEST(device_id_out_of_range_is_refused) {
  int64_t shape[1] = {4};
  tensor *t = tensor_new(1, shape, NULL, (DLDataType){kDLFloat, 32, 1});
  t->m.dl_tensor.data = (void *)&t->host; /* never used: routing fails first */
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 2};
  hdal_capsule *cap = hdal_capsule_wrap(&t->m);
  hdal_buffer *b = NULL;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLOpenCL, 2) is out of range: backend 'opencl' has 2 devices");
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  ck_assert_int_eq(deleted, 0);
  t->m.dl_tensor.data = NULL;
  hdal_capsule_destroy(cap); /* still unconsumed: the deleter runs */
  ck_assert_int_eq(deleted, 1);
}
END_TEST

/* Devices the backend lists but cannot serve refuse imports, capsule untouched
 * (the fake vendor of tests/fakes/cl/fakecl.c). */
START_TEST(ifrt_native_opencl_devices_refuse_imports) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fake", getenv("HDAL_TEST_ICD"));
  setenv("OCL_ICD_VENDORS", dir, 1);
  hdal_context *c = test_context_with("opencl");
  ck_assert_uint_eq(hdal_context_device_count(c), 4);
  int64_t shape[1] = {8};
  tensor *t = host_tensor(1, shape, NULL, (DLDataType){kDLFloat, 32, 1}, 32);
  hdal_capsule *cap = hdal_capsule_wrap(&t->m);
  hdal_buffer *b = NULL;
  for (size_t i = 0; i < 2; i++) /* unavailable, custom */
    ck_assert_error(hdal_buffer_from_dlpack(c, cap, hdal_context_device(c, i), NULL, &b), HDAL_FAILED_PRECONDITION,
                    "DLPack is supported for PjRt-compatible backends only.");
  /* A device whose driver refuses contexts fails on first use, and nothing changes. */
  ck_assert_error(hdal_buffer_from_dlpack(c, cap, hdal_context_device(c, 2), NULL, &b), HDAL_FAILED_PRECONDITION,
                  "OpenCL device 2: no context can be created on it: clCreateContext: CL_OUT_OF_HOST_MEMORY (-6)");
  /* Routed there by its DLPack device: the same answer. */
  t->m.dl_tensor.device = (DLDevice){kDLOpenCL, 1};
  ck_assert_error(hdal_buffer_from_dlpack(c, cap, NULL, NULL, &b), HDAL_FAILED_PRECONDITION,
                  "DLPack is supported for PjRt-compatible backends only.");
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  ck_assert_int_eq(deleted, 0);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1);
  hdal_context_destroy(c);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HWLOC_XMLFILE");
  bool pocl = opencl_have_pocl() && pocl_device_count() == 2;
  if (!pocl && !opencl_have_fake()) {
    printf("SKIP: neither PoCL with two devices (POCL_DEVICES=\"%s\") nor the fake vendor\n",
           getenv("POCL_DEVICES") ? getenv("POCL_DEVICES") : "");
    return 77;
  }
  Suite *s = suite_create("opencl_dlpack");
  TCase *ifrt = tcase_create("ifrt");
  tcase_add_test(ifrt, ifrt_native_opencl_devices_refuse_imports);
  suite_add_tcase(s, ifrt);
  if (pocl) {
    TCase *tc = tcase_create("dlpack");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_every_dtype_width);
    tcase_add_test(tc, layouts_land_row_major);
    tcase_add_test(tc, zero_size_and_zero_dim_tensors);
    tcase_add_test(tc, cl_mem_of_a_context_holding_the_device_is_zero_copy);
    tcase_add_test(tc, cl_mem_view_at_an_offset_exports_a_sub_buffer);
    tcase_add_test(tc, cl_mem_at_an_unaligned_offset_is_copied);
    tcase_add_test(tc, cl_mem_of_a_foreign_context_is_copied);
    tcase_add_test(tc, cl_mem_of_a_context_without_the_named_device_is_refused);
    tcase_add_test(tc, cl_mem_imported_onto_the_cpu_is_read_back);
    tcase_add_test(tc, import_stream_waits_for_the_callers_queue);
    tcase_add_test(tc, export_gives_a_cl_mem_opencl_accepts);
    tcase_add_test(tc, export_then_import_on_the_same_device_is_zero_copy);
    tcase_add_test(tc, copy_to_device_between_cpu_and_opencl_devices);
    tcase_add_test(tc, export_to_another_device_under_copy_never_is_refused);
    tcase_add_test(tc, device_id_out_of_range_is_refused);
    suite_add_tcase(s, tc);
    /* Many blocking transfers: on a loaded machine PoCL's worker threads wait their turn. */
    TCase *threads = tcase_create("threads");
    tcase_add_checked_fixture(threads, setup, teardown);
    tcase_set_timeout(threads, 240);
    tcase_add_test(threads, many_threads_at_once);
    suite_add_tcase(s, threads);
  } else {
    printf("no PoCL with two devices: only the fake vendor's tests run\n");
  }
  return test_run_suite(s);
}
