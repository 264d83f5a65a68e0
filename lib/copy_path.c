/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — copies between devices and host memory, through buffer
 * operations only: a device's, or host memory's (lib/host_ops.c) for host
 * memory no device was asked about.  Layout work (compaction) happens on the
 * host, straight from or into memory whose operations give a host pointer
 * (host_pointer), else through a temporary: backends only move contiguous
 * bytes. */
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
}

static hdal_error *no_op(const hdal_device *d, const char *op) {
  return hdal__error_new(HDAL_UNIMPLEMENTED, "backend '%s' has no '%s' buffer operation (device %d)",
                         d->backend ? d->backend->name : "?", op, d->id);
}

/* The operations that reach a source's memory, with their arguments. */
typedef struct {
  const hdal_backend_buffer_ops *ops;
  void *state, *dev;
} reach;

static reach reach_source(const hdal__source *src) {
  if (!src->dev) return (reach){&hdal__host_buffer_ops, NULL, NULL};
  return (reach){hdal__moves(src->dev), hdal__state(src->dev), src->dev->data};
}

/* The host address of a handle's byte, or NULL: not host-addressable. */
static char *host_pointer(reach r, void *handle, uint64_t offset) {
  void *(*f)(void *, void *, void *, uint64_t) = HDAL__OP(r.ops, host_pointer);
  return f && handle ? f(r.state, r.dev, handle, offset) : NULL;
}

static bool same_layout(const hdal__source *src) { return src->row_major && src->bits == src->src_bits; }

hdal_error *hdal__read_compact(const hdal__source *src, void *dst, const intptr_t *stream) {
  reach r = reach_source(src);
  hdal_error *e = src->dev ? hdal__fork_refuse(src->dev) : NULL;
  if (e) return e;
  if (!r.ops || !r.ops->read) return no_op(src->dev, "read");
  if (same_layout(src)) return r.ops->read(r.state, r.dev, src->handle, src->offset, dst, src->span, stream);
  const char *in_place = host_pointer(r, src->handle, src->offset);
  if (in_place) { /* compacted straight from the memory: no temporary */
    hdal__gather(dst, in_place, src->ndim, src->shape, src->strides, src->bits, src->src_bits);
    return NULL;
  }
  char *tmp = malloc(src->span ? src->span : 1);
  if (!tmp) return hdal__error_oom();
  e = r.ops->read(r.state, r.dev, src->handle, src->offset + (uint64_t)src->lo_byte, tmp, src->span, stream);
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
  ops = hdal__moves(t); /* from here on: moving bytes */
  e = hdal__pool_alloc(t, b->nbytes, &h);
  if (e) return e;
  char *into;
  const char *from;
  if (src->dev && src->dev->backend == t->backend && ops->copy && same_layout(src)) {
    e = ops->copy(state, t->data, h, 0, src->dev->data, src->handle, src->offset, b->nbytes, stream);
  } else if ((into = host_pointer((reach){ops, state, t->data}, h, 0))) {
    e = hdal__read_compact(src, into, stream); /* the source's read compacts straight into the new memory */
  } else if (!ops->write) {
    e = no_op(t, "write");
  } else if (same_layout(src) && (from = host_pointer(reach_source(src), src->handle, src->offset))) {
    e = ops->write(state, t->data, h, 0, from, b->nbytes, stream);
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
