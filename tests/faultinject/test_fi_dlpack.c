/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walk over DLPack import (view and copy), export, buffer
 * copies and the process table (issue 7); OpenCL views, reads, sub-buffers,
 * exports to another device and memory of another context, and the CPU
 * backend's mappings (issue 13).  For every failure injected: an
 * error with a sensible code, *out left NULL, the capsule untouched (its name
 * kept, its deleter not run, and a second import of it succeeding), the source
 * buffer intact; and after cleanup nothing hdal took is left.  The OpenCL
 * cases run on PoCL; the CUDA cases are the GPU walks (tests/gpusuite/walks.c)
 * on the CUDA face and the suite's fake driver. */
#include "config.h"
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "walk.h"
#ifdef HDAL_TEST_CUDA_WALKS
#include "gpusuite/gpusuite.h"
#endif

/* ---- tensors over test-owned memory, deleters counted ---- */

static int deleted;
static float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
static int64_t shape[2] = {2, 3}, padded[2] = {4, 1};

static void legacy_deleter(DLManagedTensor *t) {
  (void)t;
  deleted++;
}
static void versioned_deleter(DLManagedTensorVersioned *t) {
  (void)t;
  deleted++;
}

static DLManagedTensor legacy;
static DLManagedTensorVersioned versioned;

/* The tensor over the test's data. */
static hdal_capsule *make_capsule(bool is_versioned, bool strided, uint64_t flags) {
  DLTensor t = {.data = data, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape,
                .strides = strided ? padded : NULL};
  legacy = (DLManagedTensor){.dl_tensor = t, .deleter = legacy_deleter};
  versioned = (DLManagedTensorVersioned){.version = {1, 1}, .flags = flags, .dl_tensor = t,
                                         .deleter = versioned_deleter};
  return is_versioned ? hdal_capsule_wrap_versioned(&versioned) : hdal_capsule_wrap(&legacy);
}

/* The values the 2x3 tensor holds, compact row-major. */
static bool values_ok(const hdal_buffer *b, bool strided) {
  float got[6];
  hdal_error *err = hdal_buffer_copy_to_host(b, got, sizeof got);
  bool ok = err == NULL;
  hdal_error_destroy(err);
  for (int i = 0; ok && i < 2; i++)
    for (int j = 0; j < 3; j++) ok = ok && got[i * 3 + j] == data[i * (strided ? 4 : 3) + j];
  return ok;
}

static hdal_context *context(const char *backends, int process_index, int process_count) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends,
                            .process_index = process_index, .process_count = process_count};
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_context_create(&o, &ctx);
  hdal_error_destroy(err);
  return ctx;
}

/* The first PjRt-compatible device of a platform; NULL if there is none. */
static hdal_device *device_of(hdal_context *ctx, const char *platform, int nth) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT && !nth--)
      return d;
  }
  return NULL;
}

/* A context of the CPU backend and `platform` (NULL: the CPU alone), and in
 * *dev the platform's first PjRt-compatible device (NULL for the CPU alone).
 * NULL when there is no context (r says why) or no such device here (r->text
 * says so: the walk has nothing to do). */
static hdal_context *context_on(walk_result *r, const char *platform, hdal_device **dev) {
  char backends[64];
  snprintf(backends, sizeof backends, "cpu%s%s", platform ? "," : "", platform ? platform : "");
  hdal_context *ctx = context(backends, 0, 0);
  *dev = NULL;
  if (!ctx) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "no context with backends %s", backends);
    return NULL;
  }
  if (platform && !(*dev = device_of(ctx, platform, 0))) {
    snprintf(r->text, sizeof r->text, "no %s device", platform);
    hdal_context_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* ---- import ---- */

typedef struct {
  bool versioned, strided;
  uint64_t flags;
  hdal_copy_mode copy;
  const char *platform; /* target device; NULL: routed by the tensor */
  bool view;            /* expected result */
} import_case;

static void import_walk(walk_result *r, long n, const import_case *ic) {
  hdal_device *dev;
  hdal_context *ctx = context_on(r, ic->platform, &dev);
  if (!ctx) return;
  hdal_capsule *cap = make_capsule(ic->versioned, ic->strided, ic->flags);
  const char *name = ic->versioned ? "dltensor_versioned" : "dltensor";
  const char *used = ic->versioned ? "used_dltensor_versioned" : "used_dltensor";
  hdal_import_options o = {.struct_size = sizeof o, .copy = ic->copy};
  hdal_buffer *buf;
  walk_import(r, n, ctx, cap, dev, &o, name, &deleted, &buf);
  if (!r->ok) return;
  WALK_CHECK(r, !strcmp(hdal_capsule_name(cap), used), "capsule named \"%s\" after import", hdal_capsule_name(cap));
  bool view = hdal_buffer_is_view(buf);
  hdalfi_kind kind;
  if (view != ic->view && ic->view && walk_injected(&kind) && (kind == HDALFI_DRIVER || kind == HDALFI_OPENCL))
    /* The driver could not say where the memory is: hdal copies rather than
     * alias what it cannot vouch for (docs/cuda.md). */
    snprintf(r->outcome, sizeof r->outcome, "degraded (copied: the driver could not place the memory)");
  else
    WALK_CHECK(r, view == ic->view, "is_view %d", view);
  if (view) WALK_CHECK(r, hdal_buffer_data(buf) == data, "a view that does not alias the tensor");
  WALK_CHECK(r, values_ok(buf, ic->strided), "the buffer's values differ from the tensor's");
  WALK_CHECK(r, deleted == (view ? 0 : 1), "%d deleter call(s) after a %s import", deleted,
             view ? "zero-copy" : "copying");
  hdal_buffer_release(buf);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) after the buffer's release", deleted);
  hdal_capsule_destroy(cap);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) after destroying the consumed capsule", deleted);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

#define IMPORT(fn, ...)                                             \
  static void fn(walk_result *r, long n, const char *baseline) {  \
    (void)baseline;                                                \
    static const import_case ic = {__VA_ARGS__};                   \
    import_walk(r, n, &ic);                                        \
  }

IMPORT(import_view, .view = true)
IMPORT(import_view_versioned_read_only, .versioned = true, .flags = DLPACK_FLAG_BITMASK_READ_ONLY, .view = true)
IMPORT(import_copy_strided, .strided = true)
IMPORT(import_copy_always_versioned, .versioned = true, .copy = HDAL_COPY_ALWAYS)
IMPORT(import_copy_to_opencl, .platform = "opencl")

/* ---- export ---- */

typedef struct {
  DLPackVersion max_version;
  hdal_copy_mode copy;
  const char *platform; /* where the buffer lives; NULL: CPU (a view) */
  const char *to;       /* has_dl_device: the DLPack device of this platform's first device */
} export_case;

static void export_walk(walk_result *r, long n, const export_case *ec) {
  hdal_device *dev;
  hdal_context *ctx = context_on(r, ec->platform ? ec->platform : ec->to, &dev);
  if (!ctx) return;
  hdal_device *to = ec->to ? device_of(ctx, ec->to, 0) : NULL;
  if (!ec->platform) dev = NULL; /* the buffer on the CPU, exported to `to` */
  hdal_capsule *cap = make_capsule(false, false, 0);
  hdal_buffer *buf = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, dev, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));
  int before = deleted;
  hdal_export_options o = {.struct_size = sizeof o, .max_version = ec->max_version, .copy = ec->copy};
  if (to) {
    o.has_dl_device = true;
    o.dl_device = hdal_device_dlpack_device(to);
  }
  hdal_capsule *out = (hdal_capsule *)&o;

  walk_arm(n);
  err = hdal_buffer_to_dlpack(buf, &o, &out);
  walk_disarm();
  if (err) {
    if (!walk_accept(r, err)) return;
    WALK_CHECK(r, out == NULL, "failed export left *out = %p", (void *)out);
    WALK_CHECK(r, deleted == before, "failed export ran a deleter");
    WALK_CHECK(r, values_ok(buf, false), "the buffer changed after a failed export");
  } else {
    const char *want = ec->max_version.major ? "dltensor_versioned" : "dltensor";
    WALK_CHECK(r, !strcmp(hdal_capsule_name(out), want), "exported capsule named \"%s\"", hdal_capsule_name(out));
    hdal_capsule_destroy(out); /* runs the exported tensor's deleter: drops its reference */
  }
  hdal_buffer_release(buf);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) for the source at the end", deleted);
  hdal_capsule_destroy(cap);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

#define EXPORT(fn, ...)                                            \
  static void fn(walk_result *r, long n, const char *baseline) { \
    (void)baseline;                                               \
    static const export_case ec = {__VA_ARGS__};                  \
    export_walk(r, n, &ec);                                       \
  }

EXPORT(export_legacy, .copy = HDAL_COPY_IF_NEEDED)
EXPORT(export_versioned, .max_version = {1, 1})
EXPORT(export_versioned_copy, .max_version = {1, 1}, .copy = HDAL_COPY_ALWAYS)
EXPORT(export_opencl, .max_version = {1, 1}, .platform = "opencl")
EXPORT(export_to_opencl_dl_device, .max_version = {1, 1}, .to = "opencl")
EXPORT(export_opencl_to_cpu_dl_device, .platform = "opencl", .to = "cpu")

/* ---- OpenCL memory: views, reads, sub-buffers, another context's memory ---- */

/* A buffer on the context's first OpenCL device holding `n` floats 0, 1, ...
 * (a copy of host memory), exported as a legacy capsule whose cl_mem lives in
 * hdal's own context on that device.  NULL (r->text says why) without one. */
static float big[1 << 19]; /* 2 MiB: the CPU backend maps allocations of 1 MiB and more */

static hdal_buffer *opencl_buffer(walk_result *r, hdal_context *ctx, hdal_device *dev, size_t n) {
  for (size_t i = 0; i < n; i++) big[i] = (float)i;
  int64_t len[1] = {(int64_t)n};
  static DLManagedTensor t;
  t = (DLManagedTensor){.dl_tensor = {.data = big, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                                      .shape = len},
                        .deleter = legacy_deleter};
  hdal_capsule *c = hdal_capsule_wrap(&t);
  hdal_buffer *b = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, c, dev, NULL, &b);
  hdal_capsule_destroy(c);
  if (err) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "set-up import: %s", hdal_error_message(err));
    hdal_error_destroy(err);
    return NULL;
  }
  deleted = 0;
  len[0] = 0; /* the tensor is gone: nothing reads it again */
  return b;
}

/* Whether `b` holds floats first, first+1, ... (n of them). */
static bool floats_ok(const hdal_buffer *b, size_t first, size_t n) {
  float *got = malloc(n * sizeof *got);
  hdal_error *err = got ? hdal_buffer_copy_to_host(b, got, n * sizeof *got) : NULL;
  bool ok = got && !err;
  for (size_t i = 0; ok && i < n; i++) ok = got[i] == (float)(first + i);
  hdal_error_destroy(err);
  free(got);
  return ok;
}

/* An import of capsule `cap` under injection, onto `target` (NULL: routed):
 * on failure the capsule is untouched and imports afterwards.  The buffer in
 * *out; false when the run is over (r says why, or nothing to check). */
static bool import_armed(walk_result *r, long n, hdal_context *ctx, hdal_capsule *cap, hdal_device *target,
                         hdal_copy_mode mode, hdal_buffer **out) {
  hdal_import_options o = {.struct_size = sizeof o, .copy = mode};
  const char *name = hdal_capsule_name(cap);
  *out = (hdal_buffer *)&o;
  walk_arm(n);
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, target, &o, out);
  walk_disarm();
  if (!err) return true;
  if (!walk_accept(r, err)) return false;
  if (*out != NULL) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "failed import left *out = %p", (void *)*out);
    return false;
  }
  if (strcmp(hdal_capsule_name(cap), name)) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "failed import renamed the capsule \"%s\"", hdal_capsule_name(cap));
    return false;
  }
  err = hdal_buffer_from_dlpack(ctx, cap, target, &o, out);
  if (err) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "the capsule could not be imported after the failure: %s", hdal_error_message(err));
    hdal_error_destroy(err);
    return false;
  }
  return true;
}

/* An OpenCL tensor (hdal's export) imported again: a view (clRetainMemObject)
 * routed by its DLPack device, or onto the CPU (a device-to-host read). */
static void opencl_import(walk_result *r, long n, bool onto_cpu) {
  hdal_device *dev;
  hdal_context *ctx = context_on(r, "opencl", &dev);
  if (!ctx) return;
  hdal_buffer *src = opencl_buffer(r, ctx, dev, 6);
  WALK_CHECK(r, src, "no OpenCL buffer");
  hdal_capsule *x = NULL;
  hdal_error *err = hdal_buffer_to_dlpack(src, NULL, &x);
  WALK_CHECK(r, err == NULL, "export: %s", hdal_error_message(err));
  hdal_buffer *b;
  if (!import_armed(r, n, ctx, x, onto_cpu ? device_of(ctx, "cpu", 0) : NULL, HDAL_COPY_IF_NEEDED, &b)) return;
  hdalfi_kind kind;
  if (!onto_cpu && !hdal_buffer_is_view(b) && walk_injected(&kind) && kind == HDALFI_OPENCL)
    snprintf(r->outcome, sizeof r->outcome, "degraded (copied: OpenCL could not say where the memory is)");
  else
    WALK_CHECK(r, hdal_buffer_is_view(b) == !onto_cpu, "is_view %d", hdal_buffer_is_view(b));
  WALK_CHECK(r, floats_ok(b, 0, 6), "the imported values differ");
  hdal_buffer_release(b);
  hdal_capsule_destroy(x);
  WALK_CHECK(r, floats_ok(src, 0, 6), "the source changed");
  hdal_buffer_release(src);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

static void import_view_of_opencl(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  opencl_import(r, n, false);
}

static void import_opencl_onto_cpu(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  opencl_import(r, n, true);
}

/* hdal_buffer_copy_to_host of an OpenCL buffer. */
static void copy_to_host_opencl(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_device *dev;
  hdal_context *ctx = context_on(r, "opencl", &dev);
  if (!ctx) return;
  hdal_buffer *b = opencl_buffer(r, ctx, dev, 6);
  WALK_CHECK(r, b, "no OpenCL buffer");
  float got[6] = {0};
  walk_arm(n);
  hdal_error *err = hdal_buffer_copy_to_host(b, got, sizeof got);
  walk_disarm();
  if (err) {
    if (!walk_accept(r, err)) return;
  } else {
    for (int i = 0; i < 6; i++) WALK_CHECK(r, got[i] == (float)i, "value %d is %g", i, got[i]);
  }
  WALK_CHECK(r, floats_ok(b, 0, 6), "the buffer changed");
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* A view at an offset into an OpenCL buffer: hdal_buffer_data cuts a
 * sub-buffer (subrange), and an export of the view does too. */
static void buffer_data_subrange(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_device *dev;
  hdal_context *ctx = context_on(r, "opencl", &dev);
  if (!ctx) return;
  const char *a = hdal_device_attribute_get(dev, "base_address_alignment");
  size_t align = a ? (size_t)strtoull(a, NULL, 10) : 0, skip = align / sizeof(float);
  WALK_CHECK(r, align && align % sizeof(float) == 0 && skip < 4096, "base address alignment %zu", align);
  hdal_buffer *src = opencl_buffer(r, ctx, dev, skip + 6);
  WALK_CHECK(r, src, "no OpenCL buffer");
  hdal_capsule *x = NULL;
  hdal_error *err = hdal_buffer_to_dlpack(src, NULL, &x);
  WALK_CHECK(r, err == NULL, "export: %s", hdal_error_message(err));
  DLManagedTensor *m = hdal_capsule_pointer(x);
  m->dl_tensor.byte_offset = align; /* the last 6 floats */
  m->dl_tensor.shape[0] = 6;
  hdal_buffer *view = NULL;
  err = hdal_buffer_from_dlpack(ctx, x, NULL, NULL, &view);
  WALK_CHECK(r, err == NULL && hdal_buffer_is_view(view), "view import: %s", hdal_error_message(err));

  walk_arm(n);
  void *first = hdal_buffer_data(view);
  hdal_capsule *y = NULL;
  hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {1, 0}};
  err = first ? hdal_buffer_to_dlpack(view, &eo, &y) : NULL;
  walk_disarm();
  hdalfi_kind kind;
  if (!first) {
    WALK_CHECK(r, walk_injected(&kind), "hdal_buffer_data is NULL without an injected failure");
    snprintf(r->outcome, sizeof r->outcome, "error (hdal_buffer_data: NULL)");
  } else if (err) {
    if (!walk_accept(r, err)) return;
    WALK_CHECK(r, y == NULL, "failed export left a capsule");
  } else {
    WALK_CHECK(r, hdal_buffer_data(view) == first, "hdal_buffer_data changed");
    DLManagedTensorVersioned *v = hdal_capsule_pointer(y);
    WALK_CHECK(r, v->dl_tensor.byte_offset == 0 && v->dl_tensor.data != m->dl_tensor.data,
               "the export is not a sub-buffer of its own");
    hdal_capsule_destroy(y);
  }
  WALK_CHECK(r, floats_ok(view, skip, 6), "the view's values differ");
  hdal_buffer_release(view);
  hdal_capsule_destroy(x);
  hdal_buffer_release(src);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* Memory of another context's cl_context (a second hdal context's buffer on
 * the same device) copied onto this context's device: the cross-context path
 * (mapped on one queue, written on the other). */
static void opencl_cross_context_copy(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_device *dev, *other_dev;
  hdal_context *ctx = context_on(r, "opencl", &dev);
  if (!ctx) return;
  hdal_context *other = context_on(r, "opencl", &other_dev);
  WALK_CHECK(r, other, "no second context");
  hdal_buffer *src = opencl_buffer(r, other, other_dev, 6);
  WALK_CHECK(r, src, "no OpenCL buffer");
  hdal_capsule *x = NULL;
  hdal_error *err = hdal_buffer_to_dlpack(src, NULL, &x);
  WALK_CHECK(r, err == NULL, "export: %s", hdal_error_message(err));
  hdal_buffer *b;
  if (!import_armed(r, n, ctx, x, dev, HDAL_COPY_ALWAYS, &b)) return;
  WALK_CHECK(r, !hdal_buffer_is_view(b), "a view across contexts");
  WALK_CHECK(r, floats_ok(b, 0, 6), "the copied values differ");
  hdal_buffer_release(b);
  hdal_capsule_destroy(x);
  hdal_buffer_release(src);
  hdal_context_destroy(other);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* A 2 MiB copy onto the CPU: the backend's own mapping (mmap, madvise). */
static void import_copy_large(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_context *ctx = context("cpu", 0, 0);
  WALK_CHECK(r, ctx, "no context");
  size_t count = sizeof big / sizeof *big;
  for (size_t i = 0; i < count; i++) big[i] = (float)i;
  int64_t len[1] = {(int64_t)count};
  static DLManagedTensor t;
  t = (DLManagedTensor){.dl_tensor = {.data = big, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                                      .shape = len},
                        .deleter = legacy_deleter};
  hdal_capsule *cap = hdal_capsule_wrap(&t);
  hdal_buffer *b;
  if (!import_armed(r, n, ctx, cap, device_of(ctx, "cpu", 1), HDAL_COPY_ALWAYS, &b)) return;
  WALK_CHECK(r, !hdal_buffer_is_view(b), "a view under HDAL_COPY_ALWAYS");
  const float *got = hdal_buffer_data(b);
  for (size_t i = 0; i < count; i++) WALK_CHECK(r, got[i] == (float)i, "value %zu is %g", i, got[i]);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) after a copy", deleted);
  hdal_buffer_release(b);
  hdal_capsule_destroy(cap);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- a buffer to another device ---- */

static void copy_to_device(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_context *ctx = context("cpu", 0, 0);
  WALK_CHECK(r, ctx, "no context");
  hdal_device *dst = device_of(ctx, "cpu", 1);
  WALK_CHECK(r, dst, "needs two CPU devices (HWLOC_SYNTHETIC with two NUMA nodes)");
  hdal_capsule *cap = make_capsule(false, false, 0);
  hdal_buffer *buf = NULL, *out;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, NULL, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));

  walk_copy_to(r, n, buf, dst, &out);
  if (!r->ok) return;
  if (out) {
    WALK_CHECK(r, values_ok(out, false), "copied values differ");
    hdal_buffer_release(out);
  }
  WALK_CHECK(r, values_ok(buf, false), "the source changed");
  hdal_buffer_release(buf);
  hdal_capsule_destroy(cap);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s)", deleted);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- the process table ---- */

static void process_export(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_context *ctx = context("cpu", 0, 0);
  WALK_CHECK(r, ctx, "no context");
  void *blob = &n;
  size_t len = 12345;
  walk_arm(n);
  hdal_error *err = hdal_context_export_devices(ctx, &blob, &len);
  walk_disarm();
  if (err) {
    if (!walk_accept(r, err)) return;
  } else {
    WALK_CHECK(r, blob && len > 0, "no blob");
    free(blob);
  }
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

static void process_add(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  hdal_context *ctx = context("cpu", 0, 2), *other = context("cpu", 1, 2);
  WALK_CHECK(r, ctx && other, "no context");
  void *blob = NULL;
  size_t len = 0;
  hdal_error *err = hdal_context_export_devices(other, &blob, &len);
  WALK_CHECK(r, err == NULL, "export: %s", hdal_error_message(err));
  hdal_context_destroy(other);
  static char before[16384], after[16384];
  walk_describe_context(ctx, before, sizeof before);
  size_t count = hdal_context_device_count(ctx);

  walk_arm(n);
  err = hdal_context_add_process(ctx, 1, blob, len);
  walk_disarm();
  if (err) {
    if (!walk_accept(r, err)) return;
    walk_describe_context(ctx, after, sizeof after);
    WALK_CHECK(r, !strcmp(before, after), "a failed add_process changed the context");
  } else {
    WALK_CHECK(r, hdal_context_device_count(ctx) == 2 * count, "%zu devices after adding %zu",
               hdal_context_device_count(ctx), count);
    WALK_CHECK(r, !hdal_device_is_addressable(hdal_context_device(ctx, count)), "a remote device is addressable");
  }
  free(blob);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

#define WALK_TEST(fn) \
  START_TEST(walk_##fn) { walk_run(#fn, fn); } \
  END_TEST

WALK_TEST(import_view)
WALK_TEST(import_view_versioned_read_only)
WALK_TEST(import_copy_strided)
WALK_TEST(import_copy_always_versioned)
WALK_TEST(import_copy_to_opencl)
WALK_TEST(export_legacy)
WALK_TEST(export_versioned)
WALK_TEST(export_versioned_copy)
WALK_TEST(export_opencl)
WALK_TEST(copy_to_device)
WALK_TEST(process_export)
WALK_TEST(process_add)
WALK_TEST(export_to_opencl_dl_device)
WALK_TEST(export_opencl_to_cpu_dl_device)
WALK_TEST(import_view_of_opencl)
WALK_TEST(import_opencl_onto_cpu)
WALK_TEST(copy_to_host_opencl)
WALK_TEST(buffer_data_subrange)
WALK_TEST(opencl_cross_context_copy)
WALK_TEST(import_copy_large)

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  /* The CPU backend alone, but for the OpenCL cases (which find nothing to walk without a device). */
  Suite *s = suite_create("faultinject-dlpack");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, walk_import_view);
  tcase_add_test(tc, walk_import_view_versioned_read_only);
  tcase_add_test(tc, walk_import_copy_strided);
  tcase_add_test(tc, walk_import_copy_always_versioned);
  tcase_add_test(tc, walk_export_legacy);
  tcase_add_test(tc, walk_export_versioned);
  tcase_add_test(tc, walk_export_versioned_copy);
  tcase_add_test(tc, walk_copy_to_device);
  tcase_add_test(tc, walk_process_export);
  tcase_add_test(tc, walk_process_add);
  tcase_add_test(tc, walk_import_copy_large);
  suite_add_tcase(s, tc);
  TCase *cl = tcase_create("opencl");
  tcase_set_timeout(cl, 1200);
  tcase_add_test(cl, walk_import_copy_to_opencl);
  tcase_add_test(cl, walk_export_opencl);
  tcase_add_test(cl, walk_export_to_opencl_dl_device);
  tcase_add_test(cl, walk_export_opencl_to_cpu_dl_device);
  tcase_add_test(cl, walk_import_view_of_opencl);
  tcase_add_test(cl, walk_import_opencl_onto_cpu);
  tcase_add_test(cl, walk_copy_to_host_opencl);
  tcase_add_test(cl, walk_buffer_data_subrange);
  tcase_add_test(cl, walk_opencl_cross_context_copy);
  suite_add_tcase(s, cl);
#ifdef HDAL_TEST_CUDA_WALKS
  /* CUDA on the suite's fake driver (tests/fakes/cuda/): the GPU walks; any
   * driver call failing may leave hdal unable to place memory. */
  static const gpu_walks cuda = {.placing = NULL};
  gpu_init(&gpu_face_cuda);
  TCase *tc_cuda = tcase_create("cuda");
  tcase_set_timeout(tc_cuda, 1200);
  gpu_walks_add(tc_cuda, &cuda);
  suite_add_tcase(s, tc_cuda);
#endif
  return test_run_suite(s);
}
