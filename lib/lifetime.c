/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — lifetimes on the hot path without shared counters
 * (docs/design.md, "Lifetimes without shared counters").
 *
 * A buffer keeps its context alive, and a buffer object is memory from the
 * heap.  Counting the first on the context's own counter, and recycling the
 * second through one slot of the context, made every import + release write
 * two cache lines that every thread writes: two threads importing at once ran
 * at a fifth of one thread's speed.  So each thread keeps, on a line only it
 * writes:
 *   - a few released buffer objects (they belong to no context), and
 *   - a stock of references to the context it used last, taken from the
 *     context's counter a batch at a time and handed to its buffers one by one;
 *     a buffer released on this thread gives its reference back to the stock.
 * The context's counter therefore holds the user's reference, the references
 * of buffers that took theirs from it directly, and the stocks.
 * hdal_context_destroy marks the context dying and takes every thread's stock
 * back (the registry of stocks is why there is a lock at all); a release that
 * races with it sees the mark after adding to its stock and gives the stock
 * back itself: a store-then-load on each side, so one of the two always sees
 * the other.  A thread's stock goes back when it exits (a key destructor) or
 * when it moves to another context. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "lifetime.h"

/* initial-exec: one pointer of static TLS, read without a call to
 * __tls_get_addr on every import (glibc keeps room for this much even for a
 * library loaded with dlopen). */
/* A thread without a cache of its own points to `none`, which serves no
 * context and holds nothing (never written): the inline paths then need no
 * NULL test. */
static hdal__thread_cache none;
__thread hdal__thread_cache *hdal__mine __attribute__((tls_model("initial-exec"))) = &none;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static hdal__thread_cache *registry;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_ok;

static void unref(hdal_context *ctx, long n) {
  if (atomic_fetch_sub_explicit(&ctx->refs, n, memory_order_acq_rel) == n) hdal__context_free(ctx);
}

/* Under registry_lock. */
static void registry_remove(hdal__thread_cache *t) {
  *t->prevp = t->next;
  if (t->next) t->next->prevp = t->prevp;
}

static void free_objects(hdal__thread_cache *t) {
  while (t->nobjects) free(t->objects[--t->nobjects]);
}

/* A thread's exit: its stock goes back, its objects are freed. */
static void thread_cache_exit(void *p) {
  hdal__thread_cache *t = p;
  pthread_mutex_lock(&registry_lock);
  registry_remove(t);
  long n = atomic_exchange_explicit(&t->refs, 0, memory_order_acq_rel);
  pthread_mutex_unlock(&registry_lock);
  if (n) unref(t->ctx, n);
  free_objects(t);
  free(t);
  hdal__mine = &none;
}

/* A child of fork() must not inherit the lock held by a thread it does not have. */
static void fork_prepare(void) { pthread_mutex_lock(&registry_lock); }
static void fork_done(void) { pthread_mutex_unlock(&registry_lock); }

static void exit_key_create(void) {
  exit_key_ok = pthread_key_create(&exit_key, thread_cache_exit) == 0 &&
                pthread_atfork(fork_prepare, fork_done, fork_done) == 0;
}

/* The calling thread's cache, made on first use; NULL when out of memory
 * (the shared counter and malloc then serve, more slowly). */
static hdal__thread_cache *thread_cache_get(void) {
  if (hdal__mine != &none) return hdal__mine;
  pthread_once(&exit_key_once, exit_key_create);
  hdal__thread_cache *t;
  /* Lines of its own: two threads' caches must not share one (false sharing
   * would bring back what the stock takes away). */
  size_t size = (sizeof *t + 63) / 64 * 64;
  if (!exit_key_ok || !(t = aligned_alloc(64, size))) return NULL;
  memset(t, 0, size);
  atomic_init(&t->refs, 0);
  if (pthread_setspecific(exit_key, t)) {
    free(t);
    return NULL;
  }
  pthread_mutex_lock(&registry_lock);
  t->next = registry;
  t->prevp = &registry;
  if (registry) registry->prevp = &t->next;
  registry = t;
  pthread_mutex_unlock(&registry_lock);
  return hdal__mine = t;
}

/* Gives the whole stock back; only the owner calls it. */
static void drain(hdal__thread_cache *t) {
  long n = atomic_exchange_explicit(&t->refs, 0, memory_order_acq_rel);
  if (n) unref(t->ctx, n);
}

/* A reference to ctx: from the stock, which is refilled (or moved to ctx)
 * first; from the shared counter for a dying context or when the thread has
 * no cache. */
static void acquire(hdal_context *ctx) {
  hdal__thread_cache *t;
  if (atomic_load_explicit(&ctx->dying, memory_order_acquire) || !(t = thread_cache_get())) {
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    return;
  }
  if (t->ctx != ctx) { /* move the stock to this context */
    pthread_mutex_lock(&registry_lock);
    hdal_context *old = t->ctx;
    long n = atomic_exchange_explicit(&t->refs, 0, memory_order_acq_rel);
    t->ctx = ctx;
    pthread_mutex_unlock(&registry_lock);
    if (n) unref(old, n);
  }
  long r = atomic_load_explicit(&t->refs, memory_order_relaxed);
  while (r > 0)
    if (atomic_compare_exchange_weak_explicit(&t->refs, &r, r - 1, memory_order_relaxed, memory_order_relaxed))
      return;
  atomic_fetch_add_explicit(&ctx->refs, HDAL__REF_BATCH, memory_order_relaxed);
  atomic_fetch_add_explicit(&t->refs, HDAL__REF_BATCH - 1, memory_order_seq_cst);
  if (atomic_load_explicit(&ctx->dying, memory_order_seq_cst)) drain(t);
}

hdal_buffer *hdal__object_take_slow(hdal_context *ctx, int32_t ndim) {
  hdal__thread_cache *t = hdal__mine;
  hdal_buffer *b;
  if (ndim <= HDAL__OBJECT_DIMS && t->nobjects) {
    b = t->objects[--t->nobjects];
  } else {
    /* Whole lines: a buffer that moves between threads shares none with another. */
    int32_t room = ndim > HDAL__OBJECT_DIMS ? ndim : HDAL__OBJECT_DIMS;
    size_t size = (sizeof(hdal_buffer) + 2 * (size_t)room * sizeof(int64_t) + 63) / 64 * 64;
    if (!(b = aligned_alloc(64, size))) return NULL;
  }
  acquire(ctx);
  return b;
}

/* `r`: the stock after the inline path added b's reference to it, 0 when it did not. */
void hdal__object_give_slow(hdal_context *ctx, hdal_buffer *b, long r) {
  hdal__thread_cache *t = hdal__mine;
  if (t != &none && t->nobjects < hdal__cached_objects) /* any object has room for HDAL__OBJECT_DIMS */
    t->objects[t->nobjects++] = b;
  else
    free(b);
  if (!r) {
    unref(ctx, 1);
  } else if (atomic_load_explicit(&ctx->dying, memory_order_seq_cst)) {
    drain(t); /* destroy may have taken the stock before this reference came in */
  } else {
    /* A thread that releases what others made keeps one batch, gives the
     * rest back (never the last reference: the stock still holds a batch). */
    const long batch = HDAL__REF_BATCH;
    while (r >= 2 * batch && !atomic_compare_exchange_weak_explicit(&t->refs, &r, r - batch, memory_order_relaxed,
                                                                    memory_order_relaxed)) {
    }
    if (r >= 2 * batch) unref(ctx, batch);
  }
}

/* The user's reference and every thread's stock go back; the context is
 * freed now or by its last buffer's release. */
HDAL_API void hdal_context_destroy(hdal_context *ctx) {
  if (!ctx) return;
  atomic_store_explicit(&ctx->dying, true, memory_order_seq_cst);
  long n = 1; /* the user's reference */
  pthread_mutex_lock(&registry_lock);
  for (hdal__thread_cache *t = registry; t; t = t->next)
    if (t->ctx == ctx) n += atomic_exchange_explicit(&t->refs, 0, memory_order_acq_rel);
  pthread_mutex_unlock(&registry_lock);
  /* The caller's cache goes now, not at its exit (its stock, of this context,
   * was just taken): a program that destroys its context has given back
   * everything of this thread. */
  hdal__thread_cache *t = hdal__mine;
  if (t != &none && t->ctx == ctx) {
    pthread_mutex_lock(&registry_lock);
    registry_remove(t);
    pthread_mutex_unlock(&registry_lock);
    pthread_setspecific(exit_key, NULL);
    free_objects(t);
    free(t);
    hdal__mine = &none;
  } else if (t != &none) {
    free_objects(t);
  }
  unref(ctx, n);
}
