/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — buffer operations in the devices' primary contexts.
 *
 * Handles are CUdeviceptr values cast to void *.  Each operation makes the
 * device's primary context current for its own duration and pops it again, so
 * the caller's context stack is left as found.  hdal's own work goes on the
 * legacy default stream; when the caller names a stream, the copy is issued on
 * it and waited for, so that it comes after the work already queued there.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "cuda.h"

static CUdeviceptr ptr_of(const void *handle, uint64_t offset) { return (CUdeviceptr)(uintptr_t)handle + offset; }

/* The primary context of `d`, retained on first use (finalize releases it). */
static CUresult primary_context(hdal__cuda_device *d, CUcontext *out) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&d->lock);
  if (!d->ctx) {
    CUcontext c = NULL;
    r = d->s->drv.cuDevicePrimaryCtxRetain(&c, d->dev);
    if (r == CUDA_SUCCESS) d->ctx = c;
  }
  *out = d->ctx;
  pthread_mutex_unlock(&d->lock);
  return r;
}

/* Makes the primary context of `d` current; *what names the call that failed. */
static CUresult enter(hdal__cuda_device *d, const char **what) {
  CUcontext c;
  CUresult r = primary_context(d, &c);
  *what = "cuDevicePrimaryCtxRetain";
  if (r == CUDA_SUCCESS) {
    r = d->s->drv.cuCtxPushCurrent(c);
    *what = "cuCtxPushCurrent";
  }
  return r;
}

static void leave(hdal__cuda_device *d) {
  CUcontext c;
  d->s->drv.cuCtxPopCurrent(&c);
}

static hdal_error *enter_error(hdal__cuda_device *d, CUresult r, const char *what) {
  return hdal__cuda_error(d->s, r, "%s (CUDA device %d)", what, d->ordinal);
}

/* What the driver says of an address. */
typedef struct {
  int type; /* CU_MEMORYTYPE_*, 0 when the driver does not know the address */
  bool managed;
  int ordinal;
} pointer_info;

static bool pointer_query(hdal__cuda_state *s, CUdeviceptr p, pointer_info *pi) {
  /* Drivers write these attributes as int or bool: zeroed 8-byte words read either. */
  union {
    uint64_t u;
    int32_t i;
  } type = {0}, managed = {0}, ordinal = {0};
  int attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *data[3] = {&type, &managed, &ordinal};
  if (s->drv.cuPointerGetAttributes(3, attrs, data, p) != CUDA_SUCCESS) return false;
  pi->type = type.i;
  pi->managed = managed.u != 0;
  pi->ordinal = ordinal.i;
  return pi->type != 0 || pi->managed;
}

static bool addresses_are_pointers(int device_type) {
  return device_type == kDLCPU || device_type == kDLCUDA || device_type == kDLCUDAHost ||
         device_type == kDLCUDAManaged;
}

/* Zero-copy when the driver says the memory is on this device, managed, or
 * pinned host memory that the device maps at the same address. */
static bool cuda_can_alias(void *state, void *dev, const DLTensor *t) {
  hdal__cuda_state *s = state;
  hdal__cuda_device *d = dev;
  if (!addresses_are_pointers(t->device.device_type) || !t->data) return false;
  CUdeviceptr p = ptr_of(t->data, t->byte_offset);
  pointer_info pi;
  if (!pointer_query(s, p, &pi)) return false;
  if (pi.managed) return true;
  if (pi.type == CU_MEMORYTYPE_DEVICE) return pi.ordinal == d->ordinal;
  if (pi.type != CU_MEMORYTYPE_HOST) return false;
  /* Pinned host memory: its device address is a property of the current context. */
  const char *what;
  if (enter(d, &what) != CUDA_SUCCESS) return false;
  CUdeviceptr mapped = 0;
  CUresult r = s->drv.cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p);
  leave(d);
  return r == CUDA_SUCCESS && mapped == p;
}

/* device_id is the CUDA ordinal; for kDLCUDA the driver must agree on where the
 * data is.  An ordinal out of range is left to the core, which names it the
 * same way for every backend. */
static hdal_error *cuda_route(void *state, const DLTensor *t, size_t *local_index) {
  hdal__cuda_state *s = state;
  int id = t->device.device_id;
  *local_index = id < 0 ? SIZE_MAX : (size_t)id; /* devices are listed by ordinal, all of them */
  if (id < 0 || id >= s->ndevices || t->device.device_type != kDLCUDA || !t->data) return NULL;
  CUdeviceptr p = ptr_of(t->data, t->byte_offset);
  pointer_info pi;
  if (!pointer_query(s, p, &pi))
    return s->host->error_new(HDAL_INVALID_ARGUMENT,
                              "DLPack tensor on (kDLCUDA, %d): the CUDA driver does not know its data 0x%llx", id, p);
  if (!pi.managed && pi.type == CU_MEMORYTYPE_DEVICE && pi.ordinal != id)
    return s->host->error_new(HDAL_INVALID_ARGUMENT,
                              "DLPack tensor claims CUDA device %d, but the driver says its data 0x%llx is on CUDA "
                              "device %d",
                              id, p, pi.ordinal);
  return NULL;
}

static hdal_error *cuda_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  hdal__cuda_device *d = dev;
  const char *what;
  CUresult er = enter(d, &what);
  if (er != CUDA_SUCCESS) return enter_error(d, er, what);
  CUdeviceptr p = 0;
  /* cuMemAlloc refuses 0 bytes; an empty buffer still gets a distinct address.
   * With the device's memory pool, the allocation is ordered on the legacy
   * stream, which hdal's copies use. */
  CUresult r = d->async ? d->s->drv.cuMemAllocAsync(&p, nbytes ? nbytes : 1, NULL)
                        : d->s->drv.cuMemAlloc(&p, nbytes ? nbytes : 1);
  leave(d);
  if (r != CUDA_SUCCESS)
    return hdal__cuda_error(d->s, r, "%s of %zu bytes on CUDA device %d", d->async ? "cuMemAllocAsync" : "cuMemAlloc",
                            nbytes, d->ordinal);
  *handle = (void *)(uintptr_t)p;
  return NULL;
}

static void cuda_release(void *state, void *dev, void *handle) {
  hdal__cuda_device *d = dev;
  const char *what;
  if (enter(d, &what) != CUDA_SUCCESS) {
    /* Without the context (it could not be made current): cuMemFree takes any
     * device pointer, the pool's too, synchronising. */
    d->s->drv.cuMemFree(ptr_of(handle, 0));
    return;
  }
  /* cuMemFreeAsync: reused by the pool only after the legacy stream's work so
   * far (and so every blocking stream's); cuMemFree waits for the device. */
  if (d->async) d->s->drv.cuMemFreeAsync(ptr_of(handle, 0), NULL);
  else d->s->drv.cuMemFree(ptr_of(handle, 0));
  leave(d);
}

/* hdal's pool: a block goes back behind an event on the legacy stream, which
 * comes after the work queued there and on every blocking stream. */
static hdal_error *cuda_fence(void *state, void *dev, void *handle, void **fence) {
  hdal__cuda_device *d = dev;
  const hdal__cuda_driver *drv = &d->s->drv;
  *fence = NULL;
  if (!drv->cuEventQuery || !drv->cuEventSynchronize)
    return d->s->host->error_new(HDAL_UNIMPLEMENTED, "the CUDA driver has no cuEventQuery");
  const char *what;
  CUresult r = enter(d, &what);
  if (r != CUDA_SUCCESS) return enter_error(d, r, what);
  CUevent ev = NULL;
  r = drv->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && (r = drv->cuEventRecord(ev, NULL)) != CUDA_SUCCESS) drv->cuEventDestroy(ev);
  leave(d);
  if (r != CUDA_SUCCESS) return hdal__cuda_error(d->s, r, "recording an event on CUDA device %d", d->ordinal);
  *fence = ev;
  return NULL;
}

static bool cuda_fence_done(void *state, void *dev, void *fence, bool wait) {
  hdal__cuda_device *d = dev;
  const hdal__cuda_driver *drv = &d->s->drv;
  const char *what;
  if (enter(d, &what) != CUDA_SUCCESS) {
    if (wait) drv->cuEventDestroy(fence); /* given up on: nothing more can be learnt of it */
    return wait;
  }
  CUresult r = wait ? drv->cuEventSynchronize(fence) : drv->cuEventQuery(fence);
  bool done = r != CUDA_ERROR_NOT_READY || wait; /* an error: the event will never say more */
  if (done) drv->cuEventDestroy(fence);
  leave(d);
  return done;
}

/* The device's default memory pool (CUDA 11.2+), kept whole between uses:
 * its release threshold is raised so that synchronisation keeps what it caches. */
static bool cuda_runtime_pool(void *state, void *dev, hdal_backend_pool_request req, uint64_t *reserved) {
  hdal__cuda_device *d = dev;
  const hdal__cuda_driver *drv = &d->s->drv;
  *reserved = 0;
  const char *what;
  if (req == HDAL_BACKEND_POOL_ENABLE) {
    int supported = 0;
    if (!drv->cuDeviceGetDefaultMemPool || !drv->cuMemPoolSetAttribute || !drv->cuMemPoolGetAttribute ||
        !drv->cuMemPoolTrimTo || !drv->cuMemAllocAsync || !drv->cuMemFreeAsync ||
        drv->cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev) != CUDA_SUCCESS ||
        !supported || enter(d, &what) != CUDA_SUCCESS)
      return false;
    CUmemoryPool pool = NULL;
    uint64_t keep = UINT64_MAX;
    bool ok = drv->cuDeviceGetDefaultMemPool(&pool, d->dev) == CUDA_SUCCESS &&
              drv->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == CUDA_SUCCESS;
    leave(d);
    if (!ok) return false;
    d->mempool = pool;
    d->async = true;
  }
  if (!d->async) return false;
  if (req == HDAL_BACKEND_POOL_TRIM && enter(d, &what) == CUDA_SUCCESS) {
    drv->cuStreamSynchronize(NULL); /* frees still queued are not released otherwise */
    drv->cuMemPoolTrimTo(d->mempool, 0);
    leave(d);
  }
  uint64_t v = 0;
  if (drv->cuMemPoolGetAttribute(d->mempool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
    return false; /* cannot say */
  *reserved = v;
  return true;
}

/* Waits for `stream` (the legacy default stream when NULL). */
static CUresult finish(hdal__cuda_state *s, CUresult r, const intptr_t *stream) {
  return r == CUDA_SUCCESS ? s->drv.cuStreamSynchronize(stream ? (CUstream)*stream : NULL) : r;
}

/* Host <-> device, synchronous, or ordered on `stream` and waited for. */
static hdal_error *transfer(hdal__cuda_device *d, bool to_device, const void *handle, uint64_t offset, void *host,
                            size_t n, const intptr_t *stream) {
  if (n == 0) return NULL;
  const char *what;
  CUresult er = enter(d, &what);
  if (er != CUDA_SUCCESS) return enter_error(d, er, what);
  const hdal__cuda_driver *drv = &d->s->drv;
  CUdeviceptr p = ptr_of(handle, offset);
  CUresult r;
  if (stream)
    r = finish(d->s, to_device ? drv->cuMemcpyHtoDAsync(p, host, n, (CUstream)*stream)
                               : drv->cuMemcpyDtoHAsync(host, p, n, (CUstream)*stream), stream);
  else
    r = to_device ? drv->cuMemcpyHtoD(p, host, n) : drv->cuMemcpyDtoH(host, p, n);
  leave(d);
  return r == CUDA_SUCCESS ? NULL
                           : hdal__cuda_error(d->s, r, "copying %zu bytes %s CUDA device %d", n,
                                              to_device ? "to" : "from", d->ordinal);
}

static hdal_error *cuda_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                              const intptr_t *stream) {
  return transfer(dev, true, handle, offset, (void *)src, n, stream);
}

static hdal_error *cuda_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                             const intptr_t *stream) {
  return transfer(dev, false, handle, offset, dst, n, stream);
}

/* Device to device; done when it returns, since the source may be freed right after. */
static hdal_error *cuda_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                             const void *src, uint64_t src_offset, size_t n, const intptr_t *stream) {
  hdal__cuda_device *dd = dst_dev, *sd = src_dev;
  if (n == 0) return NULL;
  CUcontext src_ctx = NULL;
  const char *what;
  CUresult er = enter(dd, &what);
  if (er != CUDA_SUCCESS) return enter_error(dd, er, what);
  if (sd != dd && (er = primary_context(sd, &src_ctx)) != CUDA_SUCCESS) {
    leave(dd);
    return enter_error(sd, er, "cuDevicePrimaryCtxRetain");
  }
  const hdal__cuda_driver *drv = &dd->s->drv;
  CUdeviceptr to = ptr_of(dst, dst_offset), from = ptr_of(src, src_offset);
  CUstream st = stream ? (CUstream)*stream : NULL;
  CUresult r;
  if (sd == dd)
    r = stream ? drv->cuMemcpyDtoDAsync(to, from, n, st) : drv->cuMemcpyDtoD(to, from, n);
  else
    r = stream ? drv->cuMemcpyPeerAsync(to, dd->ctx, from, src_ctx, n, st)
               : drv->cuMemcpyPeer(to, dd->ctx, from, src_ctx, n);
  r = finish(dd->s, r, stream);
  leave(dd);
  return r == CUDA_SUCCESS ? NULL
                           : hdal__cuda_error(dd->s, r, "copying %zu bytes from CUDA device %d to CUDA device %d", n,
                                              sd->ordinal, dd->ordinal);
}

/* Orders the legacy default stream (hdal's) after what is queued on `stream`:
 * an event recorded there and waited for here; a stream the event cannot be
 * recorded on (another context's) is synchronised instead. */
static hdal_error *cuda_stream_wait(void *state, void *dev, intptr_t stream) {
  hdal__cuda_device *d = dev;
  const hdal__cuda_driver *drv = &d->s->drv;
  const char *what;
  CUresult er = enter(d, &what);
  if (er != CUDA_SUCCESS) return enter_error(d, er, what);
  CUevent ev = NULL;
  CUresult r = drv->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) {
    r = drv->cuEventRecord(ev, (CUstream)stream);
    if (r == CUDA_SUCCESS) r = drv->cuStreamWaitEvent(NULL, ev, 0);
    drv->cuEventDestroy(ev);
  }
  if (r != CUDA_SUCCESS) r = drv->cuStreamSynchronize((CUstream)stream);
  leave(d);
  return r == CUDA_SUCCESS ? NULL
                           : hdal__cuda_error(d->s, r, "waiting for stream 0x%llx on CUDA device %d",
                                              (unsigned long long)stream, d->ordinal);
}

const hdal_backend_buffer_ops hdal__cuda_buffer_ops = {
    .struct_size = sizeof(hdal_backend_buffer_ops),
    .can_alias = cuda_can_alias,
    .route = cuda_route,
    .allocate = cuda_allocate,
    .release = cuda_release,
    .write = cuda_write,
    .read = cuda_read,
    .copy = cuda_copy,
    .stream_wait = cuda_stream_wait,
    .fence = cuda_fence,
    .fence_done = cuda_fence_done,
    .runtime_pool = cuda_runtime_pool,
};
