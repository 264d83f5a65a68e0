/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — moving elements between host and devices (copy_path.c), and
 * the buffer copies of the API that use it. */
#ifndef HDAL_COPY_PATH_H
#define HDAL_COPY_PATH_H

#include "buffer.h"

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
 * the source's elements.  On failure `b` may hold the allocation: the caller
 * discards `b` (hdal__buffer_discard), which gives it back. */
HDAL__HIDDEN hdal_error *hdal__materialize(const hdal__source *src, hdal_buffer *b, const intptr_t *stream);

#endif
