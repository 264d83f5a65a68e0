/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake HIP runtime for hdal's tests: the HIP runtime face of the fake GPU
 * core (tests/fakes/fakegpu.c says what it emulates and how it is scripted), with
 * the entry points hdal and its tests call, emulating AMD GPUs.  Built for
 * `make check` only, once per ABI: fakehip5.so speaks the ROCm 5.x ABI
 * (FAKEHIP_ABI=5), fakehip6.so the 6.0 one; fakehip50.so (FAKEHIP_ABI=5,
 * FAKEHIP_MEMPOOL_API=0) is a ROCm 5.0 runtime without the stream-ordered
 * allocator's entry points.
 *
 * Device memory faults on host access, as a GPU's does (the core reaches it
 * through a second, writable view); hipHostMalloc memory (pinned) is ordinary
 * host memory that the devices map at the same address.
 *
 * Besides the core's FAKEHIP_DEVICES, FAKEHIP_INIT (default 0; 101, what ROCm
 * 5 says without a GPU, with no device), FAKEHIP_NAMES ("Fake AMD GPU <n>"),
 * FAKEHIP_PCI_BUS_IDS (0000:<c1+n>:00.0), FAKEHIP_MEMORY (64 GiB),
 * FAKEHIP_MEMPOOLS ("0": the memory pool calls answer hipErrorNotSupported)
 * and FAKEHIP_SLOW_NULL (slow work on the null stream after
 * fakehip_null_launch(); hipEventQuery says hipErrorNotReady meanwhile):
 *   FAKEHIP_ARCH             gcnArchName (default gfx90a:sramecc+:xnack-)
 *   FAKEHIP_RUNTIME_VERSION  hipRuntimeGetVersion (default 50221153, 50013601 or 60032830)
 * It honours the visibility variables as AMD's runtime does: ROCR_VISIBLE_DEVICES
 * (ordinals or UUIDs "GPU-fa7eb1d0c0de000<m>") narrows what ROCr shows, then
 * HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES) takes ordinals among those;
 * each in its list's order, up to its first bad entry (fakegpu_visible_list).
 * The machine's device m keeps unique id fa7eb1d0c0de000<m> (or its FAKEHIP_UUIDS
 * item, "GPU-" and 16 letters or digits: "GPU-4f2a9c31b7d00e15") whatever its
 * ordinal, and hipDeviceCanAccessPeer answers FAKEHIP_PEER by machine index.
 *
 * The ABIs differ as the real ones do: hipMemoryType numbering (5: Host 0,
 * Device 1; 6: Unregistered 0, Host 1, Device 2), unknown memory (5: an error
 * of hipPointerGetAttributes; 6: Unregistered), hipDeviceProp_t (5: 792 bytes
 * from hipGetDeviceProperties; 6: 1472 from hipGetDevicePropertiesR0600, the
 * plain name keeping the old layout), and error strings (5: the name again).
 * Hooks for tests: fakehip_live_allocations, fakehip_calls, fakehip_null_launch.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "testhip.h"
#include "../fakegpu.h"

#ifndef FAKEHIP_ABI
#define FAKEHIP_ABI 6
#endif
#ifndef FAKEHIP_MEMPOOL_API
#define FAKEHIP_MEMPOOL_API 1
#endif

enum {
  OK = 0,
  E_INVALID_VALUE = 1,
  E_OUT_OF_MEMORY = 2,
  E_NOT_INITIALIZED = 3,
  E_NO_DEVICE = 100,
  E_INVALID_DEVICE = 101,
  E_INVALID_HANDLE = 400,
  E_NOT_READY = 600,
  E_NOT_SUPPORTED = 801,
};
#if FAKEHIP_ABI == 5
enum { MT_HOST = 0, MT_DEVICE = 1 };
#if FAKEHIP_MEMPOOL_API
#define DEFAULT_VERSION 50221153
#else
#define DEFAULT_VERSION 50013601 /* ROCm 5.0: before the stream-ordered allocator */
#endif
#else
enum { MT_UNREGISTERED = 0, MT_HOST = 1, MT_DEVICE = 2 };
#define DEFAULT_VERSION 60032830
#endif

typedef struct ihipEvent_t *hipEvent_t;
typedef struct {
  char bytes[16];
} hipUUID;

static int runtime_version = DEFAULT_VERSION;
static char arch[FAKEGPU_MAXDEV][256];
static __thread int current;
#define ndev fakegpu.ndev
#define init_result fakegpu.init_result
#define devs fakegpu.devs

static const char *const counted[] = {
    "hipInit", "hipMalloc", "hipFree", "hipMemcpyPeer", "hipMemcpyPeerAsync", "hipEventRecord",
    "hipStreamWaitEvent", "hipStreamSynchronize", "hipGetDeviceProperties", "hipGetDevicePropertiesR0600",
    "hipSetDevice", "hipMemcpy", "hipMemcpyAsync", "hipMallocAsync", "hipFreeAsync", "hipMemPoolTrimTo",
    "hipEventQuery", "hipEventSynchronize", "hipDeviceCanAccessPeer", "hipDeviceEnablePeerAccess",
};

static void configure(void) {
  const char *e, *a = getenv("FAKEHIP_ARCH");
  if ((e = getenv("FAKEHIP_RUNTIME_VERSION"))) runtime_version = atoi(e);
  for (int i = 0; i < ndev; i++) snprintf(arch[i], sizeof arch[i], "%s", a ? a : "gfx90a:sramecc+:xnack-");
}

/* The unique id of the machine's device m: 16 characters, as hipDeviceGetUuid gives them; by
 * default hex digits, else FAKEHIP_UUIDS' item after its "GPU-" when it is 16 letters or digits. */
static void unique_id(int m, char *buf, size_t len) {
  char given[64];
  const char *id = fakegpu_setting("UUIDS", m, given, sizeof given);
  bool ok = id && !strncasecmp(id, "GPU-", 4) && strlen(id + 4) == 16;
  for (int i = 4; ok && i < 20; i++) ok = isalnum((unsigned char)id[i]);
  if (ok) snprintf(buf, len, "%s", id + 4);
  else snprintf(buf, len, "fa7eb1d0c0de%04x", (unsigned)m & 0xffff);
}

/* As ROCR_VISIBLE_DEVICES names a GPU: "GPU-" and the unique id. */
static void rocr_uuid(int m, char *buf, size_t len) {
  char id[24];
  unique_id(m, id, sizeof id);
  snprintf(buf, len, "GPU-%s", id);
}

/* ROCr's list (ordinals or UUIDs) first, then HIP's ordinals among what ROCr shows: HIP_VISIBLE_DEVICES,
 * else CUDA_VISIBLE_DEVICES, which HIP reads as the same; each up to its first bad entry. */
static int visible(int n, int *order) {
  int rocr[FAKEGPU_MAXDEV], nrocr = fakegpu_all_visible(n, rocr), all[FAKEGPU_MAXDEV];
  const char *e = getenv("ROCR_VISIBLE_DEVICES");
  if (e) {
    fakegpu_all_visible(n, all);
    nrocr = fakegpu_visible_list(e, all, n, rocr_uuid, rocr);
  }
  if (!(e = getenv("HIP_VISIBLE_DEVICES"))) e = getenv("CUDA_VISIBLE_DEVICES");
  if (e) return fakegpu_visible_list(e, rocr, nrocr, NULL, order);
  memcpy(order, rocr, (size_t)nrocr * sizeof *order);
  return nrocr;
}

FAKEGPU_FACE("FAKEHIP_", "Fake AMD GPU ", 0xc1, (size_t)64 << 30, "FAKEHIP_SLOW_NULL", E_INVALID_DEVICE, true, false);

unsigned fakehip_calls(const char *name) { return fakegpu_calls(name); }

/* Every entry point but the error-naming ones starts here.  `caller`: where
 * the entry point was called from, for fault injection (NULL: never fails). */
static hipError_t check(const char *name, bool need_device, const void *caller) {
  fakegpu_begin(name);
  if (need_device && init_result) return E_NO_DEVICE;
  if (fakegpu_injected(name, caller)) return E_OUT_OF_MEMORY;
  return OK;
}
#define CHECK_FROM(need, caller)                           \
  do {                                                     \
    hipError_t r_ = check(__func__, (need), (caller));     \
    if (r_) return r_;                                     \
  } while (0)
#define CALLER __builtin_return_address(0)
#define CHECK(need) CHECK_FROM(need, CALLER)
#define CHECK_RELEASE(need) CHECK_FROM(need, NULL) /* gives back: never injected */

/* ---- initialisation, versions, errors ---- */

hipError_t hipInit(unsigned int flags) {
  CHECK(false);
  if (flags) return E_INVALID_VALUE;
  return init_result;
}

hipError_t hipRuntimeGetVersion(int *v) {
  CHECK(false);
  if (!v) return E_INVALID_VALUE;
  *v = runtime_version;
  return OK;
}

hipError_t hipDriverGetVersion(int *v) {
  CHECK(false);
  if (!v) return E_INVALID_VALUE;
  *v = runtime_version; /* what ROCm answers: the runtime's own */
  return OK;
}

static const struct {
  hipError_t code;
  const char *name, *text;
} errors[] = {
    {OK, "hipSuccess", "no error"},
    {E_INVALID_VALUE, "hipErrorInvalidValue", "invalid argument"},
    {E_OUT_OF_MEMORY, "hipErrorOutOfMemory", "out of memory"},
    {E_NOT_INITIALIZED, "hipErrorNotInitialized", "initialization error"},
    {E_NO_DEVICE, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {E_INVALID_DEVICE, "hipErrorInvalidDevice", "invalid device ordinal"},
    {E_INVALID_HANDLE, "hipErrorInvalidHandle", "invalid resource handle"},
    {E_NOT_READY, "hipErrorNotReady", "device not ready"},
    {E_NOT_SUPPORTED, "hipErrorNotSupported", "operation not supported"},
    {999, "hipErrorUnknown", "unknown error"},
};

static size_t error_index(hipError_t r) {
  size_t n = sizeof errors / sizeof errors[0];
  for (size_t i = 0; i < n; i++)
    if (errors[i].code == r) return i;
  return n - 1;
}
const char *hipGetErrorName(hipError_t r) { return errors[error_index(r)].name; }
const char *hipGetErrorString(hipError_t r) {
  return FAKEHIP_ABI == 5 ? errors[error_index(r)].name : errors[error_index(r)].text;
}

/* ---- devices ---- */

#define valid_device fakegpu_valid_device

hipError_t hipGetDeviceCount(int *n) {
  CHECK(false);
  if (!n) return E_INVALID_VALUE;
  *n = init_result ? 0 : ndev;
  return init_result || !ndev ? E_NO_DEVICE : OK;
}

hipError_t hipDeviceGet(int *d, int ordinal) {
  CHECK(true);
  if (!d) return E_INVALID_VALUE;
  if (!valid_device(ordinal)) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

hipError_t hipDeviceGetName(char *name, int len, int d) {
  CHECK(true);
  if (!name || len <= 0) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", devs[d].name);
  return OK;
}

/* AMD's UUID: the 16 hex digits of the GPU's unique id, as characters. */
hipError_t hipDeviceGetUuid(hipUUID *u, int d) {
  CHECK(true);
  if (!u) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  char id[24];
  unique_id(devs[d].physical, id, sizeof id); /* the GPU's own, whatever its ordinal */
  memcpy(u->bytes, id, 16);
  return OK;
}

/* FAKEHIP_PEER, by the devices' machine indices; "fail": hipErrorUnknown. */
hipError_t hipDeviceCanAccessPeer(int *can, int d, int peer) {
  CHECK(true);
  return fakegpu_can_access_peer(d, peer, can);
}

hipError_t hipDeviceGetPCIBusId(char *out, int len, int d) {
  CHECK(true);
  if (!out || len <= 0) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  snprintf(out, (size_t)len, "%04X:%02X:%02X.0", devs[d].domain, devs[d].bus, devs[d].slot); /* as HIP: upper case */
  return OK;
}

hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
  CHECK(true);
  if (!bytes) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  *bytes = devs[d].total;
  return OK;
}

/* hipDeviceProp_t members at their offsets in each layout (docs/rocm.md). */
static void put_int(unsigned char *p, size_t off, int v) { memcpy(p + off, &v, sizeof v); }
static void put_size(unsigned char *p, size_t off, size_t v) { memcpy(p + off, &v, sizeof v); }

static void props_rocm5(unsigned char *p, int d) {
  memset(p, 0, 792);
  snprintf((char *)p, 256, "%s", devs[d].name);
  put_size(p, 256, devs[d].total);
  put_int(p, 336, 104); /* multiProcessorCount */
  put_int(p, 364, (int)devs[d].domain);
  put_int(p, 368, (int)devs[d].bus);
  put_int(p, 372, (int)devs[d].slot);
  snprintf((char *)p + 396, 256, "%s", arch[d]);
}

#if FAKEHIP_ABI >= 6
static void props_rocm6(unsigned char *p, int d) {
  memset(p, 0, 1472);
  snprintf((char *)p, 256, "%s", devs[d].name);
  put_size(p, 288, devs[d].total);
  put_int(p, 388, 110); /* multiProcessorCount */
  put_int(p, 584, (int)devs[d].bus);
  put_int(p, 588, (int)devs[d].slot);
  put_int(p, 592, (int)devs[d].domain);
  snprintf((char *)p + 1160, 256, "%s", arch[d]);
}
#endif

/* The ROCm 5.x layout, under either ABI (6.x keeps it for old binaries). */
hipError_t hipGetDeviceProperties(void *props, int d) {
  CHECK(true);
  if (!props) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  props_rocm5(props, d);
  return OK;
}

#if FAKEHIP_ABI >= 6
hipError_t hipGetDevicePropertiesR0600(void *props, int d) {
  CHECK(true);
  if (!props) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  props_rocm6(props, d);
  return OK;
}
#endif

hipError_t hipSetDevice(int d) {
  CHECK(true);
  if (!valid_device(d)) return E_INVALID_DEVICE;
  current = d;
  return OK;
}

/* The current device maps peer's memory: by FAKEHIP_PEER, once (then hipErrorPeerAccessAlreadyEnabled). */
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  CHECK(true);
  if (flags) return E_INVALID_VALUE;
  return fakegpu_enable_peer(current, peer);
}

hipError_t hipGetDevice(int *d) {
  CHECK(true);
  if (!d) return E_INVALID_VALUE;
  *d = current;
  return OK;
}

/* ---- memory ---- */

static bool host_side(const void *p) {
  fakegpu_alloc *a = fakegpu_find(p, 0);
  return p && (!a || a->kind != FAKEGPU_DEVICE);
}

hipError_t hipMalloc(void **p, size_t n) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  if (n == 0) { /* as HIP: success, and no memory */
    *p = NULL;
    return OK;
  }
  hipError_t r = fakegpu_new_alloc(current, n, FAKEGPU_DEVICE, false, p);
  if (!r) fakegpu_held(*p, 1, CALLER);
  return r;
}

hipError_t hipHostMalloc(void **p, size_t n, unsigned int flags) {
  CHECK(true);
  if (!p || n == 0) return E_INVALID_VALUE;
  hipError_t r = fakegpu_new_alloc(current, n, FAKEGPU_HOST, false, p);
  if (!r) fakegpu_held(*p, 1, CALLER);
  return r;
}

static hipError_t free_alloc(void *p, int kind, const void *caller) {
  if (!p) return OK;
  hipError_t r = fakegpu_free_alloc(p, kind);
  if (!r) fakegpu_held(p, 0, caller);
  return r;
}

hipError_t hipFree(void *p) {
  CHECK_RELEASE(true);
  return free_alloc(p, FAKEGPU_DEVICE, CALLER);
}

hipError_t hipHostFree(void *p) {
  CHECK_RELEASE(true);
  return free_alloc(p, FAKEGPU_HOST, CALLER);
}

size_t fakehip_live_allocations(void) { return fakegpu_live_allocations(); }

typedef struct {
  int type, device;
  void *devicePointer, *hostPointer;
  int isManaged;
  unsigned allocationFlags;
} pointer_attributes;

hipError_t hipPointerGetAttributes(pointer_attributes *out, const void *p) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  pthread_mutex_lock(&fakegpu.lock);
  fakegpu_alloc *a = fakegpu_find(p, 0);
  pointer_attributes v = {0};
  if (a) {
    v.type = a->kind == FAKEGPU_HOST ? MT_HOST : MT_DEVICE;
    v.device = a->device;
    v.devicePointer = (void *)p; /* one address space */
    v.hostPointer = a->kind == FAKEGPU_HOST ? (void *)p : NULL;
  }
  pthread_mutex_unlock(&fakegpu.lock);
#if FAKEHIP_ABI == 5
  if (!a) return E_INVALID_VALUE;
#else
  if (!a) v.type = MT_UNREGISTERED;
#endif
  *out = v;
  return OK;
}

/* ---- copies ---- */

/* hipMemcpyKind: 0 host to host, 1 to device, 2 from device, 3 device to device, 4 default. */
static hipError_t copy(const void *caller, const char *name, void *dst, int dst_dev, const void *src, int src_dev,
                       size_t n, int kind, hipStream_t s) {
  hipError_t r = check(name, true, caller);
  if (r) return r;
  if (n == 0) return OK;
  if (!dst || !src || kind < 0 || kind > 4) return E_INVALID_VALUE;
  pthread_mutex_lock(&fakegpu.lock);
  if (kind == 4) kind = (fakegpu_device_view(src, n, -1) ? 2 : 0) | (fakegpu_device_view(dst, n, -1) ? 1 : 0);
  void *to = kind & 1 ? fakegpu_device_view(dst, n, dst_dev) : host_side(dst) ? dst : NULL;
  const void *from = kind & 2 ? fakegpu_device_view(src, n, src_dev) : host_side(src) ? src : NULL;
  if (!to || !from)
    r = E_INVALID_VALUE; /* a range outside an allocation, or device memory named as host memory */
  else
    r = fakegpu_submit(s, to, from, n, !(kind & 2));
  pthread_mutex_unlock(&fakegpu.lock);
  return r;
}
#define COPY(...) copy(CALLER, __func__, __VA_ARGS__)

hipError_t hipMemcpy(void *dst, const void *src, size_t n, int kind) { return COPY(dst, -1, src, -1, n, kind, NULL); }
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, hipStream_t s) {
  return COPY(dst, -1, src, -1, n, kind, s);
}
hipError_t hipMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n) {
  if (!valid_device(dd) || !valid_device(sd)) return E_INVALID_DEVICE;
  return COPY(dst, dd, src, sd, n, 3, NULL);
}
hipError_t hipMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, hipStream_t s) {
  if (!valid_device(dd) || !valid_device(sd)) return E_INVALID_DEVICE;
  return COPY(dst, dd, src, sd, n, 3, s);
}

/* ---- streams and events: the core's, on the current device ---- */

hipError_t hipStreamCreateWithFlags(hipStream_t *out, unsigned int flags) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  return fakegpu_stream_create(current, flags, (void **)out, CALLER);
}

hipError_t hipStreamDestroy(hipStream_t s) {
  CHECK_RELEASE(true);
  return fakegpu_stream_destroy(s, CALLER);
}

hipError_t hipStreamSynchronize(hipStream_t s) {
  CHECK(true);
  return fakegpu_stream_synchronize(s, current);
}

hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_VALUE;
  return fakegpu_event_create(current, (void **)e, CALLER);
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  CHECK(true);
  return e ? fakegpu_event_record(e, s) : E_INVALID_HANDLE;
}

hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
  CHECK(true);
  return e ? fakegpu_stream_wait_event(s, e) : E_INVALID_HANDLE;
}

hipError_t hipEventQuery(hipEvent_t e) {
  CHECK(true);
  return e ? fakegpu_event_query(e) : E_INVALID_HANDLE;
}

hipError_t hipEventSynchronize(hipEvent_t e) {
  CHECK(true);
  return e ? fakegpu_event_synchronize(e) : E_INVALID_HANDLE;
}

hipError_t hipEventDestroy(hipEvent_t e) {
  CHECK_RELEASE(true);
  return e ? fakegpu_event_destroy(e, CALLER) : E_INVALID_HANDLE;
}

/* Test hook: slow work (a kernel) queued on the null stream, done at its next synchronisation. */
void fakehip_null_launch(void) { fakegpu_slow_launch(); }

/* ---- the stream-ordered allocator ---- */

#if FAKEHIP_MEMPOOL_API
hipError_t hipDeviceGetDefaultMemPool(fakegpu_pool **out, int d) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  if (fakegpu.no_mempools) return E_NOT_SUPPORTED;
  *out = fakegpu_default_pool(d);
  return OK;
}

hipError_t hipMemPoolSetAttribute(fakegpu_pool *p, int attr, void *value) {
  CHECK(true);
  return fakegpu.no_mempools ? E_NOT_SUPPORTED : fakegpu_pool_set(p, attr, value);
}

hipError_t hipMemPoolGetAttribute(fakegpu_pool *p, int attr, void *value) {
  CHECK(true);
  return fakegpu.no_mempools ? E_NOT_SUPPORTED : fakegpu_pool_get(p, attr, value);
}

hipError_t hipMemPoolTrimTo(fakegpu_pool *p, size_t keep) {
  CHECK(true);
  if (fakegpu.no_mempools) return E_NOT_SUPPORTED;
  if (!p) return E_INVALID_VALUE;
  fakegpu_pool_trim(p, keep);
  return OK;
}

hipError_t hipMallocAsync(void **out, size_t n, hipStream_t s) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (fakegpu.no_mempools) return E_NOT_SUPPORTED;
  if (n == 0) { /* as hipMalloc */
    *out = NULL;
    return OK;
  }
  return fakegpu_malloc_async(current, n, out, CALLER);
}

/* Back to the pool of the device the block is on. */
hipError_t hipFreeAsync(void *v, hipStream_t s) {
  CHECK_RELEASE(true);
  return v ? fakegpu_free_async(-1, v, true, CALLER) : OK;
}
#endif
