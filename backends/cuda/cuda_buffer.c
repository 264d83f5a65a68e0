/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — the driver's entry points behind the GPU layer's buffer
 * operations (backends/gpu_buffer.c).
 *
 * Handles are CUdeviceptr values cast to void *.  A device is made current by
 * pushing its primary context, retained on first use, and popping it again,
 * so the caller's context stack is left as found.  hdal's stream 0 is the
 * legacy default stream.
 */
#include "config.h"
#include "cuda.h"

#define CU(p) ((CUdeviceptr)(uintptr_t)(p))
#define STREAM(s) ((CUstream)(s))

static hdal__cuda_device *cuda_dev(hdal__gpu_device *d) { return (hdal__cuda_device *)d; }
static const hdal__cuda_driver *drv_of(const hdal__gpu *g) { return &((const hdal__cuda_state *)g)->drv; }
static const hdal__cuda_driver *drv(hdal__gpu_device *d) { return drv_of(d->gpu); }

/* The primary context of `d`, retained on first use (finalize releases it). */
static int primary_context(hdal__gpu_device *gd, hdal__gpu_saved *sv) {
  hdal__cuda_device *d = cuda_dev(gd);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&d->lock);
  if (!d->ctx) {
    CUcontext c = NULL;
    r = drv(gd)->cuDevicePrimaryCtxRetain(&c, d->dev);
    if (r == CUDA_SUCCESS) d->ctx = c;
  }
  pthread_mutex_unlock(&d->lock);
  sv->what = "cuDevicePrimaryCtxRetain";
  return r;
}

static int enter(hdal__gpu_device *d, hdal__gpu_saved *sv) {
  CUresult r = primary_context(d, sv);
  if (r == CUDA_SUCCESS) {
    r = drv(d)->cuCtxPushCurrent(cuda_dev(d)->ctx);
    sv->what = "cuCtxPushCurrent";
  }
  return r;
}

static void leave(hdal__gpu_device *d, const hdal__gpu_saved *sv) {
  CUcontext c;
  drv(d)->cuCtxPopCurrent(&c);
}

static hdal_error *enter_error(hdal__gpu_device *d, int r, const hdal__gpu_saved *sv) {
  return hdal__gpu_error(d->gpu, r, "%s (CUDA device %d)", sv->what, d->ordinal);
}

static void pointer_query(hdal__gpu *g, const void *p, hdal__gpu_pointer *pi) {
  /* Drivers write these attributes as int or bool: zeroed 8-byte words read either. */
  union {
    uint64_t u;
    int32_t i;
  } type = {0}, managed = {0}, ordinal = {0};
  int attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *data[3] = {&type, &managed, &ordinal};
  *pi = (hdal__gpu_pointer){HDAL__GPU_MEM_UNKNOWN, 0, NULL};
  if (drv_of(g)->cuPointerGetAttributes(3, attrs, data, CU(p)) != CUDA_SUCCESS) return;
  pi->device = ordinal.i;
  if (managed.u) pi->kind = HDAL__GPU_MEM_MANAGED;
  else if (type.i) pi->kind = type.i == CU_MEMORYTYPE_DEVICE ? HDAL__GPU_MEM_DEVICE
                              : type.i == CU_MEMORYTYPE_HOST ? HDAL__GPU_MEM_HOST
                                                             : HDAL__GPU_MEM_OTHER;
}

/* Pinned host memory: its device address is a property of the current context. */
static bool host_mapped(hdal__gpu_device *d, const void *p, const hdal__gpu_pointer *pi) {
  hdal__gpu_saved sv;
  if (enter(d, &sv) != CUDA_SUCCESS) return false;
  CUdeviceptr mapped = 0;
  CUresult r = drv(d)->cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU(p));
  leave(d, &sv);
  return r == CUDA_SUCCESS && mapped == CU(p);
}

static int alloc_fn(hdal__gpu_device *d, size_t n, void **p) {
  CUdeviceptr v = 0;
  CUresult r = d->async ? drv(d)->cuMemAllocAsync(&v, n, NULL) : drv(d)->cuMemAlloc(&v, n);
  *p = (void *)(uintptr_t)v;
  return r;
}

static void free_fn(hdal__gpu_device *d, void *p, bool async) {
  if (async) drv(d)->cuMemFreeAsync(CU(p), NULL);
  else drv(d)->cuMemFree(CU(p));
}

static int copy(hdal__gpu_device *d, hdal__gpu_direction dir, void *dst, const void *src, size_t n,
                const intptr_t *stream) {
  const hdal__cuda_driver *f = drv(d);
  if (dir == HDAL__GPU_TO_DEVICE)
    return stream ? f->cuMemcpyHtoDAsync(CU(dst), src, n, STREAM(*stream)) : f->cuMemcpyHtoD(CU(dst), src, n);
  if (dir == HDAL__GPU_FROM_DEVICE)
    return stream ? f->cuMemcpyDtoHAsync(dst, CU(src), n, STREAM(*stream)) : f->cuMemcpyDtoH(dst, CU(src), n);
  return stream ? f->cuMemcpyDtoDAsync(CU(dst), CU(src), n, STREAM(*stream)) : f->cuMemcpyDtoD(CU(dst), CU(src), n);
}

/* Between contexts: the source's, retained by peer_enter (primary_context). */
static int peer(hdal__gpu_device *dd, void *dst, hdal__gpu_device *sd, const void *src, size_t n,
                const intptr_t *stream) {
  CUcontext dc = cuda_dev(dd)->ctx, sc = cuda_dev(sd)->ctx;
  return stream ? drv(dd)->cuMemcpyPeerAsync(CU(dst), dc, CU(src), sc, n, STREAM(*stream))
                : drv(dd)->cuMemcpyPeer(CU(dst), dc, CU(src), sc, n);
}

static int synchronize(hdal__gpu_device *d, intptr_t stream) { return drv(d)->cuStreamSynchronize(STREAM(stream)); }

static bool has_events(const hdal__gpu *g) { return drv_of(g)->cuEventQuery && drv_of(g)->cuEventSynchronize; }

static int event_record(hdal__gpu_device *d, intptr_t stream, void **out) {
  const hdal__cuda_driver *f = drv(d);
  CUevent ev = NULL;
  CUresult r = f->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && (r = f->cuEventRecord(ev, STREAM(stream))) != CUDA_SUCCESS) f->cuEventDestroy(ev);
  if (r == CUDA_SUCCESS) *out = ev;
  return r;
}

static int stream_wait_event(hdal__gpu_device *d, intptr_t stream, void *ev) {
  return drv(d)->cuStreamWaitEvent(STREAM(stream), ev, 0);
}

static int event_query(hdal__gpu_device *d, void *ev, bool wait) {
  return wait ? drv(d)->cuEventSynchronize(ev) : drv(d)->cuEventQuery(ev);
}

static void event_destroy(hdal__gpu_device *d, void *ev) { drv(d)->cuEventDestroy(ev); }

static bool pool_supported(hdal__gpu_device *d) {
  const hdal__cuda_driver *f = drv(d);
  int supported = 0;
  return f->cuDeviceGetDefaultMemPool && f->cuMemPoolSetAttribute && f->cuMemPoolGetAttribute && f->cuMemPoolTrimTo &&
         f->cuMemAllocAsync && f->cuMemFreeAsync &&
         f->cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, cuda_dev(d)->dev) ==
             CUDA_SUCCESS &&
         supported;
}

static bool pool_open(hdal__gpu_device *d, void **pool) {
  CUmemoryPool p = NULL;
  uint64_t keep = UINT64_MAX;
  bool ok = drv(d)->cuDeviceGetDefaultMemPool(&p, cuda_dev(d)->dev) == CUDA_SUCCESS &&
            drv(d)->cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == CUDA_SUCCESS;
  *pool = p;
  return ok;
}

static void pool_trim(hdal__gpu_device *d) { drv(d)->cuMemPoolTrimTo(d->mempool, 0); }

static int pool_reserved(hdal__gpu_device *d, uint64_t *v) {
  return drv(d)->cuMemPoolGetAttribute(d->mempool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, v);
}

/* The device, its primary context (retained here if hdal had not yet), and the work stream, 0. */
static int native_handle(hdal__gpu_device *d, hdal_native_handle which, intptr_t *handle, hdal__gpu_saved *sv) {
  CUresult r = CUDA_SUCCESS;
  switch (which) {
  case HDAL_NATIVE_CUDA_DEVICE: *handle = (intptr_t)cuda_dev(d)->dev; break;
  case HDAL_NATIVE_CUDA_CONTEXT:
    if ((r = primary_context(d, sv)) == CUDA_SUCCESS) *handle = (intptr_t)cuda_dev(d)->ctx;
    break;
  case HDAL_NATIVE_CUDA_STREAM: *handle = 0; break;
  default: return HDAL__GPU_NO_HANDLE;
  }
  return r;
}

/* By the devices' CUdevice: no context is needed.  A driver without the call grants nothing. */
static int can_access_peer(hdal__gpu_device *a, hdal__gpu_device *b, int *can) {
  *can = 0;
  if (!drv(a)->cuDeviceCanAccessPeer) return CUDA_SUCCESS;
  return drv(a)->cuDeviceCanAccessPeer(can, cuda_dev(a)->dev, cuda_dev(b)->dev);
}

/* The current context (d's primary) maps peer's primary context, retained by peer_enter. */
static int enable_peer(hdal__gpu_device *d, hdal__gpu_device *peer) {
  enum { CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704 };
  (void)d;
  if (!drv(peer)->cuCtxEnablePeerAccess) return CUDA_SUCCESS;
  CUresult r = drv(peer)->cuCtxEnablePeerAccess(cuda_dev(peer)->ctx, 0);
  return r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CUDA_SUCCESS : r;
}

/* NVLink, as NVML says it (nvml.c): the driver API says nothing of fabrics. */
static bool fabric(hdal__gpu_device *a, hdal__gpu_device *b, hdal_link *out) {
  return hdal__cuda_nvml_fabric((hdal__cuda_state *)a->gpu, cuda_dev(a), cuda_dev(b), out);
}

static void describe(const hdal__gpu *g, int r, char *buf, size_t len) { hdal__cuda_describe(drv_of(g), r, buf, len); }

const hdal__gpu_driver hdal__cuda_gpu_driver = {
    .vendor = "CUDA",
    .runtime = "CUDA driver",
    .says = "driver",
    .dl_name = "kDLCUDA",
    .dl_type = kDLCUDA,
    .pointer_types = HDAL_DL_TYPE_BIT(kDLCPU) | HDAL_DL_TYPE_BIT(kDLCUDA) | HDAL_DL_TYPE_BIT(kDLCUDAHost) |
                     HDAL_DL_TYPE_BIT(kDLCUDAManaged),
    .alloc_name = "cuMemAlloc",
    .alloc_async_name = "cuMemAllocAsync",
    .event_query_name = "cuEventQuery",
    .peer_query_name = "cuDeviceCanAccessPeer",
    .fence_done_enters = true,
    HDAL__GPU_DRIVER_CALLS,
    HDAL__GPU_STREAM_CALLS,
    .peer_enter = primary_context,
    .host_mapped = host_mapped,
    .can_access_peer = can_access_peer,
    .enable_peer = enable_peer,
    .fabric = fabric,
    .code_of = hdal__cuda_code_of,
};
