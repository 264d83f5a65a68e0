/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the hot path's per-thread stocks (lifetime.c says why and how):
 * the fast paths inline here, everything else in lifetime.c. */
#ifndef HDAL_LIFETIME_H
#define HDAL_LIFETIME_H

#include "buffer.h"

/* How many objects a thread keeps (hdal__cached_objects, HDAL_NO_RECYCLE): recycle.c, internal.h. */

/* References a thread takes from a context's counter at a time. */
#define HDAL__REF_BATCH 64

typedef struct hdal__thread_cache {
  hdal_context *ctx; /* the stock's context: changed by its thread, under the registry lock */
  atomic_long refs;  /* references to ctx in stock */
  int nobjects;
  hdal_buffer *objects[HDAL__CACHED_OBJECTS ? HDAL__CACHED_OBJECTS : 1];
  struct hdal__thread_cache *next, **prevp; /* the registry */
} hdal__thread_cache;

HDAL__HIDDEN extern __thread hdal__thread_cache *hdal__mine __attribute__((tls_model("initial-exec")));

HDAL__HIDDEN hdal_buffer *hdal__object_take_slow(hdal_context *ctx, int32_t ndim);
HDAL__HIDDEN void hdal__object_give_slow(hdal_context *ctx, hdal_buffer *b, long stock);

/* A buffer object with room for ndim dimensions and a reference to ctx for
 * it, both from this thread's stock when it has them (NULL: out of memory). */
static inline __attribute__((always_inline)) hdal_buffer *hdal__object_take(hdal_context *ctx, int32_t ndim) {
  hdal__thread_cache *t = hdal__mine;
  if (t->ctx == ctx && ndim <= HDAL__OBJECT_DIMS && t->nobjects) {
    long r = atomic_load_explicit(&t->refs, memory_order_relaxed);
    while (r > 0)
      if (atomic_compare_exchange_weak_explicit(&t->refs, &r, r - 1, memory_order_relaxed, memory_order_relaxed))
        return t->objects[--t->nobjects];
  }
  return hdal__object_take_slow(ctx, ndim);
}

/* Gives back a released buffer's object and its reference to ctx.  The add
 * and the load of `dying` are both sequentially consistent: with destroy's
 * store and take-back, one side always sees the other (lifetime.c). */
static inline void hdal__object_give(hdal_context *ctx, hdal_buffer *b) {
  hdal__thread_cache *t = hdal__mine;
  long r = 0;
  if (t->ctx == ctx) { /* a thread without a cache has t->ctx NULL */
    long before = atomic_fetch_add_explicit(&t->refs, 1, memory_order_seq_cst);
    /* Any object has room for HDAL__OBJECT_DIMS dimensions, whatever its own rank. */
    if (before < 2 * HDAL__REF_BATCH - 1 && !atomic_load_explicit(&ctx->dying, memory_order_seq_cst) &&
        t->nobjects < hdal__cached_objects) {
      t->objects[t->nobjects++] = b;
      return;
    }
    r = before + 1;
  }
  hdal__object_give_slow(ctx, b, r);
}

/* A buffer of one reference on `dev`, holding nothing yet (NULL: out of memory);
 * it keeps its context (and backends) alive. */
static inline __attribute__((always_inline)) hdal_buffer *hdal__buffer_alloc(hdal_device *dev, int32_t ndim) {
  hdal_buffer *b = hdal__object_take(dev->ctx, ndim);
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  b->ndim = ndim;
  b->owner_kind = HDAL__OWNER_NONE;
  b->is_view = b->read_only = false;
  b->owns_handle = 0;
  b->device = dev;
  b->handle = b->owner = NULL;
  b->offset = b->nbytes = 0;
  atomic_init(&b->sub, NULL);
  return b;
}

#endif
