/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — buffers: accessors, references, copies (docs/dlpack.md, "Buffers" and "Export"). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "device_table.h"
#include "device_ops.h"
#include "dtype.h"
#include "layout_analyze.h"
#include "lifetime.h"
#include "pool.h"

hdal_error *hdal__buffer_new_compact(hdal_device *dev, int32_t ndim, const int64_t *shape, DLDataType dtype,
                                     hdal_buffer **out) {
  hdal_buffer *b = hdal__buffer_alloc(dev, ndim);
  if (!b) return hdal__error_oom();
  b->dtype = dtype;
  uint64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= (uint64_t)shape[i];
  b->nbytes = hdal__bytes_of(n, hdal__dtype_bits(dtype));
  if (ndim) memcpy(hdal__buffer_shape(b), shape, (size_t)ndim * sizeof *shape);
  hdal__row_major_strides(ndim, shape, hdal__buffer_strides(b));
  *out = b;
  return NULL;
}

HDAL_API hdal_error *hdal_buffer_allocate(hdal_device *dev, int32_t ndim, const int64_t *shape, DLDataType dtype,
                                          hdal_buffer **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_allocate: out is NULL");
  *out = NULL;
  if (!dev) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_allocate: device is NULL");
  hdal_error *e = hdal__check_target(dev, dev->ctx, "hdal_buffer_allocate");
  if (e) return e;
  if (ndim < 0)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_allocate: ndim must be nonnegative, got %d", (int)ndim);
  if ((e = hdal__dtype_check(dtype))) return e;
  /* The import's checks of a shape (stage 1 of check 7, docs/dlpack.md): a compact tensor has no more. */
  DLTensor t = {.device = dev->dl, .ndim = ndim, .dtype = dtype, .shape = (int64_t *)shape};
  hdal__layout lay;
  bool row_major;
  if ((e = hdal__layout_count(&t, shape, NULL, hdal__dtype_bits(dtype), &lay, &row_major))) return e;
  hdal_buffer *b;
  if ((e = hdal__buffer_new_compact(dev, ndim, shape, dtype, &b))) return e;
  if (b->nbytes && ((e = hdal__op_usable(dev)) || (e = hdal__buffer_pool_storage(b)))) {
    hdal__buffer_discard(b);
    return e;
  }
  *out = b;
  return NULL;
}

hdal_error *hdal__buffer_pool_storage(hdal_buffer *b) {
  void *h;
  hdal_error *e = hdal__pool_alloc(b->device, b->nbytes, &h);
  if (!e) {
    b->handle = h;
    b->owns_handle = HDAL__HANDLE_POOLED;
  }
  return e;
}

/* Gives back everything but the foreign owner; not called for a plain view. */
static void buffer_free_storage(hdal_buffer *b) {
  void *sub = atomic_load_explicit(&b->sub, memory_order_acquire);
  if (hdal__op_forked(b->device)) return; /* a fork() child leaves the runtime and its pool alone */
  if (sub) hdal__op_release(b->device, sub);
  if (b->owns_handle == HDAL__HANDLE_POOLED) /* counted by the pool even where the backend cannot release */
    hdal__pool_free(b->device, b->handle, b->nbytes);
  else if (b->owns_handle && b->handle)
    hdal__op_release(b->device, b->handle);
}

/* A plain view (the common case) holds nothing of its own. */
static inline bool holds_storage(hdal_buffer *b) {
  /* One test of both (no branch between them): the acquire load of sub is a plain load on x86. */
  return (b->owns_handle | (uintptr_t)atomic_load_explicit(&b->sub, memory_order_acquire)) != 0;
}

void hdal__buffer_discard(hdal_buffer *b) {
  hdal_context *ctx = b->device->ctx;
  if (holds_storage(b)) buffer_free_storage(b);
  hdal__object_give(ctx, b);
}

HDAL_API void hdal_buffer_retain(hdal_buffer *b) {
  if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

HDAL_API void hdal_buffer_release(hdal_buffer *b) {
  /* The last reference, read as 1: no other holder is left to add one (hdal_buffer_retain
   * needs a reference), so the buffer goes without the atomic subtraction, which costs more
   * than the rest of a view's release.  The acquire pairs with the other holders' releases. */
  if (!b) return;
  if (atomic_load_explicit(&b->refs, memory_order_acquire) != 1 &&
      atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
    return;
  hdal_context *ctx = b->device->ctx;
  if (__builtin_expect(holds_storage(b), 0)) buffer_free_storage(b); /* a plain view is the common case */
  if (b->owner_kind == HDAL__OWNER_LEGACY) {
    DLManagedTensor *m = b->owner;
    if (m->deleter) m->deleter(m);
  } else if (b->owner_kind == HDAL__OWNER_VERSIONED) {
    DLManagedTensorVersioned *m = b->owner;
    if (m->deleter) m->deleter(m);
  }
  hdal__object_give(ctx, b);
}

HDAL_API hdal_device *hdal_buffer_device(const hdal_buffer *b) { return b->device; }
HDAL_API int32_t hdal_buffer_ndim(const hdal_buffer *b) { return b->ndim; }
HDAL_API const int64_t *hdal_buffer_shape(const hdal_buffer *b) { return b->ndim ? b->dims : NULL; }
HDAL_API const int64_t *hdal_buffer_strides(const hdal_buffer *b) { return b->ndim ? b->dims + b->ndim : NULL; }
HDAL_API DLDataType hdal_buffer_dtype(const hdal_buffer *b) { return b->dtype; }
HDAL_API bool hdal_buffer_is_view(const hdal_buffer *b) { return b->is_view; }
HDAL_API bool hdal_buffer_is_read_only(const hdal_buffer *b) { return b->read_only; }

hdal_error *hdal__buffer_first(hdal_buffer *b, void **data) {
  *data = b->handle;
  if (!b->handle || b->offset == 0) return NULL;
  /* A handle of its own that starts at the first element (an OpenCL sub-buffer),
   * made once, owned by the buffer and released when it dies: an export holds a
   * reference on its buffer, so the handle outlives the tensor it is in. */
  void *sub = atomic_load_explicit(&b->sub, memory_order_acquire);
  if (sub) return *data = sub, NULL;
  hdal_error *e = hdal__op_subrange(b->device, b->handle, b->offset, b->nbytes, &sub);
  if (e) return e; /* a fork() child too: no runtime to cut a sub-buffer */
  if (!sub) return *data = (char *)b->handle + b->offset, NULL; /* host and device pointers are addresses */
  void *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&b->sub, &expected, sub, memory_order_acq_rel, memory_order_acquire)) {
    hdal__op_release(b->device, sub); /* another thread made it first */
    sub = expected;
  }
  *data = sub;
  return NULL;
}

HDAL_API void *hdal_buffer_data(const hdal_buffer *cb) {
  void *data;
  hdal_error *e = hdal__buffer_first((hdal_buffer *)cb, &data);
  if (!e) return data;
  hdal_error_destroy(e);
  return NULL;
}

/* ---- bytes in and out (hdal_buffer_write, hdal_buffer_read) ---- */

/* Whether the buffer's bytes lie in memory as its compact row-major copy
 * would: every buffer hdal allocated, and a view whose strides are row-major
 * (sizes 1 and 0 tell nothing). */
static bool bytes_in_order(const hdal_buffer *b) {
  if (!b->is_view || b->nbytes == 0) return true;
  const int64_t *shape = b->dims, *strides = b->dims + b->ndim;
  int64_t expected = 1;
  for (int32_t i = b->ndim - 1; i >= 0; i--) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

/* The checks hdal_buffer_write and hdal_buffer_read share, in this order. */
static hdal_error *range_check(const char *who, const hdal_buffer *b, size_t offset, const void *host, size_t size,
                               const char *host_name) {
  if (!b) return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: buffer is NULL", who);
  if (!host && size) return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: %s is NULL with size %zu", who, host_name, size);
  if (offset > b->nbytes || size > b->nbytes - offset)
    return hdal__error_new(HDAL_OUT_OF_RANGE, "%s: %zu bytes at offset %zu are past the end of the buffer (%llu bytes)",
                           who, size, offset, (unsigned long long)b->nbytes);
  if (!bytes_in_order(b))
    return hdal__error_new(HDAL_UNIMPLEMENTED,
                           "%s: the buffer is a view whose elements are not in row-major order in memory, so a byte "
                           "range of it is no range of its memory; hdal_buffer_copy_to_host() reads it whole, and "
                           "hdal_buffer_copy_to_device() makes a row-major copy",
                           who);
  return NULL;
}

HDAL_API hdal_error *hdal_buffer_write(hdal_buffer *b, size_t offset, const void *src, size_t size) {
  hdal_error *e = range_check("hdal_buffer_write", b, offset, src, size, "src");
  if (e) return e;
  if (b->read_only)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "hdal_buffer_write: the buffer is read-only (a view of a tensor flagged "
                           "DLPACK_FLAG_BITMASK_READ_ONLY)");
  return size ? hdal__op_write(b->device, b->handle, b->offset + offset, src, size, NULL) : NULL;
}

HDAL_API hdal_error *hdal_buffer_read(const hdal_buffer *b, size_t offset, void *dst, size_t size) {
  hdal_error *e = range_check("hdal_buffer_read", b, offset, dst, size, "dst");
  if (e) return e;
  return size ? hdal__op_read(b->device, b->handle, b->offset + offset, dst, size, NULL) : NULL;
}
