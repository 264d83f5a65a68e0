/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the buffer object and the DLPack helpers shared by import, export
 * and the copy paths.  One allocation per buffer: shape and strides live inline,
 * so a zero-copy import costs one malloc, or none when the thread has a
 * released object at hand (lifetime.c). */
#ifndef HDAL_BUFFER_H
#define HDAL_BUFFER_H

#include "device_ops.h"

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

/* ---- dtype.c ---- */
/* Check 6: jaxlib's dtype table. */
HDAL__HIDDEN hdal_error *hdal__dtype_check(DLDataType t);
/* Bits of storage per element (4 for packed float4, else bits). */
static inline unsigned hdal__dtype_bits(DLDataType t) { return (unsigned)t.bits * (t.lanes ? t.lanes : 1); }
/* Compact byte size of n elements of `bits` (packed for sub-byte types). */
static inline uint64_t hdal__bytes_of(uint64_t n, unsigned bits) {
  return bits >= 8 ? n * (bits / 8) : (n * bits + 7) / 8;
}

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
/* Refuses a target device that is not PjRt-compatible, not addressable or of another context. */
HDAL__HIDDEN hdal_error *hdal__check_target(const hdal_device *d, const hdal_context *ctx, const char *who);
/* Frees a buffer that never had a user (an import that failed late): releases
 * the handle if owned but does not run the owner's deleter. */
HDAL__HIDDEN void hdal__buffer_discard(hdal_buffer *b);
/* The handle that starts at the buffer's first element (hdal_buffer_data, an
 * export's `data`): the handle itself, an address, or a subrange handle made
 * once and owned by the buffer. */
HDAL__HIDDEN hdal_error *hdal__buffer_first(hdal_buffer *b, void **data);

/* ---- copy_path.c: moving elements between host and devices ---- */
/* Where elements come from: a handle read through its device's operations,
 * or host memory that no device was asked about (dev NULL), read through
 * host memory's operations (lib/host_ops.c). */
typedef struct {
  hdal_device *dev;    /* NULL: `handle` is a host pointer */
  void *handle;        /* the handle, and the byte offset of element (0,...,0) */
  uint64_t offset;
  int32_t ndim;
  const int64_t *shape;
  const int64_t *strides; /* elements; NULL: row-major */
  unsigned bits, src_bits;
  int64_t lo_byte;     /* bytes below element (0,...,0) that the layout reaches (<= 0) */
  uint64_t span;       /* bytes a copy must read from lo_byte */
  bool row_major;
} hdal__source;

/* Describes buffer `b` as a source. */
HDAL__HIDDEN void hdal__source_of_buffer(const hdal_buffer *b, hdal__source *src);
/* Writes the source's elements, compact row-major, into host memory. */
HDAL__HIDDEN hdal_error *hdal__read_compact(const hdal__source *src, void *dst, const intptr_t *stream);
/* Gives `b` (compact, on its device, no handle yet) a fresh allocation holding
 * the source's elements. */
HDAL__HIDDEN hdal_error *hdal__materialize(const hdal__source *src, hdal_buffer *b, const intptr_t *stream);

/* ---- capsule.c ---- */
HDAL__HIDDEN extern const char hdal__name_legacy[], hdal__name_versioned[], hdal__name_used_legacy[],
    hdal__name_used_versioned[];
struct hdal_capsule {
  _Atomic(const char *) name; /* a static standard name, or `own` */
  void *pointer;
  char own[]; /* the copy of a non-standard name */
};
static inline const char *hdal__capsule_name(hdal_capsule *c) {
  return atomic_load_explicit(&c->name, memory_order_acquire);
}
/* Marks a capsule consumed if it still holds `name`; false when someone else won the race. */
static inline bool hdal__capsule_consume(hdal_capsule *c, const char *name) {
  const char *used = name == hdal__name_legacy ? hdal__name_used_legacy : hdal__name_used_versioned;
  return atomic_compare_exchange_strong_explicit(&c->name, &name, used, memory_order_acq_rel, memory_order_acquire);
}

/* Gives a claimed capsule its name back (an import that failed after claiming it). */
static inline void hdal__capsule_restore(hdal_capsule *c, const char *name) {
  atomic_store_explicit(&c->name, name, memory_order_release);
}


#endif
