/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Level Zero backend — the loader's entry points behind the GPU layer's
 * buffer operations (backends/gpu_buffer.c).
 *
 * Handles are USM pointers of hdal's context on the device's driver.  hdal's
 * "stream 0" is the device's immediate command list, made at its first
 * buffer operation; a command list is not thread-safe, so a device is
 * "made current" by taking its lock (enter) and given back by releasing it
 * (leave).  Immediate lists run in order: a copy is appended with an event
 * that the host waits on (API 1.4 has no zeCommandListHostSynchronize), and a
 * pool fence is an event appended after the work queued so far.  Level Zero
 * has no stream that frameworks share (SYCL queues are C++ objects), so a
 * caller's stream is not used: the caller finishes its work before it hands
 * memory over (docs/levelzero.md), and the table has no synchronize: every
 * copy is waited for before it returns.  Nor a peer copy (devices of a driver
 * share hdal's context, and the destination's list copies where the driver
 * lets it reach the source: zeDeviceCanAccessPeer; elsewhere the GPU layer
 * stages the copy through host memory of hdal's context) or a memory pool of
 * the runtime's (hdal's serves).
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "levelzero.h"

static const hdal__levelzero_state *state_of(const hdal__gpu *g) { return (const hdal__levelzero_state *)g; }
static const hdal__ze_api *ze_of(const hdal__gpu *g) { return &state_of(g)->ze; }
static hdal__levelzero_device *zdev(hdal__gpu_device *d) { return (hdal__levelzero_device *)d; }

/* An event of its own pool, host-visible: signalled by a command list, waited for by the host. */
typedef struct {
  ze_event_pool_handle_t pool;
  ze_event_handle_t event;
} fence_event;

static ze_result_t event_new(const hdal__ze_api *ze, hdal__levelzero_device *d, ze_event_pool_handle_t *pool,
                             ze_event_handle_t *event) {
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE, .count = 1};
  ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 0, .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                        .wait = ZE_EVENT_SCOPE_FLAG_HOST};
  ze_result_t r = ze->zeEventPoolCreate(d->context, &pd, 1, &d->dev, pool);
  if (r != ZE_RESULT_SUCCESS) return r;
  if ((r = ze->zeEventCreate(*pool, &ed, event)) != ZE_RESULT_SUCCESS) ze->zeEventPoolDestroy(*pool);
  return r;
}

/* The device's immediate list and copy event, made once, under its lock. */
static ze_result_t open_device(const hdal__ze_api *ze, hdal__levelzero_device *d) {
  if (d->list) return ZE_RESULT_SUCCESS;
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t list = NULL;
  ze_result_t r = ze->zeCommandListCreateImmediate(d->context, d->dev, &qd, &list);
  if (r != ZE_RESULT_SUCCESS) return r;
  if ((r = event_new(ze, d, &d->copy_pool, &d->copy_event)) != ZE_RESULT_SUCCESS) {
    ze->zeCommandListDestroy(list);
    return r;
  }
  d->list = list;
  return ZE_RESULT_SUCCESS;
}

void hdal__levelzero_devices_close(hdal__levelzero_state *s) {
  hdal__levelzero_device *d = s->gpu.devices;
  for (int i = 0; i < s->gpu.ndevices; i++) {
    if (!d[i].list) continue;
    s->ze.zeEventDestroy(d[i].copy_event);
    s->ze.zeEventPoolDestroy(d[i].copy_pool);
    s->ze.zeCommandListDestroy(d[i].list);
    d[i].list = NULL;
  }
}

static int enter(hdal__gpu_device *gd, hdal__gpu_saved *sv) {
  hdal__levelzero_device *d = zdev(gd);
  pthread_mutex_lock(&d->lock);
  ze_result_t r = open_device(ze_of(gd->gpu), d);
  if (r != ZE_RESULT_SUCCESS) pthread_mutex_unlock(&d->lock);
  return r;
}

static void leave(hdal__gpu_device *gd, const hdal__gpu_saved *sv) { pthread_mutex_unlock(&zdev(gd)->lock); }

static hdal_error *enter_error(hdal__gpu_device *d, int r, const hdal__gpu_saved *sv) {
  return hdal__gpu_error(d->gpu, r, "creating an immediate command list on Level Zero device %d", d->ordinal);
}

/* The allocation's kind in hdal's context of each driver: the first that
 * knows it.  A device allocation of a sub-device, which hdal does not list,
 * is OTHER: copied, not viewed.  Host USM is mapped by every device at its
 * own address. */
static void pointer_query(hdal__gpu *g, const void *p, hdal__gpu_pointer *pi) {
  const hdal__levelzero_state *s = state_of(g);
  memset(pi, 0, sizeof *pi);
  pi->device = -1;
  for (int i = 0; i < s->ndrivers; i++) {
    ze_memory_allocation_properties_t a = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t dev = NULL;
    if (s->ze.zeMemGetAllocProperties(s->drivers[i].context, p, &a, &dev) != ZE_RESULT_SUCCESS ||
        a.type == ZE_MEMORY_TYPE_UNKNOWN)
      continue;
    pi->kind = a.type == ZE_MEMORY_TYPE_HOST     ? HDAL__GPU_MEM_HOST
               : a.type == ZE_MEMORY_TYPE_SHARED ? HDAL__GPU_MEM_MANAGED
               : a.type == ZE_MEMORY_TYPE_DEVICE ? HDAL__GPU_MEM_DEVICE
                                                 : HDAL__GPU_MEM_OTHER;
    if (pi->kind == HDAL__GPU_MEM_HOST) pi->device_pointer = (void *)p;
    if (pi->kind == HDAL__GPU_MEM_DEVICE) {
      const hdal__levelzero_device *d = s->gpu.devices;
      for (int j = 0; j < s->gpu.ndevices && pi->device < 0; j++)
        if (d[j].dev == dev) pi->device = j;
      if (pi->device < 0) pi->kind = HDAL__GPU_MEM_OTHER;
    }
    return;
  }
}

static int alloc_fn(hdal__gpu_device *gd, size_t n, void **p) {
  hdal__levelzero_device *d = zdev(gd);
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  return ze_of(gd->gpu)->zeMemAllocDevice(d->context, &desc, n, 0, d->dev, p);
}

static void free_fn(hdal__gpu_device *gd, void *p, bool async) {
  ze_of(gd->gpu)->zeMemFree(zdev(gd)->context, p);
}

/* Appended to the device's immediate list with its copy event, and waited for. */
static int copy(hdal__gpu_device *gd, hdal__gpu_direction dir, void *dst, const void *src, size_t n,
                const intptr_t *stream) {
  const hdal__ze_api *ze = ze_of(gd->gpu);
  hdal__levelzero_device *d = zdev(gd);
  ze_result_t r = ze->zeCommandListAppendMemoryCopy(d->list, dst, src, n, d->copy_event, 0, NULL);
  if (r != ZE_RESULT_SUCCESS) return r;
  r = ze->zeEventHostSynchronize(d->copy_event, UINT64_MAX);
  ze_result_t reset = ze->zeEventHostReset(d->copy_event);
  return r != ZE_RESULT_SUCCESS ? r : reset;
}

/* On hdal's list (stream 0, the only one without synchronize), `d` entered. */
static int event_record(hdal__gpu_device *gd, intptr_t stream, void **out) {
  const hdal__ze_api *ze = ze_of(gd->gpu);
  hdal__levelzero_device *d = zdev(gd);
  fence_event *f = malloc(sizeof *f);
  if (!f) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  ze_result_t r = event_new(ze, d, &f->pool, &f->event);
  if (r == ZE_RESULT_SUCCESS && (r = ze->zeCommandListAppendSignalEvent(d->list, f->event)) != ZE_RESULT_SUCCESS) {
    ze->zeEventDestroy(f->event);
    ze->zeEventPoolDestroy(f->pool);
  }
  if (r != ZE_RESULT_SUCCESS) {
    free(f);
    return r;
  }
  *out = f;
  return ZE_RESULT_SUCCESS;
}

static int event_query(hdal__gpu_device *d, void *ev, bool wait) {
  const hdal__ze_api *ze = ze_of(d->gpu);
  fence_event *f = ev;
  ze_result_t r = wait ? ze->zeEventHostSynchronize(f->event, UINT64_MAX) : ze->zeEventQueryStatus(f->event);
  return r == ZE_RESULT_NOT_READY ? HDAL__GPU_NOT_READY : r;
}

static void event_destroy(hdal__gpu_device *d, void *ev) {
  fence_event *f = ev;
  ze_of(d->gpu)->zeEventDestroy(f->event);
  ze_of(d->gpu)->zeEventPoolDestroy(f->pool);
  free(f);
}

/* The driver, the root device and hdal's context on the driver, made at discovery.  No list: hdal's
 * immediate list is its own (include/hdal.h, "Native handles"). */
static int native_handle(hdal__gpu_device *gd, hdal_native_handle which, intptr_t *handle, hdal__gpu_saved *sv) {
  hdal__levelzero_device *d = zdev(gd);
  switch (which) {
  case HDAL_NATIVE_LEVEL_ZERO_DRIVER: *handle = (intptr_t)d->driver; return ZE_RESULT_SUCCESS;
  case HDAL_NATIVE_LEVEL_ZERO_DEVICE: *handle = (intptr_t)d->dev; return ZE_RESULT_SUCCESS;
  case HDAL_NATIVE_LEVEL_ZERO_CONTEXT: *handle = (intptr_t)d->context; return ZE_RESULT_SUCCESS;
  default: return HDAL__GPU_NO_HANDLE;
  }
}

/* By the root devices' handles, not entered: the query takes no command list.  Devices of two
 * drivers share no context of hdal's, and the loader would hand the peer to a driver that does not
 * know it: no access, unasked. */
static int can_access_peer(hdal__gpu_device *a, hdal__gpu_device *b, int *can) {
  *can = 0;
  if (zdev(a)->driver != zdev(b)->driver) return ZE_RESULT_SUCCESS;
  ze_bool_t v = 0;
  ze_result_t r = ze_of(a->gpu)->zeDeviceCanAccessPeer(zdev(a)->dev, zdev(b)->dev, &v);
  *can = r == ZE_RESULT_SUCCESS && v;
  return r;
}

/* Host memory of hdal's context, which both devices reach when they share it (devices of one driver);
 * none for devices of two drivers (plain memory then). */
static int staging_alloc(hdal__gpu_device *a, hdal__gpu_device *b, size_t n, void **p) {
  if (zdev(a)->context != zdev(b)->context) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_host_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  return ze_of(a->gpu)->zeMemAllocHost(zdev(a)->context, &desc, n, 0, p);
}

static void staging_free(hdal__gpu_device *a, void *p) { ze_of(a->gpu)->zeMemFree(zdev(a)->context, p); }

static void describe(const hdal__gpu *g, int r, char *buf, size_t len) { hdal__levelzero_describe(r, buf, len); }

const hdal__gpu_driver hdal__levelzero_gpu_driver = {
    .vendor = "Level Zero",
    /* "the Level Zero driver, in hdal's context, does not know its data": memory
     * of another context is unknown there, as memory that is not USM. */
    .runtime = "Level Zero driver, in hdal's context,",
    .says = "driver",
    .dl_name = "kDLOneAPI",
    .dl_type = (DLDeviceType)kDLOneAPI,
    .pointer_types = HDAL_DL_TYPE_BIT(kDLCPU) | HDAL_DL_TYPE_BIT(kDLOneAPI),
    .address_as_pointer = true,
    .alloc_name = "zeMemAllocDevice",
    .alloc_async_name = "zeMemAllocDevice",
    .event_query_name = "zeEventQueryStatus",
    .peer_query_name = "zeDeviceCanAccessPeer",
    /* An event is queried and destroyed without the device's list. */
    .fence_done_enters = false,
    HDAL__GPU_DRIVER_CALLS,
    .can_access_peer = can_access_peer,
    .staging_alloc = staging_alloc,
    .staging_free = staging_free,
    .code_of = hdal__levelzero_code_of,
};
