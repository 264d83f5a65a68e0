/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake CUDA driver for hdal's tests: the driver-API face of the fake GPU
 * core (tests/fakes/fakegpu.c says what it emulates and how it is scripted), with
 * the entry points hdal and its tests call.  Built for `make check` only.
 *
 * Besides the core's FAKECUDA_DEVICES, FAKECUDA_INIT (default 0; 100 with no
 * device; 34 makes it a stub: every call answers 34), FAKECUDA_NAMES ("Fake
 * GPU <n>"), FAKECUDA_PCI_BUS_IDS (0000:<10+n>:00.0), FAKECUDA_MEMORY (16
 * GiB), FAKECUDA_MEMPOOLS ("0": no stream-ordered allocator, memory pools
 * attribute 0) and FAKECUDA_SLOW_LEGACY (slow work on the legacy stream after
 * fakecuda_legacy_launch()), it honours CUDA_VISIBLE_DEVICES as NVIDIA's
 * driver does: ordinals and UUID prefixes ("GPU-facec0da-...-000000000001",
 * without case), in the list's order, up to the first entry that names no
 * single device or repeats one (fakegpu_visible_list); the machine's device m
 * has UUID facec0da-0001-4000-8000-0000000000<m> (or its FAKECUDA_UUIDS item,
 * "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6") whatever its ordinal, and
 * cuDeviceCanAccessPeer answers FAKECUDA_PEER by machine index:
 *   FAKECUDA_COMPUTE_CAPABILITY "major.minor" (default 9.0)
 *   FAKECUDA_DRIVER_VERSION     cuDriverGetVersion (default 12040)
 *   FAKECUDA_GETPROCADDRESS     "fail": cuGetProcAddress finds nothing
 * Built with -DFAKECUDA_NO_GETPROCADDRESS it is a driver older than 11.3.
 *
 * Memory is host memory (managed memory must be).  As with a real driver, the
 * primary context's last release destroys it with all memory made in it:
 * device, managed and pinned host allocations, and the default memory pool's
 * cached blocks (cuMemAllocAsync/cuMemFreeAsync).  The unversioned legacy names (cuMemAlloc...) are
 * traps.  Hooks for tests: fakecuda_live_allocations, fakecuda_primary_refs,
 * fakecuda_calls, fakecuda_context_depth, fakecuda_legacy_launch.  Under the
 * fault-injection interposer, failures are CUDA_ERROR_OUT_OF_MEMORY, the
 * context pop never fails, and primary-context references are objects too.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testcuda.h"
#include "../fakegpu.h"

enum {
  OK = 0,
  E_INVALID_VALUE = 1,
  E_OUT_OF_MEMORY = 2,
  E_NOT_INITIALIZED = 3,
  E_STUB = 34,
  E_NO_DEVICE = 100,
  E_INVALID_DEVICE = 101,
  E_INVALID_CONTEXT = 201,
  E_INVALID_HANDLE = 400,
  E_NOT_FOUND = 500,
  E_NOT_READY = 600,
  E_NOT_SUPPORTED = 801,
};
#define MAXDEV FAKEGPU_MAXDEV

struct CUctx_st {
  int device;
};

typedef struct {
  int major, minor;
  int refs;
  struct CUctx_st ctx;
} device;

static int driver_version = 12040;
static bool gpa_fail;
static atomic_bool initialised; /* cuInit is thread-safe, as the real driver's is */
static device devs[MAXDEV];
static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;
#define ndev fakegpu.ndev
#define init_result fakegpu.init_result

static const char *const counted[] = {
    "cuInit", "cuGetProcAddress", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuEventRecord",
    "cuStreamWaitEvent", "cuStreamSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyPeer", "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "legacy", "cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess",
};

static void configure(void) {
  const char *e, *cc = getenv("FAKECUDA_COMPUTE_CAPABILITY");
  if ((e = getenv("FAKECUDA_DRIVER_VERSION"))) driver_version = atoi(e);
  gpa_fail = (e = getenv("FAKECUDA_GETPROCADDRESS")) && !strcmp(e, "fail");
  for (int i = 0; i < ndev; i++) {
    devs[i].major = 9;
    if (cc) sscanf(cc, "%d.%d", &devs[i].major, &devs[i].minor);
    devs[i].ctx.device = i;
  }
}

static const unsigned char uuid_base[16] = {0xfa, 0xce, 0xc0, 0xda, 0x00, 0x01, 0x40, 0x00,
                                            0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

/* The UUID of the machine's device m: FAKECUDA_UUIDS' item, else uuid_base ending in m. */
static void uuid_bytes(int m, unsigned char b[16]) {
  if (fakegpu_uuid_given(m, "GPU-", b)) return;
  memcpy(b, uuid_base, 16);
  b[15] = (unsigned char)m;
}

/* The UUID of the machine's device m as nvidia-smi and CUDA_VISIBLE_DEVICES spell it. */
static void uuid_text(int m, char *buf, size_t len) {
  unsigned char b[16];
  uuid_bytes(m, b);
  snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* CUDA_VISIBLE_DEVICES: ordinals and "GPU-" UUID prefixes, in the list's order, up to the first bad entry. */
static int visible(int n, int *order) {
  const char *e = getenv("CUDA_VISIBLE_DEVICES");
  int all[FAKEGPU_MAXDEV];
  fakegpu_all_visible(n, all);
  return e ? fakegpu_visible_list(e, all, n, uuid_text, order) : fakegpu_all_visible(n, order);
}

FAKEGPU_FACE("FAKECUDA_", "Fake GPU ", 0x10, (size_t)16 << 30, "FAKECUDA_SLOW_LEGACY", E_NO_DEVICE, false, true);

unsigned fakecuda_calls(const char *name) { return fakegpu_calls(name); }

/* Every entry point but the error-naming ones starts here.  `caller`: where
 * the entry point was called from, for fault injection (NULL: never fails). */
static CUresult check(const char *name, bool need_init, const void *caller) {
  fakegpu_begin(name);
  if (init_result == E_STUB) return E_STUB;
  if (need_init && !initialised) return init_result ? init_result : E_NOT_INITIALIZED;
  if (fakegpu_injected(name, caller)) return E_OUT_OF_MEMORY;
  return OK;
}
#define CHECK_FROM(need_init, caller)                      \
  do {                                                     \
    CUresult r_ = check(__func__, (need_init), (caller));  \
    if (r_) return r_;                                     \
  } while (0)
#define CALLER __builtin_return_address(0)
#define CHECK(need_init) CHECK_FROM(need_init, CALLER)
#define CHECK_RELEASE(need_init) CHECK_FROM(need_init, NULL) /* gives back: never injected */

static CUcontext current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* ---- initialisation, version, errors ---- */

CUresult cuInit(unsigned int flags) {
  CHECK(false);
  if (flags) return E_INVALID_VALUE;
  if (init_result) return init_result;
  initialised = true;
  return OK;
}

CUresult cuDriverGetVersion(int *v) {
  CHECK(false);
  if (!v) return E_INVALID_VALUE;
  *v = driver_version;
  return OK;
}

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {E_STUB, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {E_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult r, const char **out, bool text) {
  CHECK(false);
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == r) {
      *out = text ? errors[i].text : errors[i].name;
      return OK;
    }
  *out = NULL;
  return E_INVALID_VALUE;
}
CUresult cuGetErrorName(CUresult r, const char **s) { return error_lookup(r, s, false); }
CUresult cuGetErrorString(CUresult r, const char **s) { return error_lookup(r, s, true); }

/* ---- devices ---- */

#define valid_device fakegpu_valid_device

CUresult cuDeviceGetCount(int *n) {
  CHECK(true);
  if (!n) return E_INVALID_VALUE;
  *n = ndev;
  return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  CHECK(true);
  if (!d) return E_INVALID_VALUE;
  if (!valid_device(ordinal)) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  CHECK(true);
  if (!name || len <= 0) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", fakegpu.devs[d].name);
  return OK;
}

static CUresult get_uuid(CUuuid *u, CUdevice d) {
  if (!u) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  uuid_bytes(fakegpu.devs[d].physical, u->bytes); /* the GPU's own, whatever its ordinal */
  return OK;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  CHECK(true);
  return get_uuid(u, d);
}
CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
  CHECK(true);
  return get_uuid(u, d);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  CHECK(true);
  if (!bytes) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  *bytes = fakegpu.devs[d].total;
  return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  CHECK(true);
  if (!v) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  switch (attr) {
  case 16: *v = 132; break;                          /* multiprocessors */
  case 33: *v = (int)fakegpu.devs[d].bus; break;     /* PCI bus */
  case 34: *v = (int)fakegpu.devs[d].slot; break;    /* PCI device */
  case 41: *v = 1; break;                            /* unified addressing */
  case 50: *v = (int)fakegpu.devs[d].domain; break;  /* PCI domain */
  case 75: *v = devs[d].major; break;
  case 76: *v = devs[d].minor; break;
  case 83: *v = 1; break;                            /* managed memory */
  case 115: *v = !fakegpu.no_mempools; break;        /* memory pools */
  default: return E_INVALID_VALUE;
  }
  return OK;
}

/* FAKECUDA_PEER, by the devices' machine indices; "fail": CUDA_ERROR_UNKNOWN. */
CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
  CHECK(true);
  return fakegpu_can_access_peer(d, peer, can);
}

/* ---- contexts ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  CHECK(true);
  if (!c) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  pthread_mutex_lock(&fakegpu.lock);
  devs[d].refs++;
  pthread_mutex_unlock(&fakegpu.lock);
  *c = &devs[d].ctx;
  fakegpu_held(&devs[d], 1, CALLER);
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  CHECK_RELEASE(true);
  if (!valid_device(d)) return E_INVALID_DEVICE;
  CUresult r = OK;
  pthread_mutex_lock(&fakegpu.lock);
  if (devs[d].refs > 0) devs[d].refs--;
  else r = E_INVALID_CONTEXT;
  bool last = !r && devs[d].refs == 0;
  pthread_mutex_unlock(&fakegpu.lock);
  if (last) fakegpu_context_reset(d); /* the context goes, and all memory made in it */
  if (!r) fakegpu_held(&devs[d], 0, CALLER);
  return r;
}

int fakecuda_primary_refs(int d) {
  pthread_mutex_lock(&fakegpu.lock);
  int n = valid_device(d) ? devs[d].refs : -1;
  pthread_mutex_unlock(&fakegpu.lock);
  return n;
}

static bool live_context(CUcontext c) {
  if (!c) return false;
  for (int i = 0; i < ndev; i++)
    if (c == &devs[i].ctx) return devs[i].refs > 0;
  return false;
}

CUresult cuCtxPushCurrent_v2(CUcontext c) {
  CHECK(true);
  pthread_mutex_lock(&fakegpu.lock);
  bool ok = live_context(c);
  pthread_mutex_unlock(&fakegpu.lock);
  if (!ok) return E_INVALID_CONTEXT;
  if (ctx_depth == (int)(sizeof ctx_stack / sizeof ctx_stack[0])) return E_INVALID_VALUE;
  ctx_stack[ctx_depth++] = c;
  return OK;
}

CUresult cuCtxPopCurrent_v2(CUcontext *c) {
  CHECK_RELEASE(true);
  if (!ctx_depth) return E_INVALID_CONTEXT;
  CUcontext top = ctx_stack[--ctx_depth];
  if (c) *c = top;
  return OK;
}

int fakecuda_context_depth(void) { return ctx_depth; }

/* Current context's device, or -1 (the caller answers CUDA_ERROR_INVALID_CONTEXT). */
static int current_device(void) {
  CUcontext c = current();
  pthread_mutex_lock(&fakegpu.lock);
  int d = live_context(c) ? c->device : -1;
  pthread_mutex_unlock(&fakegpu.lock);
  return d;
}

/* The current context's device maps peer's memory: by FAKECUDA_PEER, once (then ALREADY_ENABLED). */
CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  CHECK(true);
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  if (flags || !peer) return E_INVALID_VALUE;
  return fakegpu_enable_peer(d, peer->device);
}

/* ---- memory ---- */

#define U(p) ((CUdeviceptr)(uintptr_t)(p))
#define PTR(p) ((void *)(uintptr_t)(p))

static CUresult new_alloc(size_t n, int kind, bool managed, void **out) {
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  return fakegpu_new_alloc(d, n, kind, managed, out);
}

static CUresult alloc_device(CUdeviceptr *p, size_t n, bool managed, const void *caller) {
  if (!p) return E_INVALID_VALUE;
  void *v;
  CUresult r = new_alloc(n, FAKEGPU_DEVICE, managed, &v);
  if (!r) {
    *p = U(v);
    fakegpu_held(v, 1, caller);
  }
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  CHECK(true);
  return alloc_device(p, n, false, CALLER);
}

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) {
  CHECK(true);
  return alloc_device(p, n, true, CALLER);
}

CUresult cuMemAllocHost_v2(void **p, size_t n) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  CUresult r = new_alloc(n, FAKEGPU_HOST, false, p);
  if (!r) fakegpu_held(*p, 1, CALLER);
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  CHECK_RELEASE(true);
  CUresult r = fakegpu_free_alloc(PTR(p), FAKEGPU_DEVICE);
  if (!r) fakegpu_held(PTR(p), 0, CALLER);
  return r;
}

CUresult cuMemFreeHost(void *p) {
  CHECK_RELEASE(true);
  CUresult r = fakegpu_free_alloc(p, FAKEGPU_HOST);
  if (!r) fakegpu_held(p, 0, CALLER);
  return r;
}

size_t fakecuda_live_allocations(void) { return fakegpu_live_allocations(); }

/* CU_MEMORYTYPE_HOST 1 and _DEVICE 2: the core's numbers. */
static int attribute(const fakegpu_alloc *a, CUdeviceptr p, int attr, void *data) {
  switch (attr) {
  case 2: *(unsigned *)data = a ? (unsigned)a->kind : 0; return OK;       /* memory type */
  case 8: *(bool *)data = a && a->managed; return OK;                     /* is managed */
  case 9: *(int *)data = a ? a->device : -2; return OK;                   /* device ordinal */
  case 3:                                                                 /* device pointer */
    if (!a) return E_INVALID_VALUE;
    if (a->kind == FAKEGPU_HOST && current_device() < 0) return E_INVALID_CONTEXT;
    *(CUdeviceptr *)data = p; /* unified addressing: the same address */
    return OK;
  default: return E_INVALID_VALUE;
  }
}

static fakegpu_alloc *find(CUdeviceptr p) {
  pthread_mutex_lock(&fakegpu.lock);
  fakegpu_alloc *a = fakegpu_find(PTR(p), 0);
  pthread_mutex_unlock(&fakegpu.lock);
  return a;
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  CHECK(true);
  if (!data) return E_INVALID_VALUE;
  fakegpu_alloc *a = find(p);
  if (!a) return E_INVALID_VALUE;
  return attribute(a, p, attr, data);
}

/* Unlike cuPointerGetAttribute, unknown memory is no error: the attributes read as empty. */
CUresult cuPointerGetAttributes(unsigned int n, int *attrs, void **data, CUdeviceptr p) {
  CHECK(true);
  if (!attrs || !data) return E_INVALID_VALUE;
  fakegpu_alloc *a = find(p);
  for (unsigned i = 0; i < n; i++) {
    if (attrs[i] == 3 && !a) continue;
    CUresult r = attribute(a, p, attrs[i], data[i]);
    if (r) return r;
  }
  return OK;
}

/* ---- copies ---- */

enum { TO_DEVICE = 1, FROM_DEVICE = 2 };

static CUresult copy(const void *caller, const char *name, int dirs, CUdeviceptr dst, CUdeviceptr src, size_t n,
                     CUstream s, bool need_ctx) {
  CUresult r = check(name, true, caller);
  if (r) return r;
  if (need_ctx && current_device() < 0) return E_INVALID_CONTEXT;
  if (n == 0) return OK;
  pthread_mutex_lock(&fakegpu.lock);
  if (((dirs & TO_DEVICE) && !fakegpu_find(PTR(dst), n)) || ((dirs & FROM_DEVICE) && !fakegpu_find(PTR(src), n)) || !dst ||
      !src)
    r = E_INVALID_VALUE;
  else
    r = fakegpu_submit(s, PTR(dst), PTR(src), n, !(dirs & FROM_DEVICE));
  pthread_mutex_unlock(&fakegpu.lock);
  return r;
}

/* An entry point's copy: checked, and injected, as called from its caller. */
#define COPY(...) copy(CALLER, __func__, __VA_ARGS__)

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { return COPY(TO_DEVICE, d, U(h), n, NULL, true); }
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { return COPY(FROM_DEVICE, U(h), d, n, NULL, true); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, NULL, true);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  return COPY(TO_DEVICE, d, U(h), n, s, true);
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) {
  return COPY(FROM_DEVICE, U(h), d, n, s, true);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, st, true);
}

static bool live_contexts(CUcontext a, CUcontext b) {
  pthread_mutex_lock(&fakegpu.lock);
  bool ok = live_context(a) && live_context(b);
  pthread_mutex_unlock(&fakegpu.lock);
  return ok;
}
CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
  if (!live_contexts(dc, sc)) return initialised ? E_INVALID_CONTEXT : E_NOT_INITIALIZED;
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, NULL, false);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st) {
  if (!live_contexts(dc, sc)) return initialised ? E_INVALID_CONTEXT : E_NOT_INITIALIZED;
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, st, false);
}

/* ---- streams and events: the core's, in the current context ---- */

CUresult cuStreamCreate(CUstream *out, unsigned int flags) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  return fakegpu_stream_create(d, flags, (void **)out, CALLER);
}

CUresult cuStreamDestroy_v2(CUstream s) {
  CHECK_RELEASE(true);
  return fakegpu_stream_destroy(s, CALLER);
}

CUresult cuStreamSynchronize(CUstream s) {
  CHECK(true);
  return fakegpu_stream_synchronize(s, current_device());
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  return fakegpu_event_create(d, (void **)e, CALLER);
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  CHECK(true);
  return e ? fakegpu_event_record(e, s) : E_INVALID_HANDLE;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  CHECK(true);
  return e ? fakegpu_stream_wait_event(s, e) : E_INVALID_HANDLE;
}

CUresult cuEventQuery(CUevent e) {
  CHECK(true);
  return e ? fakegpu_event_query(e) : E_INVALID_HANDLE;
}

CUresult cuEventSynchronize(CUevent e) {
  CHECK(true);
  return e ? fakegpu_event_synchronize(e) : E_INVALID_HANDLE;
}

CUresult cuEventDestroy_v2(CUevent e) {
  CHECK_RELEASE(true);
  return e ? fakegpu_event_destroy(e, CALLER) : E_INVALID_HANDLE;
}

/* Test hook: slow work (a kernel) queued on the legacy stream, done at its next synchronisation. */
void fakecuda_legacy_launch(void);
void fakecuda_legacy_launch(void) { fakegpu_slow_launch(); }

/* ---- the stream-ordered allocator ---- */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice d) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  if (fakegpu.no_mempools) return E_NOT_SUPPORTED;
  *out = (CUmemoryPool)fakegpu_default_pool(d);
  return OK;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *value) {
  CHECK(true);
  return fakegpu_pool_set((fakegpu_pool *)p, attr, value);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *value) {
  CHECK(true);
  return fakegpu_pool_get((fakegpu_pool *)p, attr, value);
}

CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  fakegpu_pool_trim((fakegpu_pool *)p, keep);
  return OK;
}

CUresult cuMemAllocAsync(CUdeviceptr *out, size_t n, CUstream s) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  if (fakegpu.no_mempools) return E_NOT_SUPPORTED;
  void *v;
  CUresult r = fakegpu_malloc_async(d, n, &v, CALLER);
  if (!r) *out = U(v);
  return r;
}

/* Into the current context's device's pool. */
CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream s) {
  CHECK_RELEASE(true);
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  return fakegpu_free_async(d, PTR(ptr), false, CALLER);
}

/* ---- the unversioned legacy names: never to be called ---- */
#define TRAP(name)                   \
  CUresult name(void);               \
  CUresult name(void) {              \
    fakegpu_begin("legacy");         \
    return E_NOT_SUPPORTED;          \
  }
TRAP(cuDeviceTotalMem)
TRAP(cuMemAlloc)
TRAP(cuMemFree)
TRAP(cuMemAllocHost)
TRAP(cuMemcpyHtoD)
TRAP(cuMemcpyDtoH)
TRAP(cuMemcpyDtoD)
TRAP(cuMemcpyHtoDAsync)
TRAP(cuMemcpyDtoHAsync)
TRAP(cuMemcpyDtoDAsync)
TRAP(cuCtxPushCurrent)
TRAP(cuCtxPopCurrent)
TRAP(cuDevicePrimaryCtxRelease)
TRAP(cuEventDestroy)
TRAP(cuStreamDestroy)

#ifndef FAKECUDA_NO_GETPROCADDRESS
/* Per name, the entry point of each API version (the newest not above the caller's wins). */
static const struct {
  const char *name;
  int since;
  void *fn;
} procs[] = {
#define P(name, since, fn) {name, since, (void *)fn}
    P("cuInit", 2000, cuInit), P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuGetErrorName", 6000, cuGetErrorName), P("cuGetErrorString", 6000, cuGetErrorString),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount), P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetName", 2000, cuDeviceGetName), P("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    P("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2), P("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2), P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2), P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    P("cuMemAlloc", 2000, cuMemAlloc), P("cuMemAlloc", 3020, cuMemAlloc_v2), P("cuMemFree", 2000, cuMemFree),
    P("cuMemFree", 3020, cuMemFree_v2), P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemFreeHost", 2000, cuMemFreeHost), P("cuMemAllocManaged", 6000, cuMemAllocManaged),
    P("cuMemcpyHtoD", 2000, cuMemcpyHtoD), P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    P("cuMemcpyDtoH", 2000, cuMemcpyDtoH), P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    P("cuMemcpyDtoD", 2000, cuMemcpyDtoD), P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    P("cuMemcpyHtoDAsync", 2000, cuMemcpyHtoDAsync), P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    P("cuMemcpyDtoHAsync", 2000, cuMemcpyDtoHAsync), P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    P("cuMemcpyDtoDAsync", 3000, cuMemcpyDtoDAsync), P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    P("cuMemcpyPeer", 4000, cuMemcpyPeer), P("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    P("cuStreamCreate", 2000, cuStreamCreate), P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize), P("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    P("cuEventCreate", 2000, cuEventCreate), P("cuEventRecord", 2000, cuEventRecord),
    P("cuEventDestroy", 2000, cuEventDestroy), P("cuEventDestroy", 4000, cuEventDestroy_v2),
    P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    P("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    P("cuEventQuery", 2000, cuEventQuery), P("cuEventSynchronize", 2000, cuEventSynchronize),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute), P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo), P("cuMemAllocAsync", 11020, cuMemAllocAsync),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync), P("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
#undef P
};

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
  CHECK(false);
  if (!symbol || !pfn) return E_INVALID_VALUE;
  *pfn = NULL;
  if (gpa_fail) return E_NOT_FOUND;
  int best = -1;
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
    if (!strcmp(procs[i].name, symbol) && procs[i].since <= version && (best < 0 || procs[i].since > procs[best].since))
      best = (int)i;
  if (best < 0) return E_NOT_FOUND;
  *pfn = procs[best].fn;
  return OK;
}
#endif
