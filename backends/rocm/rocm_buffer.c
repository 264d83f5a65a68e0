/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — buffer operations on HIP devices.
 *
 * Handles are device pointers.  HIP's current device is per thread: each
 * operation makes its device current for its own duration and restores the
 * caller's, so the caller's state is left as found.  hdal's own work goes on
 * the device's null stream; when the caller names a stream, the copy is
 * issued on it and waited for, so that it comes after the work queued there.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "rocm.h"

static void *ptr_of(const void *handle, uint64_t offset) { return (char *)handle + offset; }

/* Makes `d` current; *prev is the caller's device, to give back to leave(). */
static hipError_t enter(hdal__rocm_device *d, int *prev) {
  const hdal__hip_runtime *rt = &d->s->rt;
  hipError_t r = rt->hipGetDevice(prev);
  if (r == hipSuccess && *prev != d->ordinal) r = rt->hipSetDevice(d->ordinal);
  return r;
}

static void leave(hdal__rocm_device *d, int prev) {
  if (prev != d->ordinal) d->s->rt.hipSetDevice(prev);
}

static hdal_error *enter_error(hdal__rocm_device *d, hipError_t r) {
  return hdal__rocm_error(d->s, r, "selecting ROCm device %d", d->ordinal);
}

/* What the runtime says of an address, in either ABI's numbering. */
typedef enum { MEM_UNKNOWN, MEM_HOST, MEM_DEVICE, MEM_MANAGED, MEM_OTHER } mem_kind;
typedef struct {
  mem_kind kind;
  int device;
  void *device_pointer;
} pointer_info;

static void pointer_query(hdal__rocm_state *s, const void *p, pointer_info *pi) {
  hdal__hip_pointer_attributes a;
  memset(&a, 0, sizeof a);
  memset(pi, 0, sizeof *pi);
  if (s->rt.hipPointerGetAttributes(&a, p) != hipSuccess) return; /* ROCm 5: memory it does not know */
  if (s->abi == 5)
    pi->kind = a.type == HIP5_MEMORY_HOST ? MEM_HOST : a.type == HIP5_MEMORY_DEVICE ? MEM_DEVICE : MEM_OTHER;
  else
    pi->kind = a.type == HIP6_MEMORY_UNREGISTERED ? MEM_UNKNOWN
               : a.type == HIP6_MEMORY_HOST      ? MEM_HOST
               : a.type == HIP6_MEMORY_DEVICE    ? MEM_DEVICE
               : a.type == HIP6_MEMORY_MANAGED   ? MEM_MANAGED
                                                 : MEM_OTHER;
  if (a.isManaged && pi->kind != MEM_UNKNOWN) pi->kind = MEM_MANAGED;
  pi->device = a.device;
  pi->device_pointer = a.devicePointer;
}

static bool addresses_are_pointers(int device_type) {
  return device_type == kDLCPU || device_type == kDLROCM || device_type == kDLROCMHost;
}

/* Zero-copy when the runtime says the memory is on this device, managed, or
 * pinned host memory that the devices map at the same address. */
static bool rocm_can_alias(void *state, void *dev, const DLTensor *t) {
  hdal__rocm_device *d = dev;
  if (!addresses_are_pointers(t->device.device_type) || !t->data) return false;
  const void *p = ptr_of(t->data, t->byte_offset);
  pointer_info pi;
  pointer_query(state, p, &pi);
  if (pi.kind == MEM_MANAGED) return true;
  if (pi.kind == MEM_DEVICE) return pi.device == d->ordinal;
  return pi.kind == MEM_HOST && pi.device_pointer == p;
}

/* device_id is the HIP ordinal; for kDLROCM the runtime must agree on where
 * the data is.  An ordinal out of range is left to the core. */
static hdal_error *rocm_route(void *state, const DLTensor *t, size_t *local_index) {
  hdal__rocm_state *s = state;
  int id = t->device.device_id;
  *local_index = id < 0 ? SIZE_MAX : (size_t)id; /* devices are listed by ordinal, all of them */
  if (id < 0 || id >= s->ndevices || t->device.device_type != kDLROCM || !t->data) return NULL;
  const void *p = ptr_of(t->data, t->byte_offset);
  pointer_info pi;
  pointer_query(s, p, &pi);
  if (pi.kind == MEM_UNKNOWN)
    return s->host->error_new(HDAL_INVALID_ARGUMENT,
                              "DLPack tensor on (kDLROCM, %d): the HIP runtime does not know its data %p", id, p);
  if (pi.kind == MEM_DEVICE && pi.device != id)
    return s->host->error_new(HDAL_INVALID_ARGUMENT,
                              "DLPack tensor claims ROCm device %d, but the runtime says its data %p is on ROCm "
                              "device %d",
                              id, p, pi.device);
  return NULL;
}

static hdal_error *rocm_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  hdal__rocm_device *d = dev;
  int prev;
  hipError_t r = enter(d, &prev);
  if (r != hipSuccess) return enter_error(d, r);
  void *p = NULL;
  /* hipMalloc gives NULL for 0 bytes; an empty buffer still gets a distinct
   * address.  With the device's memory pool, the allocation is ordered on the
   * null stream, which hdal's copies use. */
  r = d->async ? d->s->rt.hipMallocAsync(&p, nbytes ? nbytes : 1, NULL) : d->s->rt.hipMalloc(&p, nbytes ? nbytes : 1);
  leave(d, prev);
  if (r != hipSuccess)
    return hdal__rocm_error(d->s, r, "%s of %zu bytes on ROCm device %d", d->async ? "hipMallocAsync" : "hipMalloc",
                            nbytes, d->ordinal);
  *handle = p;
  return NULL;
}

static void rocm_release(void *state, void *dev, void *handle) {
  hdal__rocm_device *d = dev;
  int prev;
  if (enter(d, &prev) != hipSuccess) {
    /* Without the device selected: hipFree takes any device pointer, the
     * pool's too, synchronising. */
    d->s->rt.hipFree(handle);
    return;
  }
  /* hipFreeAsync: reused by the pool only after the null stream's work so far
   * (and so every blocking stream's); hipFree waits for the device. */
  if (d->async) d->s->rt.hipFreeAsync(handle, NULL);
  else d->s->rt.hipFree(handle);
  leave(d, prev);
}

/* hdal's pool: a block goes back behind an event on the device's null stream,
 * which comes after the work queued there and on every blocking stream.  The
 * runtime's pool takes none: hipFreeAsync is ordered on that stream itself. */
static hdal_error *rocm_fence(void *state, void *dev, void *handle, void **fence) {
  hdal__rocm_device *d = dev;
  const hdal__hip_runtime *rt = &d->s->rt;
  *fence = NULL;
  if (!rt->hipEventQuery || !rt->hipEventSynchronize)
    return d->s->host->error_new(HDAL_UNIMPLEMENTED, "the HIP runtime has no hipEventQuery");
  int prev;
  hipError_t r = enter(d, &prev); /* the null stream is the current device's */
  if (r != hipSuccess) return enter_error(d, r);
  hipEvent_t ev = NULL;
  r = rt->hipEventCreateWithFlags(&ev, hipEventDisableTiming);
  if (r == hipSuccess && (r = rt->hipEventRecord(ev, NULL)) != hipSuccess) rt->hipEventDestroy(ev);
  leave(d, prev);
  if (r != hipSuccess) return hdal__rocm_error(d->s, r, "recording an event on ROCm device %d", d->ordinal);
  *fence = ev;
  return NULL;
}

/* An event knows its device: querying, waiting for and destroying it need no
 * current device, so the caller's is not touched. */
static bool rocm_fence_done(void *state, void *dev, void *fence, bool wait) {
  hdal__rocm_device *d = dev;
  const hdal__hip_runtime *rt = &d->s->rt;
  hipError_t r = wait ? rt->hipEventSynchronize(fence) : rt->hipEventQuery(fence);
  bool done = r != hipErrorNotReady || wait; /* an error: the event will never say more */
  if (done) rt->hipEventDestroy(fence);
  return done;
}

/* The device's default memory pool (ROCm 5.1+), kept whole between uses: its
 * release threshold is raised so that synchronisation keeps what it caches.
 * Whether the device has one is the runtime's answer to these calls. */
static bool rocm_runtime_pool(void *state, void *dev, hdal_backend_pool_request req, uint64_t *reserved) {
  hdal__rocm_device *d = dev;
  const hdal__hip_runtime *rt = &d->s->rt;
  *reserved = 0;
  int prev;
  if (req == HDAL_BACKEND_POOL_ENABLE) {
    if (!hdal__rocm_has_mempools(rt) || enter(d, &prev) != hipSuccess) return false;
    hipMemPool_t pool = NULL;
    uint64_t keep = UINT64_MAX;
    bool ok = rt->hipDeviceGetDefaultMemPool(&pool, d->ordinal) == hipSuccess && pool &&
              rt->hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep) == hipSuccess;
    leave(d, prev);
    if (!ok) return false;
    d->mempool = pool;
    d->async = true;
  }
  if (!d->async) return false;
  if (req == HDAL_BACKEND_POOL_TRIM && enter(d, &prev) == hipSuccess) {
    rt->hipStreamSynchronize(NULL); /* frees still queued are not released otherwise */
    rt->hipMemPoolTrimTo(d->mempool, 0);
    leave(d, prev);
  }
  uint64_t v = 0;
  if (rt->hipMemPoolGetAttribute(d->mempool, hipMemPoolAttrReservedMemCurrent, &v) != hipSuccess)
    return false; /* cannot say */
  *reserved = v;
  return true;
}

/* The default pool outlives hdal's context, with the threshold hdal raised:
 * what it caches for hdal goes back to the device with the context. */
void hdal__rocm_pools_trim(hdal__rocm_state *s) {
  uint64_t ignored;
  for (int i = 0; i < s->ndevices; i++)
    if (s->devices[i].async) rocm_runtime_pool(s, &s->devices[i], HDAL_BACKEND_POOL_TRIM, &ignored);
}

/* Waits for `stream` (the null stream when NULL). */
static hipError_t finish(hdal__rocm_state *s, hipError_t r, const intptr_t *stream) {
  return r == hipSuccess ? s->rt.hipStreamSynchronize(stream ? (hipStream_t)*stream : NULL) : r;
}

/* Host <-> device, synchronous, or ordered on `stream` and waited for. */
static hdal_error *transfer(hdal__rocm_device *d, bool to_device, const void *handle, uint64_t offset, void *host,
                            size_t n, const intptr_t *stream) {
  if (n == 0) return NULL;
  int prev;
  hipError_t r = enter(d, &prev);
  if (r != hipSuccess) return enter_error(d, r);
  const hdal__hip_runtime *rt = &d->s->rt;
  void *p = ptr_of(handle, offset);
  void *dst = to_device ? p : host;
  const void *src = to_device ? host : p;
  if (stream)
    r = finish(d->s, rt->hipMemcpyAsync(dst, src, n, hipMemcpyDefault, (hipStream_t)*stream), stream);
  else
    r = rt->hipMemcpy(dst, src, n, hipMemcpyDefault);
  leave(d, prev);
  return r == hipSuccess ? NULL
                         : hdal__rocm_error(d->s, r, "copying %zu bytes %s ROCm device %d", n, to_device ? "to" : "from",
                                            d->ordinal);
}

static hdal_error *rocm_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                              const intptr_t *stream) {
  return transfer(dev, true, handle, offset, (void *)src, n, stream);
}

static hdal_error *rocm_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                             const intptr_t *stream) {
  return transfer(dev, false, handle, offset, dst, n, stream);
}

/* Device to device; done when it returns, since the source may be freed right after. */
static hdal_error *rocm_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                             const void *src, uint64_t src_offset, size_t n, const intptr_t *stream) {
  hdal__rocm_device *dd = dst_dev, *sd = src_dev;
  if (n == 0) return NULL;
  int prev;
  hipError_t r = enter(dd, &prev);
  if (r != hipSuccess) return enter_error(dd, r);
  const hdal__hip_runtime *rt = &dd->s->rt;
  void *to = ptr_of(dst, dst_offset);
  const void *from = ptr_of(src, src_offset);
  hipStream_t st = stream ? (hipStream_t)*stream : NULL;
  if (sd == dd)
    r = stream ? rt->hipMemcpyAsync(to, from, n, hipMemcpyDefault, st) : rt->hipMemcpy(to, from, n, hipMemcpyDefault);
  else
    r = stream ? rt->hipMemcpyPeerAsync(to, dd->ordinal, from, sd->ordinal, n, st)
               : rt->hipMemcpyPeer(to, dd->ordinal, from, sd->ordinal, n);
  r = finish(dd->s, r, stream);
  leave(dd, prev);
  return r == hipSuccess ? NULL
                         : hdal__rocm_error(dd->s, r, "copying %zu bytes from ROCm device %d to ROCm device %d", n,
                                            sd->ordinal, dd->ordinal);
}

/* Orders the null stream (hdal's) after what is queued on `stream`: an event
 * recorded there and waited for here; a stream the event cannot be recorded
 * on (another device's) is synchronised instead. */
static hdal_error *rocm_stream_wait(void *state, void *dev, intptr_t stream) {
  hdal__rocm_device *d = dev;
  const hdal__hip_runtime *rt = &d->s->rt;
  int prev;
  hipError_t r = enter(d, &prev);
  if (r != hipSuccess) return enter_error(d, r);
  hipEvent_t ev = NULL;
  r = rt->hipEventCreateWithFlags(&ev, hipEventDisableTiming);
  if (r == hipSuccess) {
    r = rt->hipEventRecord(ev, (hipStream_t)stream);
    if (r == hipSuccess) r = rt->hipStreamWaitEvent(NULL, ev, 0);
    rt->hipEventDestroy(ev);
  }
  if (r != hipSuccess) r = rt->hipStreamSynchronize((hipStream_t)stream);
  leave(d, prev);
  return r == hipSuccess ? NULL
                         : hdal__rocm_error(d->s, r, "waiting for stream 0x%llx on ROCm device %d",
                                            (unsigned long long)stream, d->ordinal);
}

const hdal_backend_buffer_ops hdal__rocm_buffer_ops = {
    .struct_size = sizeof(hdal_backend_buffer_ops),
    .can_alias = rocm_can_alias,
    .route = rocm_route,
    .allocate = rocm_allocate,
    .release = rocm_release,
    .write = rocm_write,
    .read = rocm_read,
    .copy = rocm_copy,
    .stream_wait = rocm_stream_wait,
    .fence = rocm_fence,
    .fence_done = rocm_fence_done,
    .runtime_pool = rocm_runtime_pool,
};
