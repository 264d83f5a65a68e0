/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack export: hdal_buffer_to_dlpack (docs/dlpack.md, "Buffers" and "Export").
 *
 * The exported tensor is one allocation (managed tensor, shape and strides)
 * holding a reference on the buffer; its deleter drops that reference. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "capsule.h"
#include "copy_path.h"
#include "device_table.h"

typedef struct {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
  hdal_buffer *buffer; /* a reference: it owns the handle `data` names (hdal__buffer_first) */
  int64_t dims[];
} export_block;

static void export_free(export_block *x) {
  hdal_buffer *b = x->buffer;
  free(x);
  hdal_buffer_release(b);
}

static void legacy_deleter(DLManagedTensor *m) {
  if (m) export_free((export_block *)m->manager_ctx);
}

static void versioned_deleter(DLManagedTensorVersioned *m) {
  if (m) export_free((export_block *)m->manager_ctx);
}

static bool same_dl(DLDevice a, DLDevice b) { return a.device_type == b.device_type && a.device_id == b.device_id; }

/* The buffer the tensor shows: `buf` itself (a reference more), or a fresh
 * copy on `target` that the export owns. */
static hdal_error *export_source(hdal_buffer *buf, hdal_device *target, bool copy, const intptr_t *stream,
                                 hdal_buffer **out) {
  if (!copy) {
    hdal_buffer_retain(buf);
    *out = buf;
    return NULL;
  }
  hdal_buffer *b;
  hdal_error *e;
  if ((e = hdal__check_target(target, buf->device->ctx, "hdal_buffer_to_dlpack"))) return e;
  if ((e = hdal__buffer_new_compact(target, buf->ndim, hdal__buffer_shape(buf), buf->dtype, &b))) return e;
  hdal__source src;
  hdal__source_of_buffer(buf, &src);
  /* The stream is the consumer's, on the target: the target waited for it; a
   * source of another backend must not be handed it (a CPU consumer's
   * "stream" is no cl_command_queue). */
  if ((e = hdal__materialize(&src, b, buf->device->backend == target->backend ? stream : NULL))) {
    hdal__buffer_discard(b);
    return e;
  }
  *out = b;
  return NULL;
}

/* The managed tensor showing `b` (whose reference it takes over): legacy
 * for max_version 0, versioned otherwise. */
static hdal_error *export_tensor(hdal_buffer *b, DLPackVersion maxv, bool copied, void **out) {
  export_block *x = malloc(sizeof *x + 2 * (size_t)b->ndim * sizeof(int64_t));
  if (!x) {
    hdal_buffer_release(b);
    return hdal__error_oom();
  }
  memset(&x->m, 0, sizeof x->m);
  x->buffer = b;
  void *data; /* byte_offset stays 0: the handle that starts at the first element */
  hdal_error *e = hdal__buffer_first(b, &data);
  if (e) {
    free(x);
    hdal_buffer_release(b);
    return e;
  }
  if (b->ndim) memcpy(x->dims, hdal__buffer_shape(b), 2 * (size_t)b->ndim * sizeof(int64_t));
  DLTensor tensor = {
      .data = data,
      .device = b->device->dl,
      .ndim = b->ndim,
      .dtype = b->dtype,
      .shape = b->ndim ? x->dims : NULL,
      .strides = b->ndim ? x->dims + b->ndim : NULL,
      .byte_offset = 0,
  };
  if (maxv.major == 0) {
    x->m.legacy.dl_tensor = tensor;
    x->m.legacy.manager_ctx = x;
    x->m.legacy.deleter = legacy_deleter;
  } else {
    x->m.versioned.version.major = HDAL_DLPACK_MAJOR;
    x->m.versioned.version.minor = maxv.major == 1 && maxv.minor < HDAL_DLPACK_MINOR ? maxv.minor : HDAL_DLPACK_MINOR;
    x->m.versioned.dl_tensor = tensor;
    x->m.versioned.manager_ctx = x;
    x->m.versioned.deleter = versioned_deleter;
    x->m.versioned.flags = (b->read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) | (copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
  }
  *out = &x->m; /* both structs start the block */
  return NULL;
}

/* hdal_buffer_to_dlpack's work, the tensor unwrapped: `who` names the caller in messages. */
static hdal_error *export(hdal_buffer *buf, const hdal_export_options *opts, void **out, const char *who) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: out is NULL", who);
  *out = NULL;
  if (!buf) return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: buffer is NULL", who);
  hdal_device *dev = buf->device;
  hdal_context *ctx = dev->ctx;
  if (hdal__device_service(ctx, dev) != HDAL__SERVED) /* a buffer's device is this process's */
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "This operation is implemented for a PjRt-compatible backend only.");
  DLPackVersion maxv = {0, 0};
  hdal_copy_mode mode = HDAL_COPY_IF_NEEDED;
  const intptr_t *stream = NULL;
  intptr_t stream_value = 0;
  hdal_device *target = dev;
  if (opts) {
    if (!HDAL__HAS_FIELD(opts, hdal_export_options, max_version))
      return hdal__struct_size_error("hdal_export_options", opts->struct_size);
    maxv = opts->max_version;
    if (HDAL__HAS_FIELD(opts, hdal_export_options, copy)) mode = opts->copy;
    if (mode != HDAL_COPY_IF_NEEDED && mode != HDAL_COPY_ALWAYS && mode != HDAL_COPY_NEVER)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_export_options: invalid copy mode %d", (int)mode);
    if (HDAL__HAS_FIELD(opts, hdal_export_options, dl_device) && opts->has_dl_device && !same_dl(opts->dl_device, dev->dl)) {
      hdal_error *e = hdal_context_device_for_dlpack(ctx, opts->dl_device, &target);
      if (e) return e;
    }
    if (HDAL__HAS_FIELD(opts, hdal_export_options, stream) && opts->has_stream) {
      stream_value = opts->stream;
      stream = &stream_value;
    }
  }
  bool legacy = maxv.major == 0;
  if (target != dev && mode == HDAL_COPY_NEVER)
    return hdal__error_with_cause(
        hdal__error_new(HDAL_INVALID_ARGUMENT,
                        "Can't export buffer of hdal device %d (%s) to DLPack device (%d, %d) (hdal device %d) "
                        "without a copy, and copying is disabled (HDAL_COPY_NEVER)",
                        dev->id, dev->platform, target->dl.device_type, target->dl.device_id, target->id),
        HDAL_CAUSE_COPY_REFUSED);
  if (buf->read_only && legacy && mode != HDAL_COPY_ALWAYS && target == dev)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "Can't export a read-only buffer as a legacy DLPack tensor (\"dltensor\" cannot say "
                           "read-only): ask for max_version 1.0 or later, or copy with HDAL_COPY_ALWAYS");
  hdal_error *e;
  if ((e = hdal__op_usable(dev)) || (target != dev && (e = hdal__op_usable(target)))) return e;
  if (stream && (e = hdal__op_stream_wait(target, *stream))) return e;
  bool copied = mode == HDAL_COPY_ALWAYS || target != dev;
  hdal_buffer *b;
  if ((e = export_source(buf, target, copied, stream, &b))) return e;
  return export_tensor(b, maxv, copied, out);
}

HDAL_API hdal_error *hdal_buffer_to_dlpack_tensor(hdal_buffer *buf, const hdal_export_options *opts, void **out) {
  return export(buf, opts, out, "hdal_buffer_to_dlpack_tensor");
}

HDAL_API hdal_error *hdal_buffer_to_dlpack(hdal_buffer *buf, const hdal_export_options *opts, hdal_capsule **out) {
  if (out) *out = NULL;
  void *t;
  hdal_error *e = export(buf, opts, out ? &t : NULL, "hdal_buffer_to_dlpack");
  if (e) return e;
  bool legacy = !opts || opts->max_version.major == 0;
  hdal_capsule *c = legacy ? hdal_capsule_wrap(t) : hdal_capsule_wrap_versioned(t);
  if (!c) {
    if (legacy) legacy_deleter(t);
    else versioned_deleter(t);
    return hdal__error_oom();
  }
  *out = c;
  return NULL;
}
