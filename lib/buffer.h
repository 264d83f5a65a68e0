/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the buffer object (buffer.c; its allocation in lifetime.h).
 * Element types are dtype.h's, the copy path copy_path.h's, capsules
 * capsule.h's.  One allocation per buffer: shape and strides live inline,
 * so a zero-copy import costs one malloc, or none when the thread has a
 * released object at hand (lifetime.c). */
#ifndef HDAL_BUFFER_H
#define HDAL_BUFFER_H

#include "device_ops.h"
#include "dtype.h"

/* What the buffer must give back when its last reference goes. */
enum {
  HDAL__OWNER_NONE = 0,      /* nothing foreign */
  HDAL__OWNER_LEGACY = 1,    /* owner is a DLManagedTensor */
  HDAL__OWNER_VERSIONED = 2, /* owner is a DLManagedTensorVersioned */
};

/* What the buffer owns of its handle (0: nothing). */
enum {
  HDAL__HANDLE_RETAINED = 1, /* a reference taken by retain(): release() drops it */
  HDAL__HANDLE_POOLED = 2,   /* a block of the device's pool (pool.c), of nbytes */
};

struct hdal_buffer {
  atomic_int refs;
  int32_t ndim;
  DLDataType dtype;
  uint8_t owner_kind;
  bool is_view;
  bool read_only;
  uint8_t owns_handle; /* HDAL__HANDLE_*: how the handle goes back */
  hdal_device *device;
  void *handle;        /* host pointer, device pointer or cl_mem */
  uint64_t offset;     /* bytes from handle to the first element (views only) */
  uint64_t nbytes;     /* compact size of the elements */
  void *owner;         /* the imported managed tensor whose deleter runs at the end */
  _Atomic(void *) sub; /* lazily made subrange handle starting at the first element */
  int64_t dims[];      /* shape[ndim], then strides[ndim] (in elements) */
};

/* ---- buffer objects (lifetime.c) ---- */
/* Objects of up to this many dimensions all have room for it, so that one
 * released object serves the next import whatever its rank. */
#define HDAL__OBJECT_DIMS 6
/* hdal__object_get/put, inline in lifetime.h. */

/* ---- buffer.c ---- */
/* hdal__buffer_alloc(dev, ndim): a buffer object of one reference on `dev`,
 * nothing else set; inline in lifetime.h (the import path's). */
static inline int64_t *hdal__buffer_shape(hdal_buffer *b) { return b->dims; }
static inline int64_t *hdal__buffer_strides(hdal_buffer *b) { return b->dims + b->ndim; }
/* Allocates a compact row-major buffer of the given shape on `dev` (not a view). */
HDAL__HIDDEN hdal_error *hdal__buffer_new_compact(hdal_device *dev, int32_t ndim, const int64_t *shape,
                                                  DLDataType dtype, hdal_buffer **out);
/* A block of the device's pool for compact buffer b (b->nbytes > 0), owned by
 * b from now on: hdal__buffer_discard or the last release gives it back. */
HDAL__HIDDEN hdal_error *hdal__buffer_pool_storage(hdal_buffer *b);
/* Frees a buffer that never had a user (an import that failed late): releases
 * the handle if owned but does not run the owner's deleter. */
HDAL__HIDDEN void hdal__buffer_discard(hdal_buffer *b);
/* The handle that starts at the buffer's first element (hdal_buffer_data, an
 * export's `data`): the handle itself, an address, or a subrange handle made
 * once and owned by the buffer. */
HDAL__HIDDEN hdal_error *hdal__buffer_first(hdal_buffer *b, void **data);



#endif
