/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — per-device memory pools: exact size classes, stream-safe
 * reuse, statistics, a limit, trimming (docs/memory.md).
 *
 * A block is one whole allocation of the backend, of exactly the bytes asked
 * for: a cl_mem cannot be carved up portably, and what a consumer of an
 * export sees of the handle (CL_MEM_SIZE, cuMemGetAddressRange) must be the
 * tensor's size.  A freed block serves only requests of its own size (the
 * sizes of a repeated workload repeat), so freeing needs nothing but the
 * buffer's size and no table of live blocks.  One mutex per device guards the cache
 * and the counters: allocation is already off the zero-copy path, which never
 * comes here.  The backend is called without it, so an allocation takes its
 * bytes out of the limit (pending) before the call and gives them back if the
 * call fails: the bytes in use never pass the limit, whatever the threads. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "device_ops.h"
#include "pool.h"

typedef struct {
  void *handle;
  size_t size;
  void *fence; /* the backend's marker: not reused before it is done; NULL: free to reuse */
} block;

struct hdal__pool {
  pthread_mutex_t lock;
  bool caching; /* keep freed blocks */
  bool runtime; /* the runtime's own pool caches; hdal only counts */
  uint64_t limit;
  uint64_t in_use, peak, reserved, allocs, hits;
  uint64_t pending; /* bytes of fresh allocations under way, counted against the limit */
  block *cached; /* freed blocks, oldest first */
  size_t ncached, cap;
};

/* A block serves requests of exactly its size: see the file's comment. */
static size_t size_class(size_t n) { return n ? n : 1; }

hdal_error *hdal__pool_parse_limit(const char *spec, const char *who, hdal__pool_limit *out) {
  *out = (hdal__pool_limit){0, 0};
  if (!spec || !*spec) return NULL;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(spec, &end, 10);
  bool ok = end != spec && *spec >= '0' && *spec <= '9' && errno == 0;
  if (ok && *end == '%' && end[1] == '\0' && v >= 1 && v <= 100)
    out->percent = (unsigned)v;
  else if (ok && *end == '\0')
    out->bytes = v;
  else
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "%s \"%s\": expected a number of bytes or a percentage of the device's memory "
                           "from 1%% to 100%% (e.g. \"1073741824\" or \"80%%\")",
                           who, spec);
  return NULL;
}

/* Pools are made under one process-wide lock, rarely taken: a device's first
 * allocation.  The runtime is asked before the pool is published, so that
 * every allocation of the device sees one kind of memory. */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device's pool, made on first need. */
static struct hdal__pool *pool_of(hdal_device *d) {
  struct hdal__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
  if (p) return p;
  pthread_mutex_lock(&create_lock);
  if ((p = atomic_load_explicit(&d->pool, memory_order_acquire)) || !(p = calloc(1, sizeof *p))) {
    pthread_mutex_unlock(&create_lock);
    return p;
  }
  pthread_mutex_init(&p->lock, NULL);
  hdal_context *ctx = d->ctx;
  p->caching = ctx->pool_caching;
  p->limit = ctx->pool_limit.percent ? d->memory_bytes / 100 * ctx->pool_limit.percent : ctx->pool_limit.bytes;
  uint64_t reserved;
  p->runtime = p->caching && hdal__op_runtime_pool(d, HDAL_BACKEND_POOL_ENABLE, &reserved);
  atomic_store_explicit(&d->pool, p, memory_order_release);
  pthread_mutex_unlock(&create_lock);
  return p;
}

/* The runtime pool's reserved bytes after `request`; false when it cannot say. */
static bool runtime_query(hdal_device *d, hdal_backend_pool_request request, uint64_t *out) {
  return hdal__op_runtime_pool(d, request, out);
}

static uint64_t runtime_reserved(hdal_device *d, hdal_backend_pool_request request) {
  uint64_t r;
  return runtime_query(d, request, &r) ? r : 0;
}

/* Waits for a block's queued work and gives it back to the runtime. */
static void block_release(hdal_device *d, block *b) {
  if (b->fence) hdal__op_fence_done(d, b->fence, true);
  hdal__op_release(d, b->handle);
}

/* Takes the cached blocks out (lock held); the caller releases them unlocked. */
static block *take_cached(struct hdal__pool *p, size_t *n) {
  block *v = p->cached;
  *n = p->ncached;
  for (size_t i = 0; i < p->ncached; i++) p->reserved -= p->cached[i].size;
  p->cached = NULL;
  p->ncached = p->cap = 0;
  return v;
}

static void release_all(hdal_device *d, block *v, size_t n) {
  for (size_t i = 0; i < n; i++) block_release(d, &v[i]);
  free(v);
}

/* Gives the cached memory back; returns how many bytes went. */
static uint64_t trim(hdal_device *d, struct hdal__pool *p) {
  pthread_mutex_lock(&p->lock);
  uint64_t before = p->reserved;
  size_t n;
  block *v = take_cached(p, &n);
  uint64_t gone = before - p->reserved;
  pthread_mutex_unlock(&p->lock);
  release_all(d, v, n);
  if (p->runtime) {
    uint64_t r0 = runtime_reserved(d, HDAL_BACKEND_POOL_RESERVED), r1 = runtime_reserved(d, HDAL_BACKEND_POOL_TRIM);
    gone += r0 > r1 ? r0 - r1 : 0;
  }
  return gone;
}

/* A cached block of exactly `size` whose queued work is done (lock held). */
static bool take_fitting(hdal_device *d, struct hdal__pool *p, size_t size, void **handle) {
  for (size_t i = 0; i < p->ncached; i++) {
    block *b = &p->cached[i];
    if (b->size != size) continue;
    if (b->fence) {
      if (!hdal__op_fence_done(d, b->fence, false)) continue; /* still queued: not yet */
      b->fence = NULL;
    }
    *handle = b->handle;
    memmove(b, b + 1, (p->ncached - i - 1) * sizeof *b);
    p->ncached--;
    return true;
  }
  return false;
}

/* Whether `size` more bytes keep within the limit (lock held): those in use
 * and those other threads are allocating. */
static bool fits(const struct hdal__pool *p, size_t size) {
  uint64_t taken = p->in_use + p->pending; /* within a limit, if any: no overflow */
  return !p->limit || (taken <= p->limit && size <= p->limit - taken);
}

/* The refusal (lock held; unlocks): the bytes in use count those under way. */
static hdal_error *over_limit(hdal_device *d, struct hdal__pool *p, size_t size) {
  unsigned long long limit = p->limit, taken = p->in_use + p->pending;
  pthread_mutex_unlock(&p->lock);
  return hdal__error_new(HDAL_RESOURCE_EXHAUSTED,
                         "device %d (%s): allocating %zu bytes would pass its memory limit of %llu bytes "
                         "(%llu in use)",
                         d->id, d->kind ? d->kind : "?", size, limit, taken);
}

hdal_error *hdal__pool_alloc(hdal_device *d, size_t nbytes, void **handle) {
  hdal_error *e = hdal__op_allocate_check(d); /* before the pool is made: no pool for a device that cannot allocate */
  if (e) return e;
  struct hdal__pool *p = pool_of(d);
  if (!p) return hdal__error_oom();
  size_t size = size_class(nbytes);
  bool hit = false;
  pthread_mutex_lock(&p->lock);
  /* Within the limit: what is in use must fit, a cached block too (the cache
   * may hold more than the limit after a trim raced with frees). */
  if (!fits(p, size)) return over_limit(d, p, size);
  if (p->caching && !p->runtime) hit = take_fitting(d, p, size, handle);
  if (!hit && p->limit) {
    /* Cached memory makes room; other threads may allocate while the lock is dropped. */
    uint64_t held = p->runtime ? runtime_reserved(d, HDAL_BACKEND_POOL_RESERVED) : p->reserved;
    if (held + size > p->limit && (p->ncached || p->runtime)) {
      pthread_mutex_unlock(&p->lock);
      trim(d, p);
      pthread_mutex_lock(&p->lock);
      if (!fits(p, size)) return over_limit(d, p, size);
    }
  }
  if (!hit) {
    /* Counted before it is made, so that racing threads see the limit. */
    p->pending += size;
    if (!p->runtime) p->reserved += size;
    pthread_mutex_unlock(&p->lock);
    /* The runtime's pool served from its cache when it did not grow (and says so both times). */
    uint64_t before = 0, after = 0;
    bool known = p->runtime && runtime_query(d, HDAL_BACKEND_POOL_RESERVED, &before);
    e = hdal__op_allocate(d, size, handle);
    if (e && hdal_error_code(e) == HDAL_RESOURCE_EXHAUSTED && trim(d, p) > 0) {
      /* Out of memory: the cached memory goes back and the runtime is asked once more. */
      hdal_error_destroy(e);
      e = hdal__op_allocate(d, size, handle);
      known = false;
    }
    if (!e && known && before && runtime_query(d, HDAL_BACKEND_POOL_RESERVED, &after) && after <= before) hit = true;
    pthread_mutex_lock(&p->lock);
    p->pending -= size;
    if (e && !p->runtime) p->reserved -= size;
  }
  if (!e) {
    p->in_use += size;
    if (p->in_use > p->peak) p->peak = p->in_use;
    p->allocs++;
    p->hits += hit;
  }
  pthread_mutex_unlock(&p->lock);
  return e;
}

void hdal__pool_free(hdal_device *d, void *handle, size_t nbytes) {
  struct hdal__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
  size_t size = size_class(nbytes);
  block b = {handle, size, NULL};
  bool keep = p->caching && !p->runtime;
  if (keep) {
    hdal_error *e = hdal__op_fence(d, handle, &b.fence);
    if (e) { /* no marker: the runtime's own release orders it */
      hdal_error_destroy(e);
      keep = false;
    }
  }
  pthread_mutex_lock(&p->lock);
  p->in_use -= size;
  if (keep && p->ncached == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    block *v = realloc(p->cached, cap * sizeof *v);
    if (v) {
      p->cached = v;
      p->cap = cap;
    } else {
      keep = false;
    }
  }
  if (keep) p->cached[p->ncached++] = b;
  else if (!p->runtime) p->reserved -= size;
  pthread_mutex_unlock(&p->lock);
  if (!keep) block_release(d, &b);
}

void hdal__pool_destroy(hdal_device *d) {
  struct hdal__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
  if (!p) return;
  size_t n;
  block *v = take_cached(p, &n);
  release_all(d, v, n);
  pthread_mutex_destroy(&p->lock);
  free(p);
  atomic_store_explicit(&d->pool, NULL, memory_order_relaxed);
}

HDAL_API hdal_error *hdal_device_memory_stats(const hdal_device *cd, hdal_memory_stats *out) {
  if (!cd || !out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_memory_stats: device or out is NULL");
  if (!HDAL__HAS_FIELD(out, hdal_memory_stats, bytes_in_use))
    return hdal__struct_size_error("hdal_memory_stats", out->struct_size);
  hdal_device *d = (hdal_device *)cd;
  hdal_memory_stats s = {sizeof s, 0, 0, 0, 0, 0, 0};
  struct hdal__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
  if (p) {
    pthread_mutex_lock(&p->lock);
    s = (hdal_memory_stats){sizeof s, p->in_use, p->peak, p->reserved, p->limit, p->allocs, p->hits};
    bool runtime = p->runtime;
    pthread_mutex_unlock(&p->lock);
    if (runtime) s.bytes_reserved = runtime_reserved(d, HDAL_BACKEND_POOL_RESERVED);
  } else if (d->ctx) {
    const hdal__pool_limit *l = &d->ctx->pool_limit;
    s.bytes_limit = l->percent ? d->memory_bytes / 100 * l->percent : l->bytes;
  }
  size_t n = out->struct_size < sizeof s ? out->struct_size : sizeof s;
  memcpy((char *)out + sizeof s.struct_size, (char *)&s + sizeof s.struct_size, n - sizeof s.struct_size);
  return NULL;
}

HDAL_API hdal_error *hdal_device_trim(hdal_device *d) {
  if (!d) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_trim: device is NULL");
  struct hdal__pool *p = atomic_load_explicit(&d->pool, memory_order_acquire);
  if (p) trim(d, p);
  return NULL;
}
