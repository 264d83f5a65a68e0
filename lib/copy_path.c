/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — copies between host memory and devices, through the backends'
 * buffer operations.  Layout work (compaction) always happens on the host:
 * backends only move contiguous bytes. */
#include "config.h"
#include <stdlib.h>
#include "buffer.h"
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
  if (b->device->host_addressable) {
    /* An empty buffer has no memory: no pointer arithmetic on NULL (UBSan). */
    src->host = b->handle ? (const char *)b->handle + b->offset : NULL;
    src->dev = NULL;
  }
}

static hdal_error *no_op(const hdal_device *d, const char *op) {
  return hdal__error_new(HDAL_UNIMPLEMENTED, "backend '%s' has no '%s' buffer operation (device %d)",
                         d->backend ? d->backend->name : "?", op, d->id);
}

hdal_error *hdal__read_compact(const hdal__source *src, void *dst, const intptr_t *stream) {
  if (!src->dev) {
    hdal__gather(dst, src->host, src->ndim, src->shape, src->strides, src->bits, src->src_bits);
    return NULL;
  }
  const hdal_backend_buffer_ops *ops = hdal__ops(src->dev);
  hdal_error *e = hdal__fork_refuse(src->dev);
  if (e) return e;
  if (!ops || !ops->read) return no_op(src->dev, "read");
  if (src->row_major && src->bits == src->src_bits)
    return ops->read(hdal__state(src->dev), src->dev->data, src->handle, src->offset, dst, src->span, stream);
  char *tmp = malloc(src->span ? src->span : 1);
  if (!tmp) return hdal__error_oom();
  e = ops->read(hdal__state(src->dev), src->dev->data, src->handle, src->offset + (uint64_t)src->lo_byte, tmp,
                src->span, stream);
  if (!e) hdal__gather(dst, tmp - src->lo_byte, src->ndim, src->shape, src->strides, src->bits, src->src_bits);
  free(tmp);
  return e;
}

hdal_error *hdal__materialize(const hdal__source *src, hdal_buffer *b, const intptr_t *stream) {
  hdal_device *t = b->device;
  const hdal_backend_buffer_ops *ops = hdal__ops(t);
  if (b->nbytes == 0) return NULL; /* nothing to hold: no allocation at all */
  hdal_error *e = hdal__fork_refuse(t);
  if (!e && src->dev) e = hdal__fork_refuse(src->dev);
  if (e) return e;
  if (!ops || !ops->allocate) return no_op(t, "allocate");
  void *state = hdal__state(t), *h = NULL;
  e = hdal__pool_alloc(t, b->nbytes, &h);
  if (e) return e;
  bool same_layout = src->row_major && src->bits == src->src_bits;
  if (t->host_addressable) {
    e = hdal__read_compact(src, h, stream);
  } else if (src->dev && src->dev->backend == t->backend && ops->copy && same_layout) {
    e = ops->copy(state, t->data, h, 0, src->dev->data, src->handle, src->offset, b->nbytes, stream);
  } else if (!ops->write) {
    e = no_op(t, "write");
  } else if (!src->dev && same_layout) {
    e = ops->write(state, t->data, h, 0, src->host, b->nbytes, stream);
  } else {
    void *tmp = malloc(b->nbytes);
    e = tmp ? hdal__read_compact(src, tmp, stream) : hdal__error_oom();
    if (!e) e = ops->write(state, t->data, h, 0, tmp, b->nbytes, stream);
    free(tmp);
  }
  if (e) {
    hdal__pool_free(t, h, b->nbytes);
    return e;
  }
  b->handle = h;
  b->owns_handle = HDAL__HANDLE_POOLED;
  return NULL;
}
