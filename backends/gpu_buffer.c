/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal GPU backends — buffer operations, once for every GPU runtime (gpu.h).
 *
 * Handles are device pointers.  Each operation makes its device current for
 * its own duration (CUDA: pushes the primary context; HIP: selects the
 * device; Level Zero: locks its list) and restores the caller's, so the
 * caller's state is left as found.  hdal's own work goes on stream 0; when
 * the caller names a stream, the copy is issued on it and waited for, so that
 * it comes after the work already queued there.  What stands in for a
 * driver's optional entry left NULL is said in gpu.h and applied below, in
 * one function each.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include "gpu.h"

static void *ptr_of(const void *handle, uint64_t offset) { return (char *)handle + offset; }

static hdal__gpu_device *device(hdal__gpu *g, int i) {
  return (hdal__gpu_device *)((char *)g->devices + (size_t)i * g->device_size);
}

/* ---- a driver's optional entries (gpu.h) ---- */

static bool has_streams(const hdal__gpu_driver *drv) { return drv->synchronize != NULL; }

/* Waits for `stream` (stream 0 when NULL) after a call that returned `r`. */
static int finish(hdal__gpu_device *d, int r, const intptr_t *stream) {
  const hdal__gpu_driver *drv = d->gpu->drv;
  return r == HDAL__GPU_SUCCESS && has_streams(drv) ? drv->synchronize(d, stream ? *stream : 0) : r;
}

static bool host_mapped(hdal__gpu_device *d, const void *p, const hdal__gpu_pointer *pi) {
  const hdal__gpu_driver *drv = d->gpu->drv;
  return drv->host_mapped ? drv->host_mapped(d, p, pi) : pi->device_pointer == p;
}

static int peer_enter(hdal__gpu_device *sd, hdal__gpu_saved *sv) {
  const hdal__gpu_driver *drv = sd->gpu->drv;
  return drv->peer_enter ? drv->peer_enter(sd, sv) : HDAL__GPU_SUCCESS;
}

/* `dd` is current. */
static int device_copy(hdal__gpu_device *dd, void *to, hdal__gpu_device *sd, const void *from, size_t n,
                       const intptr_t *stream) {
  const hdal__gpu_driver *drv = dd->gpu->drv;
  if (sd == dd || !drv->peer) return drv->copy(dd, HDAL__GPU_ON_DEVICE, to, from, n, stream);
  return drv->peer(dd, to, sd, from, n, stream);
}

static bool has_events(const hdal__gpu *g) { return !g->drv->has_events || g->drv->has_events(g); }

static bool has_pool(hdal__gpu_device *d) { return d->gpu->drv->pool_open && d->gpu->drv->pool_supported(d); }

/* ---- the operations ---- */

/* An address in messages, as the driver's own tools print it. */
static void address_text(const hdal__gpu_driver *drv, const void *p, char *buf, size_t len) {
  if (drv->address_as_pointer) snprintf(buf, len, "%p", p);
  else snprintf(buf, len, "0x%llx", (unsigned long long)(uintptr_t)p);
}

/* Zero-copy when the driver says the memory is on this device, managed, or
 * pinned host memory that the device maps at the same address. */
static bool gpu_can_alias(void *state, void *dev, const DLTensor *t) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  if (!(g->drv->pointer_types & HDAL_DL_TYPE_BIT(t->device.device_type)) || !t->data) return false;
  const void *p = ptr_of(t->data, t->byte_offset);
  hdal__gpu_pointer pi;
  g->drv->pointer_query(g, p, &pi);
  if (pi.kind == HDAL__GPU_MEM_MANAGED) return true;
  if (pi.kind == HDAL__GPU_MEM_DEVICE) return pi.device == d->ordinal;
  return pi.kind == HDAL__GPU_MEM_HOST && host_mapped(d, p, &pi);
}

/* device_id is the driver's ordinal; for the driver's own device type it must
 * agree on where the data is.  An ordinal out of range is left to the core,
 * which names it the same way for every backend. */
static hdal_error *gpu_route(void *state, const DLTensor *t, size_t *local_index) {
  hdal__gpu *g = state;
  const hdal__gpu_driver *drv = g->drv;
  int id = t->device.device_id;
  *local_index = id < 0 ? SIZE_MAX : (size_t)id; /* devices are listed by ordinal, all of them */
  if (id < 0 || id >= g->ndevices || t->device.device_type != drv->dl_type || !t->data) return NULL;
  const void *p = ptr_of(t->data, t->byte_offset);
  hdal__gpu_pointer pi;
  drv->pointer_query(g, p, &pi);
  char addr[32];
  address_text(drv, p, addr, sizeof addr);
  if (pi.kind == HDAL__GPU_MEM_UNKNOWN)
    return g->host->error_new(HDAL_INVALID_ARGUMENT, "DLPack tensor on (%s, %d): the %s does not know its data %s",
                              drv->dl_name, id, drv->runtime, addr);
  if (pi.kind == HDAL__GPU_MEM_DEVICE && pi.device != id)
    return g->host->error_new(HDAL_INVALID_ARGUMENT,
                              "DLPack tensor claims %s device %d, but the %s says its data %s is on %s device %d",
                              drv->vendor, id, drv->says, addr, drv->vendor, pi.device);
  return NULL;
}

static hdal_error *gpu_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  hdal__gpu_saved sv;
  int r = g->drv->enter(d, &sv);
  if (r != HDAL__GPU_SUCCESS) return g->drv->enter_error(d, r, &sv);
  void *p = NULL;
  /* The drivers refuse (CUDA) or give NULL for (HIP) 0 bytes; an empty buffer
   * still gets a distinct address.  With the device's memory pool, the
   * allocation is ordered on stream 0, which hdal's copies use. */
  r = g->drv->alloc_fn(d, nbytes ? nbytes : 1, &p);
  g->drv->leave(d, &sv);
  if (r != HDAL__GPU_SUCCESS)
    return hdal__gpu_error(g, r, "%s of %zu bytes on %s device %d", d->async ? g->drv->alloc_async_name : g->drv->alloc_name,
                           nbytes, g->drv->vendor, d->ordinal);
  *handle = p;
  return NULL;
}

static void gpu_release(void *state, void *dev, void *handle) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  hdal__gpu_saved sv;
  if (g->drv->enter(d, &sv) != HDAL__GPU_SUCCESS) {
    /* Without the device current: the synchronous free takes any device
     * pointer, the pool's too, synchronising. */
    g->drv->free_fn(d, handle, false);
    return;
  }
  /* The stream-ordered free: reused by the pool only after stream 0's work so
   * far (and so every blocking stream's); the other waits for the device. */
  g->drv->free_fn(d, handle, d->async);
  g->drv->leave(d, &sv);
}

/* hdal's pool: a block goes back behind an event on stream 0, which comes
 * after the work queued there and on every blocking stream.  The runtime's
 * pool takes none: its free is ordered on that stream itself. */
static hdal_error *gpu_fence(void *state, void *dev, void *handle, void **fence) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  *fence = NULL;
  if (!has_events(g))
    return g->host->error_new(HDAL_UNIMPLEMENTED, "the %s has no %s", g->drv->runtime, g->drv->event_query_name);
  hdal__gpu_saved sv;
  int r = g->drv->enter(d, &sv); /* stream 0 is the current device's */
  if (r != HDAL__GPU_SUCCESS) return g->drv->enter_error(d, r, &sv);
  void *ev = NULL;
  r = g->drv->event_record(d, 0, &ev);
  g->drv->leave(d, &sv);
  if (r != HDAL__GPU_SUCCESS) return hdal__gpu_error(g, r, "recording an event on %s device %d", g->drv->vendor, d->ordinal);
  *fence = ev;
  return NULL;
}

static bool gpu_fence_done(void *state, void *dev, void *fence, bool wait) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  hdal__gpu_saved sv;
  bool enters = g->drv->fence_done_enters;
  if (enters && g->drv->enter(d, &sv) != HDAL__GPU_SUCCESS) {
    if (wait) g->drv->event_destroy(d, fence); /* given up on: nothing more can be learnt of it */
    return wait;
  }
  int r = g->drv->event_query(d, fence, wait);
  bool done = r != HDAL__GPU_NOT_READY || wait; /* an error: the event will never say more */
  if (done) g->drv->event_destroy(d, fence);
  if (enters) g->drv->leave(d, &sv);
  return done;
}

/* The device's default memory pool (CUDA 11.2+, ROCm 5.1+), kept whole
 * between uses: its release threshold is raised so that synchronisation keeps
 * what it caches. */
static bool gpu_runtime_pool(void *state, void *dev, hdal_backend_pool_request req, uint64_t *reserved) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  const hdal__gpu_driver *drv = g->drv;
  *reserved = 0;
  hdal__gpu_saved sv;
  if (req == HDAL_BACKEND_POOL_ENABLE) {
    if (!has_pool(d) || drv->enter(d, &sv) != HDAL__GPU_SUCCESS) return false;
    void *pool = NULL;
    bool ok = drv->pool_open(d, &pool);
    drv->leave(d, &sv);
    if (!ok) return false;
    d->mempool = pool;
    d->async = true;
  }
  if (!d->async) return false;
  if (req == HDAL_BACKEND_POOL_TRIM && drv->enter(d, &sv) == HDAL__GPU_SUCCESS) {
    finish(d, HDAL__GPU_SUCCESS, NULL); /* frees still queued are not released otherwise */
    drv->pool_trim(d);
    drv->leave(d, &sv);
  }
  uint64_t v = 0;
  if (drv->pool_reserved(d, &v) != HDAL__GPU_SUCCESS) return false; /* cannot say */
  *reserved = v;
  return true;
}

/* The default pool outlives hdal's context, with the threshold hdal raised:
 * what it caches for hdal goes back to the device with the context. */
void hdal__gpu_pools_trim(hdal__gpu *g) {
  uint64_t ignored;
  for (int i = 0; i < g->ndevices; i++)
    if (device(g, i)->async) gpu_runtime_pool(g, device(g, i), HDAL_BACKEND_POOL_TRIM, &ignored);
}

/* Host <-> device, synchronous, or ordered on `stream` and waited for. */
static hdal_error *transfer(hdal__gpu *g, hdal__gpu_device *d, bool to_device, const void *handle, uint64_t offset,
                            void *host, size_t n, const intptr_t *stream) {
  if (n == 0) return NULL;
  hdal__gpu_saved sv;
  int r = g->drv->enter(d, &sv);
  if (r != HDAL__GPU_SUCCESS) return g->drv->enter_error(d, r, &sv);
  void *p = ptr_of(handle, offset);
  r = to_device ? g->drv->copy(d, HDAL__GPU_TO_DEVICE, p, host, n, stream)
                : g->drv->copy(d, HDAL__GPU_FROM_DEVICE, host, p, n, stream);
  if (stream) r = finish(d, r, stream);
  g->drv->leave(d, &sv);
  return r == HDAL__GPU_SUCCESS ? NULL
                                : hdal__gpu_error(g, r, "copying %zu bytes %s %s device %d", n,
                                                  to_device ? "to" : "from", g->drv->vendor, d->ordinal);
}

static hdal_error *gpu_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                             const intptr_t *stream) {
  return transfer(state, dev, true, handle, offset, (void *)src, n, stream);
}

static hdal_error *gpu_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                            const intptr_t *stream) {
  return transfer(state, dev, false, handle, offset, dst, n, stream);
}

/* Whether `dd` may address `sd`'s memory, as the runtime answers (docs/cuda.md, "Copies between and within
 * GPUs"; a query that fails: no), with access enabled where the runtime has enable_peer and grants it (`dd`
 * current then).  Asked once per ordered pair whose ordinal fits the bitmaps, every time otherwise: the
 * answer is what the copy relies on, the bitmaps only save asking.  Where access is not granted, or
 * enabling failed, a runtime's peer copy stages through host memory itself, and one without (Level Zero)
 * goes through staged_copy. */
static bool peer_reach(hdal__gpu_device *dd, hdal__gpu_device *sd) {
  const hdal__gpu_driver *drv = dd->gpu->drv;
  if (!drv->can_access_peer) return false;
  uint64_t bit = sd->ordinal >= 0 && sd->ordinal < 64 ? UINT64_C(1) << sd->ordinal : 0;
  /* Another thread asking at once may see the bit claimed before the answer is: it says no, and its
   * copy is right all the same. */
  if (bit && (__atomic_fetch_or(&dd->peers_asked, bit, __ATOMIC_ACQ_REL) & bit))
    return (__atomic_load_n(&dd->peers_reached, __ATOMIC_ACQUIRE) & bit) != 0;
  int can = 0;
  bool yes = drv->can_access_peer(dd, sd, &can) == HDAL__GPU_SUCCESS && can;
  if (yes && drv->enable_peer) yes = drv->enable_peer(dd, sd) == HDAL__GPU_SUCCESS;
  if (yes && bit) __atomic_fetch_or(&dd->peers_reached, bit, __ATOMIC_ACQ_REL);
  return yes;
}

/* Bytes a staged copy moves at a time: its host memory is at most this. */
#define STAGE_BYTES ((size_t)16 << 20)

/* From `sd` to `dd`, two GPUs of a runtime without a peer copy of its own that cannot reach each other
 * (Level Zero's without peer access, or of two drivers): each piece read from `sd` into page-locked host
 * memory (plain memory where the runtime has none for both), then written to `dd`, each device entered
 * in turn (one at a time: two threads copying each way cannot wait for each other). */
static hdal_error *staged_copy(hdal__gpu *g, hdal__gpu_device *dd, void *dst, uint64_t dst_offset,
                               hdal__gpu_device *sd, const void *src, uint64_t src_offset, size_t n) {
  const hdal__gpu_driver *drv = g->drv;
  size_t len = n < STAGE_BYTES ? n : STAGE_BYTES;
  void *host = NULL;
  bool pinned = drv->staging_alloc && drv->staging_alloc(sd, dd, len, &host) == HDAL__GPU_SUCCESS && host;
  if (!pinned && !(host = malloc(len))) return g->host->error_oom();
  hdal_error *e = NULL;
  for (size_t done = 0; done < n && !e; done += len) {
    if (len > n - done) len = n - done;
    if (!(e = transfer(g, sd, false, src, src_offset + done, host, len, NULL)))
      e = transfer(g, dd, true, dst, dst_offset + done, host, len, NULL);
  }
  if (pinned) drv->staging_free(sd, host);
  else free(host);
  return e;
}

/* Device to device; done when it returns, since the source may be freed right after. */
static hdal_error *gpu_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                            const void *src, uint64_t src_offset, size_t n, const intptr_t *stream) {
  hdal__gpu *g = state;
  const hdal__gpu_driver *drv = g->drv;
  hdal__gpu_device *dd = dst_dev, *sd = src_dev;
  if (n == 0) return NULL;
  /* One address space (no peer copy): the destination's copy reads the source where the runtime lets it. */
  if (sd != dd && !drv->peer && !peer_reach(dd, sd)) return staged_copy(g, dd, dst, dst_offset, sd, src, src_offset, n);
  hdal__gpu_saved sv, src_sv;
  int r = drv->enter(dd, &sv);
  if (r != HDAL__GPU_SUCCESS) return drv->enter_error(dd, r, &sv);
  if (sd != dd && (r = peer_enter(sd, &src_sv)) != HDAL__GPU_SUCCESS) {
    drv->leave(dd, &sv);
    return drv->enter_error(sd, r, &src_sv);
  }
  if (sd != dd && drv->peer) (void)peer_reach(dd, sd); /* enabled where granted: the peer copy then goes directly */
  void *to = ptr_of(dst, dst_offset);
  const void *from = ptr_of(src, src_offset);
  r = finish(dd, device_copy(dd, to, sd, from, n, stream), stream);
  drv->leave(dd, &sv);
  return r == HDAL__GPU_SUCCESS ? NULL
                                : hdal__gpu_error(g, r, "copying %zu bytes from %s device %d to %s device %d", n,
                                                  drv->vendor, sd->ordinal, drv->vendor, dd->ordinal);
}

/* Orders stream 0 (hdal's) after what is queued on `stream`: an event
 * recorded there and waited for here; a stream the event cannot be recorded
 * on (another context's or device's) is synchronised instead.  `d` is current. */
static int order_after(hdal__gpu_device *d, intptr_t stream) {
  const hdal__gpu_driver *drv = d->gpu->drv;
  if (!has_streams(drv)) return HDAL__GPU_SUCCESS; /* no stream of the caller's: nothing queued there */
  void *ev = NULL;
  int r = drv->event_record(d, stream, &ev);
  if (r == HDAL__GPU_SUCCESS) {
    r = drv->stream_wait_event(d, 0, ev);
    drv->event_destroy(d, ev);
  }
  return r == HDAL__GPU_SUCCESS ? r : finish(d, HDAL__GPU_SUCCESS, &stream);
}

static hdal_error *gpu_stream_wait(void *state, void *dev, intptr_t stream) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  hdal__gpu_saved sv;
  int r = g->drv->enter(d, &sv);
  if (r != HDAL__GPU_SUCCESS) return g->drv->enter_error(d, r, &sv);
  r = order_after(d, stream);
  g->drv->leave(d, &sv);
  return r == HDAL__GPU_SUCCESS ? NULL
                                : hdal__gpu_error(g, r, "waiting for stream 0x%llx on %s device %d",
                                                  (unsigned long long)stream, g->drv->vendor, d->ordinal);
}

/* Stream 0, hdal's work stream, synchronised: it comes after every blocking
 * stream's work too.  A runtime without streams has nothing queued. */
static hdal_error *gpu_synchronize(void *state, void *dev) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  if (!has_streams(g->drv)) return NULL;
  hdal__gpu_saved sv;
  int r = g->drv->enter(d, &sv);
  if (r != HDAL__GPU_SUCCESS) return g->drv->enter_error(d, r, &sv);
  r = finish(d, HDAL__GPU_SUCCESS, NULL);
  g->drv->leave(d, &sv);
  return r == HDAL__GPU_SUCCESS ? NULL : hdal__gpu_error(g, r, "synchronising %s device %d", g->drv->vendor, d->ordinal);
}

/* The driver's handles; a failure to make one (CUDA's primary context) is named as entering would name it. */
static bool gpu_native_handle(void *state, void *dev, hdal_native_handle which, intptr_t *handle, hdal_error **error) {
  hdal__gpu *g = state;
  hdal__gpu_device *d = dev;
  hdal__gpu_saved sv = {0};
  int r = g->drv->native_handle(d, which, handle, &sv);
  if (r == HDAL__GPU_NO_HANDLE) return false;
  if (r != HDAL__GPU_SUCCESS) *error = g->drv->enter_error(d, r, &sv);
  return true;
}

/* The runtime's answer each way: peer access is a property of an ordered pair
 * (a may map b's memory while b may not map a's), and hdal_device_link()
 * reports it only where both hold.  The query needs no device current. */
static hdal_error *gpu_peer_access(void *state, void *a, void *b, bool *can) {
  hdal__gpu *g = state;
  const hdal__gpu_driver *drv = g->drv;
  hdal__gpu_device *da = a, *db = b;
  *can = false;
  if (!drv->can_access_peer) return NULL;
  hdal__gpu_device *from[2] = {da, db}, *to[2] = {db, da};
  for (int i = 0; i < 2; i++) {
    int yes = 0;
    int r = drv->can_access_peer(from[i], to[i], &yes);
    if (r != HDAL__GPU_SUCCESS)
      return hdal__gpu_error(g, r, "%s from %s device %d to %s device %d", drv->peer_query_name, drv->vendor,
                             from[i]->ordinal, drv->vendor, to[i]->ordinal);
    if (!yes) return NULL;
  }
  *can = true;
  return NULL;
}

static bool gpu_fabric(void *state, void *a, void *b, hdal_link *out) {
  const hdal__gpu_driver *drv = ((hdal__gpu *)state)->drv;
  return drv->fabric && drv->fabric(a, b, out);
}

const hdal_backend_buffer_ops hdal__gpu_buffer_ops = {
    .can_alias = gpu_can_alias,
    .route = gpu_route,
    .allocate = gpu_allocate,
    .release = gpu_release,
    .write = gpu_write,
    .read = gpu_read,
    .copy = gpu_copy,
    .stream_wait = gpu_stream_wait,
    .fence = gpu_fence,
    .fence_done = gpu_fence_done,
    .runtime_pool = gpu_runtime_pool,
    .synchronize = gpu_synchronize,
    .native_handle = gpu_native_handle,
    .peer_access = gpu_peer_access,
    .fabric = gpu_fabric,
};
