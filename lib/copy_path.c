/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — copies between devices and host memory, through buffer
 * operations only: a device's, or host memory's (lib/host_ops.c) for host
 * memory no device was asked about.  Layout work (compaction) happens on the
 * host, straight from or into memory whose operations give a host pointer
 * (host_pointer), else through a temporary: backends only move contiguous
 * bytes. */
#include "config.h"
#include <stdlib.h>
#include "copy_path.h"
#include "layout.h"
#include "pool.h"

void hdal__source_of_buffer(const hdal_buffer *b, hdal__source *src) {
  hdal_buffer *m = (hdal_buffer *)b;
  *src = (hdal__source){
      .dev = b->device,
      .handle = b->handle,
      .offset = b->offset,
      .ndim = b->ndim,
      .shape = hdal__buffer_shape(m),
      .strides = hdal__buffer_strides(m),
      .bits = hdal__dtype_bits(b->dtype),
      .src_bits = hdal__dtype_bits(b->dtype),
      .lo_byte = 0, /* buffers are compact up to a permutation: nothing below element 0 */
      .span = b->nbytes,
      .row_major = !b->is_view, /* a view may be permuted; gather handles both */
  };
}

static bool same_layout(const hdal__source *src) { return src->row_major && src->bits == src->src_bits; }

hdal_error *hdal__read_compact(const hdal__source *src, void *dst, const intptr_t *stream) {
  hdal_device *d = src->dev; /* NULL: host memory */
  if (same_layout(src)) return hdal__op_read(d, src->handle, src->offset, dst, src->span, stream);
  const char *in_place = hdal__op_host_pointer(d, src->handle, src->offset);
  if (in_place) { /* compacted straight from the memory: no temporary */
    hdal__gather(dst, in_place, src->ndim, src->shape, src->strides, src->bits, src->src_bits);
    return NULL;
  }
  char *tmp = malloc(src->span ? src->span : 1);
  if (!tmp) return hdal__error_oom();
  hdal_error *e = hdal__op_read(d, src->handle, src->offset + (uint64_t)src->lo_byte, tmp, src->span, stream);
  if (!e) hdal__gather(dst, tmp - src->lo_byte, src->ndim, src->shape, src->strides, src->bits, src->src_bits);
  free(tmp);
  return e;
}

hdal_error *hdal__materialize(const hdal__source *src, hdal_buffer *b, const intptr_t *stream) {
  hdal_device *t = b->device;
  if (b->nbytes == 0) return NULL; /* nothing to hold: no allocation at all */
  hdal_error *e = hdal__op_usable(t);
  if (!e && src->dev) e = hdal__op_usable(src->dev);
  if (e || (e = hdal__buffer_pool_storage(b))) return e; /* on failure below, the caller's discard gives it back */
  void *h = b->handle;
  char *into;
  const char *from;
  if (hdal__op_copies(t, src->dev) && same_layout(src)) {
    e = hdal__op_copy(t, h, 0, src->dev, src->handle, src->offset, b->nbytes, stream);
  } else if ((into = hdal__op_host_pointer(t, h, 0))) {
    e = hdal__read_compact(src, into, stream); /* the source's read compacts straight into the new memory */
  } else if (same_layout(src) && (from = hdal__op_host_pointer(src->dev, src->handle, src->offset))) {
    e = hdal__op_write(t, h, 0, from, b->nbytes, stream);
  } else {
    void *tmp = malloc(b->nbytes);
    e = tmp ? hdal__read_compact(src, tmp, stream) : hdal__error_oom();
    if (!e) e = hdal__op_write(t, h, 0, tmp, b->nbytes, stream);
    free(tmp);
  }
  return e;
}

/* ---- the API's copies ---- */

HDAL_API hdal_error *hdal_buffer_copy_to_host(const hdal_buffer *b, void *dst, size_t nbytes) {
  if (!b) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_copy_to_host: buffer is NULL");
  if (nbytes != b->nbytes)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "hdal_buffer_copy_to_host: the buffer holds %llu bytes (compact), the destination %zu",
                           (unsigned long long)b->nbytes, nbytes);
  if (!nbytes) return NULL;
  if (!dst) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_copy_to_host: destination is NULL");
  hdal__source src;
  hdal__source_of_buffer(b, &src);
  return hdal__read_compact(&src, dst, NULL);
}

HDAL_API hdal_error *hdal_buffer_copy_to_device(const hdal_buffer *b, hdal_device *dst, hdal_buffer **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_copy_to_device: out is NULL");
  *out = NULL;
  if (!b || !dst) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_buffer_copy_to_device: buffer or device is NULL");
  hdal_error *e = hdal__check_target(dst, b->device->ctx, "hdal_buffer_copy_to_device");
  if (e) return e;
  hdal_buffer *nb;
  if ((e = hdal__buffer_new_compact(dst, b->ndim, hdal__buffer_shape((hdal_buffer *)b), b->dtype, &nb))) return e;
  hdal__source src;
  hdal__source_of_buffer(b, &src);
  if ((e = hdal__materialize(&src, nb, NULL))) {
    hdal__buffer_discard(nb);
    return e;
  }
  *out = nb;
  return NULL;
}
