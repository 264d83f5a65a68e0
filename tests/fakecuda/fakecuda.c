/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake CUDA driver for hdal's tests: the driver-API entry points hdal and its
 * tests call, emulating devices on host memory.  Built for `make check` only.
 *
 * Scripted by the environment, read at the first call:
 *   FAKECUDA_INIT               cuInit's result (default 0; 100 with no device).
 *                               34 makes it a stub: every call answers 34.
 *   FAKECUDA_DEVICES            device count (default 1)
 *   FAKECUDA_NAMES              comma-separated names (default "Fake GPU <n>")
 *   FAKECUDA_PCI_BUS_IDS        comma-separated "dddd:bb:dd.f" (default 0000:<10+n>:00.0)
 *   FAKECUDA_MEMORY             bytes per device (default 16 GiB); allocations beyond fail
 *   FAKECUDA_COMPUTE_CAPABILITY "major.minor" (default 9.0)
 *   FAKECUDA_DRIVER_VERSION     cuDriverGetVersion (default 12040)
 *   FAKECUDA_GETPROCADDRESS     "fail": cuGetProcAddress finds nothing
 *   FAKECUDA_MEMPOOLS           "0": no stream-ordered allocator (memory pools attribute 0)
 *   FAKECUDA_SLOW_LEGACY        "1": work on the legacy stream is slow: an event recorded there
 *                               after fakecuda_legacy_launch() stays pending until the legacy
 *                               stream is synchronised (a synchronous copy, cuStreamSynchronize,
 *                               cuEventSynchronize)
 * Built with -DFAKECUDA_NO_GETPROCADDRESS it is a driver older than 11.3.
 *
 * Each device has a default memory pool (cuMemAllocAsync/cuMemFreeAsync):
 * freed blocks are cached and reused for the same size; synchronising the
 * legacy stream releases what exceeds the release threshold (0 by default, as
 * CUDA's), cuMemPoolTrimTo releases down to its argument, and the primary
 * context's last release frees the rest.
 *
 * Streams created by cuStreamCreate run their work lazily, when something
 * waits for them (synchronisation, an event wait, legacy-stream work for a
 * blocking stream), so that tests can see whether hdal orders its work after
 * a caller's stream.  The unversioned legacy names (cuMemAlloc...) are traps.
 * Hooks for tests: fakecuda_live_allocations, fakecuda_primary_refs,
 * fakecuda_calls, fakecuda_context_depth.
 *
 * Under tests/faultinject's interposer (preloaded), every call hdal makes
 * that can fail is counted as a fallible call and the walk's Nth fails with
 * CUDA_ERROR_OUT_OF_MEMORY; the calls that give something back (frees,
 * releases, destroys, the context pop) never fail.  Allocations, streams,
 * events and primary-context references made for hdal are reported to it, so
 * that one hdal keeps is a leak.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
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
enum { MT_HOST = 1, MT_DEVICE = 2 };
#define LEGACY ((CUstream)1)
#define PER_THREAD ((CUstream)2)
#define MAXDEV 8

struct CUctx_st {
  int device;
};

typedef struct op {
  struct op *next;
  void *dst;
  const void *src;
  size_t n;
  void *staging;      /* HtoD from pageable memory: copied at submission */
  struct CUevent_st *event; /* an event marker instead of a copy */
} op;

struct CUstream_st {
  struct CUstream_st *next;
  int device;
  unsigned flags;
  op *head, *tail;
};

struct CUevent_st {
  int device;
  bool pending;
  struct CUstream_st *stream; /* NULL while pending: behind slow legacy work */
  unsigned long legacy_seq;
};

/* A device's default memory pool: cached blocks of cuMemFreeAsync. */
typedef struct {
  void *base;
  size_t size;
} pool_block;
struct CUmemPoolHandle_st {
  int device;
  uint64_t threshold, reserved;
  pool_block cached[64];
  size_t ncached;
};

typedef struct alloc {
  struct alloc *next;
  char *base;
  size_t size;
  int device;
  int type;
  bool managed;
  bool pooled; /* of the device's memory pool (cuMemAllocAsync): counted in its reserved bytes */
} alloc;

typedef struct {
  char name[256];
  unsigned domain, bus, slot;
  size_t total, used;
  int major, minor;
  int refs;
  struct CUctx_st ctx;
} device;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_result, ndev, driver_version = 12040;
static bool gpa_fail, no_mempools, slow_legacy;
static atomic_bool initialised; /* cuInit is thread-safe, as the real driver's is */
static unsigned long legacy_launched, legacy_finished; /* slow legacy work (fakecuda_legacy_launch) */
static struct CUmemPoolHandle_st pools[MAXDEV];
static device devs[MAXDEV];
static alloc *allocs;
static struct CUstream_st *streams;
static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;

/* ---- call counters ---- */
static const char *const counted[] = {
    "cuInit", "cuGetProcAddress", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuEventRecord",
    "cuStreamWaitEvent", "cuStreamSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyPeer", "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "legacy",
};
#define NCOUNTED (sizeof counted / sizeof counted[0])
static unsigned counts[NCOUNTED];

static void count(const char *name) { fakegpu_count(counted, counts, NCOUNTED, name); }

unsigned fakecuda_calls(const char *name) { return fakegpu_calls(counted, counts, NCOUNTED, name); }

/* ---- configuration ---- */

/* The fault-injection interposer's hooks, when it is preloaded. */
static hdalfi_driver_call_fn *fi_call;
static hdalfi_driver_object_fn *fi_object;

static void configure(void) {
  fakegpu_fi_hooks(&fi_call, &fi_object);
  const char *e = getenv("FAKECUDA_DEVICES");
  ndev = e ? atoi(e) : 1;
  if (ndev < 0) ndev = 0;
  if (ndev > MAXDEV) ndev = MAXDEV;
  e = getenv("FAKECUDA_INIT");
  init_result = e ? atoi(e) : ndev == 0 ? E_NO_DEVICE : OK;
  if ((e = getenv("FAKECUDA_DRIVER_VERSION"))) driver_version = atoi(e);
  gpa_fail = (e = getenv("FAKECUDA_GETPROCADDRESS")) && !strcmp(e, "fail");
  no_mempools = (e = getenv("FAKECUDA_MEMPOOLS")) && !strcmp(e, "0");
  slow_legacy = (e = getenv("FAKECUDA_SLOW_LEGACY")) && !strcmp(e, "1");
  const char *names = getenv("FAKECUDA_NAMES"), *pci = getenv("FAKECUDA_PCI_BUS_IDS");
  const char *mem = getenv("FAKECUDA_MEMORY"), *cc = getenv("FAKECUDA_COMPUTE_CAPABILITY");
  for (int i = 0; i < ndev; i++) {
    device *d = &devs[i];
    char buf[64];
    if (!fakegpu_list_item(names, i, d->name, sizeof d->name)) snprintf(d->name, sizeof d->name, "Fake GPU %d", i);
    d->bus = 0x10 + (unsigned)i;
    if (fakegpu_list_item(pci, i, buf, sizeof buf)) sscanf(buf, "%x:%x:%x", &d->domain, &d->bus, &d->slot);
    d->total = mem ? strtoull(mem, NULL, 0) : (size_t)16 << 30;
    d->major = 9;
    if (cc) sscanf(cc, "%d.%d", &d->major, &d->minor);
    d->ctx.device = i;
  }
}

/* Every entry point but the error-naming ones starts here.  `caller`: where
 * the entry point was called from, for fault injection (NULL: never fails). */
static CUresult check(const char *name, bool need_init, const void *caller) {
  pthread_once(&once, configure);
  count(name);
  if (init_result == E_STUB) return E_STUB;
  if (need_init && !initialised) return init_result ? init_result : E_NOT_INITIALIZED;
  if (caller && fi_call && fi_call(name, caller)) return E_OUT_OF_MEMORY;
  return OK;
}
#define CHECK_FROM(need_init, caller)                      \
  do {                                                     \
    CUresult r_ = check(__func__, (need_init), (caller));  \
    if (r_) return r_;                                     \
  } while (0)
#define CHECK(need_init) CHECK_FROM(need_init, __builtin_return_address(0))
#define CHECK_RELEASE(need_init) CHECK_FROM(need_init, NULL) /* gives back: never injected */
/* Tells the interposer, if any, about an object made or given back for the caller. */
#define FI_HELD(object, held) \
  do {                        \
    if (fi_object) fi_object((object), (held), __builtin_return_address(0)); \
  } while (0)

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

static bool valid_device(CUdevice d) { return d >= 0 && d < ndev; }

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
  snprintf(name, (size_t)len, "%s", devs[d].name);
  return OK;
}

static CUresult get_uuid(CUuuid *u, CUdevice d) {
  if (!u) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  static const unsigned char base[16] = {0xfa, 0xce, 0xc0, 0xda, 0x00, 0x01, 0x40, 0x00,
                                         0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  memcpy(u->bytes, base, 16);
  u->bytes[15] = (unsigned char)d;
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
  *bytes = devs[d].total;
  return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  CHECK(true);
  if (!v) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  switch (attr) {
  case 16: *v = 132; break;                  /* multiprocessors */
  case 33: *v = (int)devs[d].bus; break;     /* PCI bus */
  case 34: *v = (int)devs[d].slot; break;    /* PCI device */
  case 41: *v = 1; break;                    /* unified addressing */
  case 50: *v = (int)devs[d].domain; break;  /* PCI domain */
  case 75: *v = devs[d].major; break;
  case 76: *v = devs[d].minor; break;
  case 83: *v = 1; break;                    /* managed memory */
  case 115: *v = !no_mempools; break;        /* memory pools */
  default: return E_INVALID_VALUE;
  }
  return OK;
}

static void pool_release(struct CUmemPoolHandle_st *p, uint64_t keep);

/* ---- contexts ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  CHECK(true);
  if (!c) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  pthread_mutex_lock(&lock);
  devs[d].refs++;
  pthread_mutex_unlock(&lock);
  *c = &devs[d].ctx;
  FI_HELD(&devs[d], 1);
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  CHECK_RELEASE(true);
  if (!valid_device(d)) return E_INVALID_DEVICE;
  CUresult r = OK;
  pthread_mutex_lock(&lock);
  if (devs[d].refs > 0) devs[d].refs--;
  else r = E_INVALID_CONTEXT;
  bool last = !r && devs[d].refs == 0;
  pthread_mutex_unlock(&lock);
  if (last) pool_release(&pools[d], 0); /* the context goes, and its pool's memory */
  if (!r) FI_HELD(&devs[d], 0);
  return r;
}

int fakecuda_primary_refs(int d) {
  pthread_mutex_lock(&lock);
  int n = valid_device(d) ? devs[d].refs : -1;
  pthread_mutex_unlock(&lock);
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
  pthread_mutex_lock(&lock);
  bool ok = live_context(c);
  pthread_mutex_unlock(&lock);
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
  pthread_mutex_lock(&lock);
  int d = live_context(c) ? c->device : -1;
  pthread_mutex_unlock(&lock);
  return d;
}

/* ---- memory ---- */

/* The allocation holding [p, p+n); called with the lock held. */
static alloc *find(CUdeviceptr p, size_t n) {
  for (alloc *a = allocs; a; a = a->next) {
    uintptr_t base = (uintptr_t)a->base;
    if (p >= base && p - base < a->size && n <= a->size - (p - base)) return a;
  }
  return NULL;
}

static CUresult new_alloc(size_t n, int type, bool managed, void **out) {
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  if (n == 0) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  CUresult r = OK;
  alloc *a = NULL;
  if (type == MT_DEVICE && n > devs[d].total - devs[d].used) r = E_OUT_OF_MEMORY;
  else if (!(a = calloc(1, sizeof *a)) || !(a->base = aligned_alloc(256, (n + 255) / 256 * 256))) r = E_OUT_OF_MEMORY;
  if (r) {
    free(a);
  } else {
    a->size = n;
    a->device = d;
    a->type = type;
    a->managed = managed;
    a->next = allocs;
    allocs = a;
    if (type == MT_DEVICE) devs[d].used += n;
    *out = a->base;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

static CUresult free_alloc(void *p, bool host) {
  pthread_mutex_lock(&lock);
  CUresult r = E_INVALID_VALUE;
  for (alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
    alloc *a = *pp;
    if (a->base != p || (a->type == MT_HOST) != host) continue;
    *pp = a->next;
    if (a->type == MT_DEVICE) devs[a->device].used -= a->size;
    if (a->pooled) pools[a->device].reserved -= a->size; /* cuMemFree may free pool memory too */
    free(a->base);
    free(a);
    r = OK;
    break;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  void *v;
  CUresult r = new_alloc(n, MT_DEVICE, false, &v);
  if (!r) {
    *p = (CUdeviceptr)(uintptr_t)v;
    FI_HELD(v, 1);
  }
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  void *v;
  CUresult r = new_alloc(n, MT_DEVICE, true, &v);
  if (!r) {
    *p = (CUdeviceptr)(uintptr_t)v;
    FI_HELD(v, 1);
  }
  return r;
}

CUresult cuMemAllocHost_v2(void **p, size_t n) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  CUresult r = new_alloc(n, MT_HOST, false, p);
  if (!r) FI_HELD(*p, 1);
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  CHECK_RELEASE(true);
  CUresult r = free_alloc((void *)(uintptr_t)p, false);
  if (!r) FI_HELD((void *)(uintptr_t)p, 0);
  return r;
}

CUresult cuMemFreeHost(void *p) {
  CHECK_RELEASE(true);
  CUresult r = free_alloc(p, true);
  if (!r) FI_HELD(p, 0);
  return r;
}

size_t fakecuda_live_allocations(void) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (alloc *a = allocs; a; a = a->next) n++;
  pthread_mutex_unlock(&lock);
  return n;
}

static int attribute(const alloc *a, CUdeviceptr p, int attr, void *data) {
  switch (attr) {
  case 2: *(unsigned *)data = a ? (unsigned)a->type : 0; return OK;       /* memory type */
  case 8: *(bool *)data = a && a->managed; return OK;                     /* is managed */
  case 9: *(int *)data = a ? a->device : -2; return OK;                   /* device ordinal */
  case 3:                                                                 /* device pointer */
    if (!a) return E_INVALID_VALUE;
    if (a->type == MT_HOST && current_device() < 0) return E_INVALID_CONTEXT;
    *(CUdeviceptr *)data = p; /* unified addressing: the same address */
    return OK;
  default: return E_INVALID_VALUE;
  }
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  CHECK(true);
  if (!data) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  alloc *a = find(p, 0);
  pthread_mutex_unlock(&lock);
  if (!a) return E_INVALID_VALUE;
  return attribute(a, p, attr, data);
}

/* Unlike cuPointerGetAttribute, unknown memory is no error: the attributes read as empty. */
CUresult cuPointerGetAttributes(unsigned int n, int *attrs, void **data, CUdeviceptr p) {
  CHECK(true);
  if (!attrs || !data) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  alloc *a = find(p, 0);
  pthread_mutex_unlock(&lock);
  for (unsigned i = 0; i < n; i++) {
    if (attrs[i] == 3 && !a) continue;
    CUresult r = attribute(a, p, attrs[i], data[i]);
    if (r) return r;
  }
  return OK;
}

/* ---- streams and events ---- */

static void run(op *o) {
  if (o->event) {
    o->event->pending = false;
  } else {
    memcpy(o->dst, o->staging ? o->staging : o->src, o->n);
  }
  free(o->staging);
  free(o);
}

/* Runs a stream's queued work, up to and including `until` when it is given.  Lock held. */
static void flush(struct CUstream_st *s, struct CUevent_st *until) {
  while (s->head) {
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    bool last = until && o->event == until;
    run(o);
    if (last) return;
  }
}

/* Legacy default stream work waits for every blocking stream, and for its own
 * slow work.  Lock held. */
static void flush_blocking(void) {
  legacy_finished = legacy_launched;
  for (struct CUstream_st *s = streams; s; s = s->next)
    if (!(s->flags & TEST_CU_STREAM_NON_BLOCKING)) flush(s, NULL);
}

static bool known_stream(CUstream s) {
  for (struct CUstream_st *t = streams; t; t = t->next)
    if (t == s) return true;
  return false;
}

/* Runs a copy on stream `s`, or queues it there.  Lock held. */
static CUresult submit(CUstream s, void *dst, const void *src, size_t n, bool stage) {
  if (s == NULL || s == LEGACY) flush_blocking();
  if (s == NULL || s == LEGACY || s == PER_THREAD) {
    memmove(dst, src, n);
    return OK;
  }
  if (!known_stream(s)) return E_INVALID_HANDLE;
  op *o = calloc(1, sizeof *o);
  if (!o || (stage && !(o->staging = malloc(n)))) {
    free(o);
    return E_OUT_OF_MEMORY;
  }
  if (stage) memcpy(o->staging, src, n);
  o->dst = dst;
  o->src = src;
  o->n = n;
  if (s->tail) s->tail->next = o;
  else s->head = o;
  s->tail = o;
  return OK;
}

enum { TO_DEVICE = 1, FROM_DEVICE = 2 };

static CUresult copy(const void *caller, const char *name, int dirs, CUdeviceptr dst, CUdeviceptr src, size_t n,
                     CUstream s, bool need_ctx) {
  CUresult r = check(name, true, caller);
  if (r) return r;
  if (need_ctx && current_device() < 0) return E_INVALID_CONTEXT;
  if (n == 0) return OK;
  pthread_mutex_lock(&lock);
  if (((dirs & TO_DEVICE) && !find(dst, n)) || ((dirs & FROM_DEVICE) && !find(src, n)) || !dst || !src)
    r = E_INVALID_VALUE;
  else
    r = submit(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, !(dirs & FROM_DEVICE));
  pthread_mutex_unlock(&lock);
  return r;
}

#define U(p) ((CUdeviceptr)(uintptr_t)(p))
/* An entry point's copy: checked, and injected, as called from its caller. */
#define COPY(...) copy(__builtin_return_address(0), __func__, __VA_ARGS__)

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
CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
  pthread_mutex_lock(&lock);
  bool ok = live_context(dc) && live_context(sc);
  pthread_mutex_unlock(&lock);
  if (!ok) return initialised ? E_INVALID_CONTEXT : E_NOT_INITIALIZED;
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, NULL, false);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st) {
  pthread_mutex_lock(&lock);
  bool ok = live_context(dc) && live_context(sc);
  pthread_mutex_unlock(&lock);
  if (!ok) return initialised ? E_INVALID_CONTEXT : E_NOT_INITIALIZED;
  return COPY(TO_DEVICE | FROM_DEVICE, d, s, n, st, false);
}

CUresult cuStreamCreate(CUstream *out, unsigned int flags) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return E_OUT_OF_MEMORY;
  s->device = d;
  s->flags = flags;
  pthread_mutex_lock(&lock);
  s->next = streams;
  streams = s;
  pthread_mutex_unlock(&lock);
  *out = s;
  FI_HELD(s, 1);
  return OK;
}

CUresult cuStreamDestroy_v2(CUstream s) {
  CHECK_RELEASE(true);
  CUresult r = E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  for (struct CUstream_st **pp = &streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      flush(s, NULL); /* its work still completes */
      *pp = s->next;
      FI_HELD(s, 0);
      free(s);
      r = OK;
      break;
    }
  pthread_mutex_unlock(&lock);
  return r;
}

static void pool_release(struct CUmemPoolHandle_st *p, uint64_t keep);

CUresult cuStreamSynchronize(CUstream s) {
  CHECK(true);
  CUresult r = OK;
  int dev = current_device(); /* before the lock: it takes it */
  bool no_context = s == NULL && dev < 0;
  pthread_mutex_lock(&lock);
  bool trim = false;
  if (s == NULL || s == LEGACY) {
    if (no_context) r = E_INVALID_CONTEXT;
    else flush_blocking();
    trim = !no_context;
  } else if (s != PER_THREAD) {
    if (known_stream(s)) flush(s, NULL);
    else r = E_INVALID_HANDLE;
  }
  uint64_t keep = trim && dev >= 0 ? pools[dev].threshold : 0;
  pthread_mutex_unlock(&lock);
  if (trim && dev >= 0) pool_release(&pools[dev], keep); /* what exceeds the release threshold goes back */
  return r;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  struct CUevent_st *ev = calloc(1, sizeof *ev);
  if (!ev) return E_OUT_OF_MEMORY;
  ev->device = d;
  *e = ev;
  FI_HELD(ev, 1);
  return OK;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  CUresult r = OK;
  pthread_mutex_lock(&lock);
  if (s == NULL || s == LEGACY || s == PER_THREAD) {
    e->pending = s != PER_THREAD && slow_legacy && legacy_launched > legacy_finished; /* behind the slow work */
    e->stream = NULL;
    e->legacy_seq = legacy_launched;
    if (s != PER_THREAD && !e->pending) flush_blocking();
  } else if (!known_stream(s) || s->device != e->device) {
    r = E_INVALID_HANDLE; /* an event and a stream of different contexts */
  } else {
    op *o = calloc(1, sizeof *o);
    if (!o) {
      r = E_OUT_OF_MEMORY;
    } else {
      o->event = e;
      e->pending = true;
      e->stream = s;
      if (s->tail) s->tail->next = o;
      else s->head = o;
      s->tail = o;
    }
  }
  pthread_mutex_unlock(&lock);
  return r;
}

/* The fake runs the awaited work now: earlier than a GPU might, never out of order. */
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  if (e->pending && e->stream) flush(e->stream, e);
  else if (e->pending) flush_blocking();
  pthread_mutex_unlock(&lock);
  return OK;
}

/* Whether an event is still pending (lock held): one behind slow legacy work is done once that finished. */
static bool event_pending(CUevent e) {
  if (e->pending && !e->stream && e->legacy_seq <= legacy_finished) e->pending = false;
  return e->pending;
}

CUresult cuEventQuery(CUevent e) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  CUresult r = event_pending(e) ? E_NOT_READY : OK;
  pthread_mutex_unlock(&lock);
  return r;
}

CUresult cuEventSynchronize(CUevent e) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  if (event_pending(e)) {
    if (e->stream) flush(e->stream, e);
    else flush_blocking();
    e->pending = false;
  }
  pthread_mutex_unlock(&lock);
  return OK;
}

/* Test hook: slow work (a kernel) queued on the legacy stream, done at its next synchronisation. */
void fakecuda_legacy_launch(void);
void fakecuda_legacy_launch(void) {
  pthread_mutex_lock(&lock);
  legacy_launched++;
  pthread_mutex_unlock(&lock);
}

/* ---- the stream-ordered allocator ---- */

/* Releases cached blocks until the pool holds at most `keep` bytes. */
static void pool_release(struct CUmemPoolHandle_st *p, uint64_t keep) {
  pthread_mutex_lock(&lock);
  while (p->ncached && p->reserved > keep) {
    pool_block b = p->cached[--p->ncached];
    pthread_mutex_unlock(&lock);
    free_alloc(b.base, false);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice d) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  if (no_mempools) return E_NOT_SUPPORTED;
  pools[d].device = d;
  *out = &pools[d];
  return OK;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *value) {
  CHECK(true);
  if (!p || !value || attr != 4) return E_INVALID_VALUE; /* the release threshold only */
  pthread_mutex_lock(&lock);
  memcpy(&p->threshold, value, sizeof p->threshold);
  pthread_mutex_unlock(&lock);
  return OK;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *value) {
  CHECK(true);
  if (!p || !value) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  CUresult r = OK;
  if (attr == 4) memcpy(value, &p->threshold, sizeof p->threshold);
  else if (attr == 5) memcpy(value, &p->reserved, sizeof p->reserved);
  else r = E_INVALID_VALUE;
  pthread_mutex_unlock(&lock);
  return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  pool_release(p, keep);
  return OK;
}

CUresult cuMemAllocAsync(CUdeviceptr *out, size_t n, CUstream s) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  if (no_mempools) return E_NOT_SUPPORTED;
  struct CUmemPoolHandle_st *p = &pools[d];
  void *v = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < p->ncached; i++)
    if (p->cached[i].size == n) { /* reuse in stream order: hdal's work is all on the legacy stream */
      v = p->cached[i].base;
      p->cached[i] = p->cached[--p->ncached];
      break;
    }
  pthread_mutex_unlock(&lock);
  if (!v) {
    CUresult r = new_alloc(n, MT_DEVICE, false, &v);
    if (r) return r;
    pthread_mutex_lock(&lock);
    find((CUdeviceptr)(uintptr_t)v, n)->pooled = true;
    p->reserved += n;
    pthread_mutex_unlock(&lock);
  }
  *out = (CUdeviceptr)(uintptr_t)v;
  FI_HELD(v, 1);
  return OK;
}

CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream s) {
  CHECK_RELEASE(true);
  int d = current_device();
  if (d < 0) return E_INVALID_CONTEXT;
  void *v = (void *)(uintptr_t)ptr;
  pthread_mutex_lock(&lock);
  alloc *a = find(ptr, 1);
  CUresult r = a && a->base == v && pools[d].ncached < 64 ? OK : E_INVALID_VALUE;
  if (!r) pools[d].cached[pools[d].ncached++] = (pool_block){v, a->size};
  pthread_mutex_unlock(&lock);
  if (!r) FI_HELD(v, 0);
  return r;
}

CUresult cuEventDestroy_v2(CUevent e) {
  CHECK_RELEASE(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  /* A destroyed event may still be queued: its marker lives on without it. */
  if (e->pending && e->stream)
    for (op *o = e->stream->head; o; o = o->next)
      if (o->event == e) {
        o->event = NULL;
        o->n = 0;
      }
  pthread_mutex_unlock(&lock);
  FI_HELD(e, 0);
  free(e);
  return OK;
}

/* ---- the unversioned legacy names: never to be called ---- */
#define TRAP(name)                   \
  CUresult name(void);               \
  CUresult name(void) {              \
    count("legacy");                 \
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
    P("cuMemFreeAsync", 11020, cuMemFreeAsync),
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
