/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack import: hdal_buffer_from_dlpack (docs/dlpack.md, "Import").
 *
 * The checks run in the documented order (docs/dlpack.md); nothing is changed before the last
 * one passed.  Success, and only success, consumes the capsule (one
 * compare-and-swap, so a capsule raced by two threads is consumed once). */
#include "config.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "capsule.h"
#include "copy_path.h"
#include "device_table.h"
#include "layout_analyze.h"
#include "lifetime.h"

/* Checks 1 and 2, jaxlib's messages. */
static hdal_error *check_device(const hdal_context *ctx, const hdal_device *d) {
  switch (hdal__device_service(ctx, d)) {
  case HDAL__NOT_PJRT:
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "DLPack is supported for PjRt-compatible backends only.");
  case HDAL__NOT_ADDRESSABLE:
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "DLPack is only supported for devices addressable by the current process.");
  default:
    return NULL;
  }
}

static hdal_error *name_error(const char *name) {
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "DLPack tensor must be a capsule with name \"dltensor\", got \"%s\". Note that a DLPack "
                         "tensor may be consumed at most once.",
                         name ? name : "");
}

static void run_deleter(void *owner, bool versioned) {
  if (versioned) {
    DLManagedTensorVersioned *m = owner;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor *m = owner;
    if (m->deleter) m->deleter(m);
  }
}

/* Short arrays: two at a time (the compiler moves a pair in one instruction)
 * beats two memcpy calls. */
static inline void copy_dims(int64_t *restrict shape, int64_t *restrict strides, const int64_t *restrict tsh,
                             const int64_t *restrict tst, int32_t nd) {
  int32_t i = 0;
  for (; i + 1 < nd; i += 2) {
    shape[i] = tsh[i], shape[i + 1] = tsh[i + 1];
    strides[i] = tst[i], strides[i + 1] = tst[i + 1];
  }
  if (i < nd) shape[i] = tsh[i], strides[i] = tst[i];
}

/* One import, stage by stage (docs/dlpack.md, "Import"): validate (checks
 * 4-7), route (the target device, checks 1-2 for a routed one, fork()),
 * plan (view or copy, and the HDAL_COPY_NEVER refusals), then build the view
 * or the copy.  The stages are called once each: the compiler inlines them. */
typedef struct {
  hdal_context *ctx;
  hdal_device *device; /* the target; NULL until routed */
  hdal_device *source; /* the device that owns the tensor's memory, once routed (it is then the target) */
  hdal_copy_mode mode;
  const intptr_t *stream;
  void *owner; /* the managed tensor */
  bool versioned;
  DLTensor *t;
  uint64_t flags;
  unsigned bits, src_bits; /* per element, as hdal keeps it and as the tensor holds it */
  bool padded;
  hdal__layout lay;
} import_job;

/* Checks 4-7.  *spent: the capsule stays consumed though an error is returned (check 4). */
static hdal_error *validate(import_job *j, const char *name, bool *spent) {
  hdal_error *e;
  if (!j->owner) return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack capsule \"%s\" holds a NULL tensor", name);
  if (j->versioned) {
    DLManagedTensorVersioned *m = j->owner;
    /* 4: a major version we do not know: its layout past `version` is unknown,
     * so the spec has the consumer call the deleter right away. */
    if (m->version.major != 1) {
      e = hdal__error_new(HDAL_INVALID_ARGUMENT,
                          "DLPack tensor version %" PRIu32 ".%" PRIu32 " is not supported: hdal consumes major version 1",
                          m->version.major, m->version.minor);
      *spent = true;
      run_deleter(m, true);
      return e;
    }
    j->t = &m->dl_tensor;
    j->flags = m->flags;
  } else {
    j->t = &((DLManagedTensor *)j->owner)->dl_tensor;
  }
  DLTensor *t = j->t;
  if (t->ndim < 0) /* 5 */
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "Number of dimensions in DLManagedTensor must be nonnegative, got %" PRId32,
                           t->ndim);
  DLDataType dt = t->dtype; /* 6 */
  bool common = dt.lanes == 1 && dt.code == kDLFloat && (dt.bits == 32 || dt.bits == 64); /* skip the table */
  if (!common && (e = hdal__dtype_check(dt))) return e;
  j->bits = hdal__dtype_bits(dt);
  j->padded = j->bits < 8 && (j->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  j->src_bits = j->padded ? 8 : j->bits;
  return hdal__layout_analyze(t, j->src_bits, &j->lay); /* 7 */
}

/* The target: the tensor is valid, so a backend's route op may look at its memory. */
static hdal_error *route(import_job *j) {
  hdal_error *e;
  if (!j->device) {
    if ((e = hdal__route(j->ctx, j->t, &j->device))) return e;
    j->source = j->device;
    if ((e = check_device(j->ctx, j->device))) return e;
  }
  return hdal__op_usable(j->device); /* before plan(): a fork() child refuses rather than plans a copy */
}

/* Why the tensor cannot be a view, in the documented order, when HDAL_COPY_NEVER forbids the copy. */
static hdal_error *copy_refusal(const import_job *j, bool layout_ok, bool reachable) {
  const DLTensor *t = j->t;
  hdal_device *d = j->device;
  if (!j->lay.compact) return hdal__layout_stride_error(t);
  if (!layout_ok)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "Can't create a view of a %s sub-byte DLPack tensor: hdal keeps 4-bit elements packed in "
                           "row-major order, and copying is disabled (HDAL_COPY_NEVER)",
                           j->padded ? "padded" : "non-row-major");
  if (!reachable)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "Can't create a view of a DLPack tensor on (%s, %" PRId32 ") on hdal device %d (%s, %s): "
                           "that device cannot address the tensor's memory, and copying is disabled (HDAL_COPY_NEVER)",
                           hdal__dl_type_name(t->device.device_type), t->device.device_id, d->id, d->platform, d->kind);
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "Can't create a view of buffer with unaligned data, ptr: %#" PRIxPTR
                         " is not aligned to %u bytes. ",
                         (uintptr_t)t->data + (uintptr_t)t->byte_offset, j->bits >= 8 ? j->bits / 8 : 1);
}

/* View or copy; the HDAL_COPY_NEVER refusals (HDAL_CAUSE_COPY_REFUSED). */
static hdal_error *plan(import_job *j, bool *view) {
  const DLTensor *t = j->t;
  hdal_device *d = j->device;
  bool reachable = hdal__op_can_alias(d, t);
  /* hdal keeps sub-byte elements packed and row-major. */
  bool layout_ok = j->lay.compact && (j->bits >= 8 || (j->lay.row_major && !j->padded));
  *view = j->mode != HDAL_COPY_ALWAYS && reachable && layout_ok && j->lay.aligned;
  if (j->mode != HDAL_COPY_NEVER || *view) return NULL;
  return hdal__error_with_cause(copy_refusal(j, layout_ok, reachable), HDAL_CAUSE_COPY_REFUSED);
}

/* A buffer aliasing the tensor's memory; it owns the tensor from now on. */
static hdal_error *build_view(import_job *j, hdal_buffer **out) {
  const DLTensor *t = j->t;
  hdal_device *d = j->device;
  hdal_buffer *b = hdal__buffer_alloc(d, t->ndim);
  if (!b) return hdal__error_oom();
  b->dtype = t->dtype;
  int64_t *shape = hdal__buffer_shape(b), *strides = hdal__buffer_strides(b);
  if (t->strides && j->lay.nelems) {
    copy_dims(shape, strides, t->shape, t->strides, t->ndim);
  } else {
    for (int32_t i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    hdal__row_major_strides(t->ndim, shape, strides);
  }
  b->is_view = true;
  b->read_only = (j->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  b->handle = t->data;
  b->offset = t->byte_offset;
  b->nbytes = j->lay.nbytes;
  if (t->data && hdal__op_retains(d)) {
    hdal_error *e = hdal__op_retain(d, t->data);
    if (e) {
      hdal__buffer_discard(b);
      return e;
    }
    b->owns_handle = HDAL__HANDLE_RETAINED;
  }
  b->owner = j->owner;
  b->owner_kind = j->versioned ? HDAL__OWNER_VERSIONED : HDAL__OWNER_LEGACY;
  *out = b;
  return NULL;
}

/* A compact copy on the target; the tensor's deleter runs once it is complete. */
static hdal_error *build_copy(import_job *j, hdal_buffer **out) {
  const DLTensor *t = j->t;
  hdal_error *e;
  hdal__source src = {
      .ndim = t->ndim,
      .shape = t->shape,
      .strides = t->strides,
      .bits = j->bits,
      .src_bits = j->src_bits,
      .lo_byte = (int64_t)j->lay.lo_byte,
      .span = j->lay.span,
      .row_major = j->lay.row_major,
  };
  if (j->lay.nelems) {
    /* Host memory is read through host memory's operations (src.dev NULL); a
     * device's through its own, routed once (by route() when it chose the target). */
    if (!hdal__host_readable_type(t->device.device_type)) {
      if (j->source) src.dev = j->source;
      else if ((e = hdal__route(j->ctx, t, &src.dev))) return e;
    }
    src.handle = t->data;
    src.offset = t->byte_offset;
  }
  hdal_buffer *b;
  if ((e = hdal__buffer_new_compact(j->device, t->ndim, t->shape, t->dtype, &b))) return e;
  if ((e = hdal__materialize(&src, b, j->stream))) {
    hdal__buffer_discard(b);
    return e;
  }
  run_deleter(j->owner, j->versioned); /* the copy is complete: the source can go */
  *out = b;
  return NULL;
}

/* Everything after check 3, for a capsule the caller has claimed. */
static hdal_error *import_claimed(import_job *j, const char *name, hdal_buffer **out, bool *spent) {
  hdal_error *e;
  bool view;
  if ((e = validate(j, name, spent)) || (e = route(j)) || (e = plan(j, &view))) return e;
  if (j->stream && (e = hdal__op_stream_wait(j->device, *j->stream))) return e;
  return view ? build_view(j, out) : build_copy(j, out);
}

HDAL_API hdal_error *hdal_buffer_from_dlpack(hdal_context *ctx, hdal_capsule *capsule, hdal_device *device,
                                             const hdal_import_options *opts, hdal_buffer **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_from_dlpack: out is NULL");
  *out = NULL;
  if (!ctx || !capsule)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_from_dlpack: %s is NULL", ctx ? "capsule" : "context");
  hdal_copy_mode mode = HDAL_COPY_IF_NEEDED;
  intptr_t stream_value = 0;
  const intptr_t *stream = NULL;
  if (opts) {
    if (!HDAL__HAS_FIELD(opts, hdal_import_options, copy))
      return hdal__struct_size_error("hdal_import_options", opts->struct_size);
    mode = opts->copy;
    if (mode != HDAL_COPY_IF_NEEDED && mode != HDAL_COPY_ALWAYS && mode != HDAL_COPY_NEVER)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_import_options: invalid copy mode %d", (int)mode);
    if (HDAL__HAS_FIELD(opts, hdal_import_options, stream) && opts->has_stream) {
      stream_value = opts->stream;
      stream = &stream_value;
    }
  }
  hdal_error *e;
  if (device) {
    if (device->ctx != ctx)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_from_dlpack: device %d belongs to another context",
                             device->id);
    if ((e = check_device(ctx, device))) return e; /* checks 1, 2 */
  }

  /* 3: the capsule's name. */
  const char *name = hdal__capsule_name(capsule);
  bool versioned = name == hdal__name_versioned;
  if (name != hdal__name_legacy && !versioned) return name_error(name);
  /* Claim the capsule before reading its tensor: a thread that won a race for
   * it may already have released its buffer and so freed the tensor.  Every
   * failure below gives the name back (check 4 aside), so on failure the
   * capsule is as it was; a racing importer meanwhile sees it consumed. */
  if (!hdal__capsule_consume(capsule, name)) return name_error(hdal__capsule_name(capsule));
  bool spent = false;
  import_job job; /* field by field: the stages set the rest (no zeroing on the hot path) */
  job.ctx = ctx, job.device = device, job.source = NULL, job.mode = mode, job.stream = stream;
  job.owner = capsule->pointer, job.versioned = versioned, job.flags = 0;
  e = import_claimed(&job, name, out, &spent);
  if (e && !spent) hdal__capsule_restore(capsule, name);
  return e;
}
