/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — the HIP runtime's entry points behind the GPU layer's
 * buffer operations (backends/gpu_buffer.c).
 *
 * Handles are device pointers.  HIP's current device is per thread: a device
 * is made current by selecting it, and the caller's is selected again after.
 * hdal's stream 0 is the device's null stream.
 */
#include "config.h"
#include <string.h>
#include "rocm.h"

#define STREAM(s) ((hipStream_t)(s))

static const hdal__rocm_state *state_of(const hdal__gpu *g) { return (const hdal__rocm_state *)g; }
static const hdal__hip_runtime *rt_of(const hdal__gpu *g) { return &state_of(g)->rt; }
static const hdal__hip_runtime *rt(hdal__gpu_device *d) { return rt_of(d->gpu); }

/* *prev: the caller's device, to give back to leave(). */
static int enter(hdal__gpu_device *d, hdal__gpu_saved *sv) {
  hipError_t r = rt(d)->hipGetDevice(&sv->prev);
  if (r == hipSuccess && sv->prev != d->ordinal) r = rt(d)->hipSetDevice(d->ordinal);
  return r;
}

static void leave(hdal__gpu_device *d, const hdal__gpu_saved *sv) {
  if (sv->prev != d->ordinal) rt(d)->hipSetDevice(sv->prev);
}

static hdal_error *enter_error(hdal__gpu_device *d, int r, const hdal__gpu_saved *sv) {
  return hdal__gpu_error(d->gpu, r, "selecting ROCm device %d", d->ordinal);
}

/* In either ABI's numbering; with where the devices map host memory (gpu.h's host_mapped). */
static void pointer_query(hdal__gpu *g, const void *p, hdal__gpu_pointer *pi) {
  hdal__hip_pointer_attributes a;
  memset(&a, 0, sizeof a);
  memset(pi, 0, sizeof *pi);
  if (rt_of(g)->hipPointerGetAttributes(&a, p) != hipSuccess) return; /* ROCm 5: memory it does not know */
  if (state_of(g)->abi == 5)
    pi->kind = a.type == HIP5_MEMORY_HOST ? HDAL__GPU_MEM_HOST : a.type == HIP5_MEMORY_DEVICE ? HDAL__GPU_MEM_DEVICE
                                                                                           : HDAL__GPU_MEM_OTHER;
  else
    pi->kind = a.type == HIP6_MEMORY_UNREGISTERED ? HDAL__GPU_MEM_UNKNOWN
               : a.type == HIP6_MEMORY_HOST      ? HDAL__GPU_MEM_HOST
               : a.type == HIP6_MEMORY_DEVICE    ? HDAL__GPU_MEM_DEVICE
               : a.type == HIP6_MEMORY_MANAGED   ? HDAL__GPU_MEM_MANAGED
                                                 : HDAL__GPU_MEM_OTHER;
  if (a.isManaged && pi->kind != HDAL__GPU_MEM_UNKNOWN) pi->kind = HDAL__GPU_MEM_MANAGED;
  pi->device = a.device;
  pi->device_pointer = a.devicePointer;
}

static int alloc_fn(hdal__gpu_device *d, size_t n, void **p) {
  return d->async ? rt(d)->hipMallocAsync(p, n, NULL) : rt(d)->hipMalloc(p, n);
}

static void free_fn(hdal__gpu_device *d, void *p, bool async) {
  if (async) rt(d)->hipFreeAsync(p, NULL);
  else rt(d)->hipFree(p);
}

/* hipMemcpyDefault: the runtime tells host from device memory by address. */
static int copy(hdal__gpu_device *d, hdal__gpu_direction dir, void *dst, const void *src, size_t n,
                const intptr_t *stream) {
  return stream ? rt(d)->hipMemcpyAsync(dst, src, n, hipMemcpyDefault, STREAM(*stream))
                : rt(d)->hipMemcpy(dst, src, n, hipMemcpyDefault);
}

static int peer(hdal__gpu_device *dd, void *dst, hdal__gpu_device *sd, const void *src, size_t n,
                const intptr_t *stream) {
  return stream ? rt(dd)->hipMemcpyPeerAsync(dst, dd->ordinal, src, sd->ordinal, n, STREAM(*stream))
                : rt(dd)->hipMemcpyPeer(dst, dd->ordinal, src, sd->ordinal, n);
}

static int synchronize(hdal__gpu_device *d, intptr_t stream) { return rt(d)->hipStreamSynchronize(STREAM(stream)); }

static bool has_events(const hdal__gpu *g) { return rt_of(g)->hipEventQuery && rt_of(g)->hipEventSynchronize; }

static int event_record(hdal__gpu_device *d, intptr_t stream, void **out) {
  const hdal__hip_runtime *f = rt(d);
  hipEvent_t ev = NULL;
  hipError_t r = f->hipEventCreateWithFlags(&ev, hipEventDisableTiming);
  if (r == hipSuccess && (r = f->hipEventRecord(ev, STREAM(stream))) != hipSuccess) f->hipEventDestroy(ev);
  if (r == hipSuccess) *out = ev;
  return r;
}

static int stream_wait_event(hdal__gpu_device *d, intptr_t stream, void *ev) {
  return rt(d)->hipStreamWaitEvent(STREAM(stream), ev, 0);
}

static int event_query(hdal__gpu_device *d, void *ev, bool wait) {
  return wait ? rt(d)->hipEventSynchronize(ev) : rt(d)->hipEventQuery(ev);
}

static void event_destroy(hdal__gpu_device *d, void *ev) { rt(d)->hipEventDestroy(ev); }

/* Whether the device has a pool is the runtime's answer to pool_open's calls. */
static bool pool_supported(hdal__gpu_device *d) { return hdal__rocm_has_mempools(rt(d)); }

static bool pool_open(hdal__gpu_device *d, void **pool) {
  hipMemPool_t p = NULL;
  uint64_t keep = UINT64_MAX;
  bool ok = rt(d)->hipDeviceGetDefaultMemPool(&p, d->ordinal) == hipSuccess && p &&
            rt(d)->hipMemPoolSetAttribute(p, hipMemPoolAttrReleaseThreshold, &keep) == hipSuccess;
  *pool = p;
  return ok;
}

static void pool_trim(hdal__gpu_device *d) { rt(d)->hipMemPoolTrimTo(d->mempool, 0); }

static int pool_reserved(hdal__gpu_device *d, uint64_t *v) {
  return rt(d)->hipMemPoolGetAttribute(d->mempool, hipMemPoolAttrReservedMemCurrent, v);
}

/* The device's ordinal (a hipDevice_t) and the work stream, the null stream. */
static int native_handle(hdal__gpu_device *d, hdal_native_handle which, intptr_t *handle, hdal__gpu_saved *sv) {
  switch (which) {
  case HDAL_NATIVE_HIP_DEVICE: *handle = d->ordinal; return hipSuccess;
  case HDAL_NATIVE_HIP_STREAM: *handle = 0; return hipSuccess;
  default: return HDAL__GPU_NO_HANDLE;
  }
}

/* By ordinal: no device is selected for it.  A runtime without the call grants nothing. */
static int can_access_peer(hdal__gpu_device *a, hdal__gpu_device *b, int *can) {
  *can = 0;
  if (!rt(a)->hipDeviceCanAccessPeer) return hipSuccess;
  return rt(a)->hipDeviceCanAccessPeer(can, a->ordinal, b->ordinal);
}

/* The kernel driver's XGMI links (kfd.c): HIP itself says nothing of fabrics. */
static bool fabric(hdal__gpu_device *a, hdal__gpu_device *b, hdal_link *out) {
  return hdal__rocm_kfd_fabric((const hdal__rocm_device *)a, (const hdal__rocm_device *)b, out);
}

/* The current device (d, selected by enter) maps peer's memory. */
static int enable_peer(hdal__gpu_device *d, hdal__gpu_device *peer) {
  enum { hipErrorPeerAccessAlreadyEnabled = 704 };
  if (!rt(d)->hipDeviceEnablePeerAccess) return hipSuccess;
  hipError_t r = rt(d)->hipDeviceEnablePeerAccess(peer->ordinal, 0);
  return r == hipErrorPeerAccessAlreadyEnabled ? hipSuccess : r;
}

static void describe(const hdal__gpu *g, int r, char *buf, size_t len) { hdal__rocm_describe(rt_of(g), r, buf, len); }

const hdal__gpu_driver hdal__rocm_gpu_driver = {
    .vendor = "ROCm",
    .runtime = "HIP runtime",
    .says = "runtime",
    .dl_name = "kDLROCM",
    .dl_type = kDLROCM,
    .pointer_types = HDAL_DL_TYPE_BIT(kDLCPU) | HDAL_DL_TYPE_BIT(kDLROCM) | HDAL_DL_TYPE_BIT(kDLROCMHost),
    .address_as_pointer = true,
    .alloc_name = "hipMalloc",
    .alloc_async_name = "hipMallocAsync",
    .event_query_name = "hipEventQuery",
    .peer_query_name = "hipDeviceCanAccessPeer",
    /* An event knows its device: querying, waiting for and destroying it need
     * no current device, so the caller's is not touched. */
    .fence_done_enters = false,
    HDAL__GPU_DRIVER_CALLS,
    HDAL__GPU_STREAM_CALLS,
    .can_access_peer = can_access_peer,
    .enable_peer = enable_peer,
    .fabric = fabric,
    .code_of = hdal__rocm_code_of,
};
