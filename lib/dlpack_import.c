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
#include "buffer.h"
#include "layout_analyze.h"
#include "lifetime.h"

static const char *dl_type_name(int32_t t) {
  static const char *const names[] = {
      [kDLCPU] = "kDLCPU",         [kDLCUDA] = "kDLCUDA",         [kDLCUDAHost] = "kDLCUDAHost",
      [kDLOpenCL] = "kDLOpenCL",   [kDLVulkan] = "kDLVulkan",     [kDLMetal] = "kDLMetal",
      [kDLVPI] = "kDLVPI",         [kDLROCM] = "kDLROCM",         [kDLROCMHost] = "kDLROCMHost",
      [kDLExtDev] = "kDLExtDev",   [kDLCUDAManaged] = "kDLCUDAManaged", [kDLOneAPI] = "kDLOneAPI",
      [kDLWebGPU] = "kDLWebGPU",   [kDLHexagon] = "kDLHexagon",   [kDLMAIA] = "kDLMAIA",
  };
  if (t >= 0 && (size_t)t < sizeof names / sizeof names[0] && names[t]) return names[t];
  return "unknown";
}

hdal_error *hdal__route(hdal_context *ctx, const DLTensor *t, hdal_device **out) {
  int32_t ty = t->device.device_type, id = t->device.device_id;
  hdal_error *e;
  hdal__backend *b = ty >= 0 && ty < 64 ? ctx->owner_of_dl_type[ty] : NULL;
  if (!b && hdal__host_readable_type(ty)) b = ctx->owner_of_dl_type[kDLCPU]; /* pinned, managed: host memory */
  if (!b)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "No hdal backend serves DLPack device type %s (%" PRId32 "), device id %" PRId32,
                           dl_type_name(ty), ty, id);
  const hdal_backend_buffer_ops *ops = b->desc->buffer_ops;
  size_t idx = 0;
  if (b->ndevices && (e = hdal__fork_refuse(b->devices[0]))) return e; /* before route() calls the runtime */
  if (ops->route) {
    e = ops->route(b->state, t, &idx);
    if (e) return e;
    if (idx < b->ndevices) {
      *out = b->devices[idx];
      return NULL;
    }
  } else {
    for (size_t i = 0; i < b->ndevices; i++)
      if (b->devices[i]->dl.device_id == id) {
        *out = b->devices[i];
        return NULL;
      }
  }
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "DLPack device (%s, %" PRId32 ") is out of range: backend '%s' has %zu device%s", dl_type_name(ty),
                         id, b->name, b->ndevices, b->ndevices == 1 ? "" : "s");
}

/* Checks 1 and 2, jaxlib's messages. */
static hdal_error *check_device(const hdal_context *ctx, const hdal_device *d) {
  if (d->runtime_class != HDAL_RUNTIME_PJRT)
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "DLPack is supported for PjRt-compatible backends only.");
  if (d->process_index != ctx->process_index || !hdal__ops(d)) /* another process's: no operations here */
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "DLPack is only supported for devices addressable by the current process.");
  return NULL;
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

/* Checks 4-7, placement and the buffer, for a capsule already claimed by the
 * caller (renamed "used_..."); *spent tells that it must stay consumed even
 * though an error is returned (check 4). */
static hdal_error *import_claimed(hdal_context *ctx, hdal_capsule *capsule, hdal_device *device, hdal_copy_mode mode,
                                  const intptr_t *stream, const char *name, bool versioned, hdal_buffer **out,
                                  bool *spent) {
  hdal_error *e;
  void *owner = capsule->pointer;
  if (!owner) return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack capsule \"%s\" holds a NULL tensor", name);
  DLTensor *t;
  uint64_t flags = 0;
  if (versioned) {
    DLManagedTensorVersioned *m = owner;
    /* 4: a major version we do not know: its layout past `version` is unknown,
     * so the spec has the consumer call the deleter right away. */
    if (m->version.major != 1) {
      e = hdal__error_new(HDAL_INVALID_ARGUMENT,
                          "DLPack tensor version %" PRIu32 ".%" PRIu32 " is not supported: hdal consumes major version 1",
                          m->version.major, m->version.minor);
      *spent = true; /* the capsule stays consumed */
      run_deleter(m, true);
      return e;
    }
    t = &m->dl_tensor;
    flags = m->flags;
  } else {
    t = &((DLManagedTensor *)owner)->dl_tensor;
  }

  /* 5, 6, 7 */
  if (t->ndim < 0)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "Number of dimensions in DLManagedTensor must be nonnegative, got %" PRId32,
                           t->ndim);
  DLDataType dt = t->dtype;
  bool common = dt.lanes == 1 && dt.code == kDLFloat && (dt.bits == 32 || dt.bits == 64); /* skip the table */
  if (!common && (e = hdal__dtype_check(dt))) return e;
  unsigned bits = hdal__dtype_bits(t->dtype);
  bool padded = bits < 8 && (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  unsigned src_bits = padded ? 8 : bits;
  hdal__layout lay = {0}; /* set on every path of the analysis; the compiler cannot tell */
  if ((e = hdal__layout_analyze(t, src_bits, &lay))) return e;

  /* Routing: the tensor is valid, so a backend's route op may look at its memory. */
  if (!device) {
    if ((e = hdal__route(ctx, t, &device))) return e;
    if ((e = check_device(ctx, device))) return e;
  }

  if ((e = hdal__fork_refuse(device))) return e; /* before can_alias() calls the runtime */
  const hdal_backend_buffer_ops *ops = hdal__ops(device);
  void *state = hdal__state(device);
  bool reachable = ops->can_alias && ops->can_alias(state, device->data, t);
  /* hdal keeps sub-byte elements packed and row-major. */
  bool layout_ok = lay.compact && (bits >= 8 || (lay.row_major && !padded));
  bool view = mode != HDAL_COPY_ALWAYS && reachable && layout_ok && lay.aligned;
  if (mode == HDAL_COPY_NEVER && !view) {
    if (!lay.compact) return hdal__layout_stride_error(t);
    if (!layout_ok)
      return hdal__error_new(HDAL_INVALID_ARGUMENT,
                             "Can't create a view of a %s sub-byte DLPack tensor: hdal keeps 4-bit elements packed in "
                             "row-major order, and copying is disabled (HDAL_COPY_NEVER)",
                             padded ? "padded" : "non-row-major");
    if (!reachable)
      return hdal__error_new(HDAL_INVALID_ARGUMENT,
                             "Can't create a view of a DLPack tensor on (%s, %" PRId32 ") on hdal device %d (%s, %s): "
                             "that device cannot address the tensor's memory, and copying is disabled (HDAL_COPY_NEVER)",
                             dl_type_name(t->device.device_type), t->device.device_id, device->id, device->platform,
                             device->kind);
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "Can't create a view of buffer with unaligned data, ptr: %#" PRIxPTR
                           " is not aligned to %u bytes. ",
                           (uintptr_t)t->data + (uintptr_t)t->byte_offset, bits >= 8 ? bits / 8 : 1);
  }
  if (stream && ops->stream_wait && (e = ops->stream_wait(state, device->data, *stream))) return e;

  hdal_buffer *b;
  if (view) {
    if (!(b = hdal__buffer_alloc(device, t->ndim))) return hdal__error_oom();
    b->dtype = t->dtype;
    int64_t *shape = hdal__buffer_shape(b), *strides = hdal__buffer_strides(b);
    if (t->strides && lay.nelems)
      copy_dims(shape, strides, t->shape, t->strides, t->ndim);
    else {
      for (int32_t i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
      hdal__row_major_strides(t->ndim, shape, strides);
    }
    b->is_view = true;
    b->read_only = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    b->handle = t->data;
    b->offset = t->byte_offset;
    b->nbytes = lay.nbytes;
    if (t->data && ops->retain) {
      if ((e = ops->retain(state, device->data, t->data))) {
        hdal__buffer_discard(b);
        return e;
      }
      b->owns_handle = HDAL__HANDLE_RETAINED;
    }
    b->owner = owner;
    b->owner_kind = versioned ? HDAL__OWNER_VERSIONED : HDAL__OWNER_LEGACY;
    *out = b;
    return NULL;
  }

  /* Copy: compact the elements on the host, then place them on the target. */
  hdal__source src = {
      .ndim = t->ndim,
      .shape = t->shape,
      .strides = t->strides,
      .bits = bits,
      .src_bits = src_bits,
      .lo_byte = (int64_t)lay.lo_byte,
      .span = lay.span,
      .row_major = lay.row_major,
  };
  if (lay.nelems) {
    /* Host memory is read through host memory's operations (src.dev NULL). */
    if (!hdal__host_readable_type(t->device.device_type) && (e = hdal__route(ctx, t, &src.dev))) return e;
    src.handle = t->data;
    src.offset = t->byte_offset;
  }
  if ((e = hdal__buffer_new_compact(device, t->ndim, t->shape, t->dtype, &b))) return e;
  if ((e = hdal__materialize(&src, b, stream))) {
    hdal__buffer_discard(b);
    return e;
  }
  run_deleter(owner, versioned); /* the copy is complete: the source can go */
  *out = b;
  return NULL;
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
    if (opts->struct_size < offsetof(hdal_import_options, copy) + sizeof opts->copy)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_import_options: struct_size %zu is too small", opts->struct_size);
    mode = opts->copy;
    if (mode != HDAL_COPY_IF_NEEDED && mode != HDAL_COPY_ALWAYS && mode != HDAL_COPY_NEVER)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_import_options: invalid copy mode %d", (int)mode);
    if (opts->struct_size >= offsetof(hdal_import_options, stream) + sizeof opts->stream && opts->has_stream) {
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
  e = import_claimed(ctx, capsule, device, mode, stream, name, versioned, out, &spent);
  if (e && !spent) hdal__capsule_restore(capsule, name);
  return e;
}
