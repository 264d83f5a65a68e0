/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake HIP runtime for hdal's tests: the entry points hdal and its tests
 * call, emulating AMD GPUs.  Built for `make check` only, twice: fakehip5.so
 * speaks the ROCm 5.x ABI (FAKEHIP_ABI=5), fakehip6.so the 6.0 one.
 *
 * Device memory is a shared mapping seen by the fake through a second, writable
 * view; the address handed out is mapped PROT_NONE, so that host code touching
 * device memory faults as it would on a GPU.  hipHostMalloc memory (pinned) is
 * ordinary host memory that the devices map at the same address.
 *
 * Scripted by the environment, read at the first call:
 *   FAKEHIP_DEVICES          device count (default 1)
 *   FAKEHIP_INIT             hipInit's result (default 0; 101, what ROCm 5
 *                            says without a GPU, with no device)
 *   FAKEHIP_NAMES            comma-separated names (default "Fake AMD GPU <n>")
 *   FAKEHIP_PCI_BUS_IDS      comma-separated "dddd:bb:dd.f" (default 0000:<c1+n>:00.0)
 *   FAKEHIP_ARCH             gcnArchName (default gfx90a:sramecc+:xnack-)
 *   FAKEHIP_MEMORY           bytes per device (default 64 GiB); allocations beyond fail
 *   FAKEHIP_RUNTIME_VERSION  hipRuntimeGetVersion (default 50221153, 50013601 or 60032830)
 *   FAKEHIP_MEMPOOLS         "0": the memory pool calls answer hipErrorNotSupported
 *   FAKEHIP_SLOW_NULL        "1": work on the null stream is slow: an event recorded there
 *                            after fakehip_null_launch() stays pending (hipEventQuery:
 *                            hipErrorNotReady) until the null stream is synchronised (a
 *                            synchronous copy, hipStreamSynchronize, hipEventSynchronize)
 *
 * Each device has a default memory pool (hipMallocAsync/hipFreeAsync): freed
 * blocks are cached and reused for the same size; synchronising the null
 * stream releases what exceeds the pool's release threshold (0 by default, as
 * HIP's), hipMemPoolTrimTo releases down to its argument.  Built with
 * FAKEHIP_MEMPOOL_API=0 (fakehip50.so, a ROCm 5.0 runtime), it has none of
 * these entry points.
 *
 * The ABIs differ as the real ones do: hipMemoryType numbering (5: Host 0,
 * Device 1; 6: Unregistered 0, Host 1, Device 2), unknown memory (5: an error
 * of hipPointerGetAttributes; 6: Unregistered), hipDeviceProp_t (5: 792 bytes
 * from hipGetDeviceProperties; 6: 1472 from hipGetDevicePropertiesR0600, the
 * plain name keeping the old layout), and error strings (5: the name again).
 *
 * Streams created by hipStreamCreateWithFlags run their work lazily, when
 * something waits for them, so that tests see whether hdal orders its work
 * after a caller's stream.  Under tests/faultinject's interposer, every call
 * hdal makes that can fail is counted and the walk's Nth fails with
 * hipErrorOutOfMemory; frees and destroys never fail.  Hooks for tests:
 * fakehip_live_allocations, fakehip_calls, fakehip_null_launch.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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
#define PER_THREAD ((hipStream_t)2)

typedef struct ihipEvent_t *hipEvent_t;
typedef struct {
  char bytes[16];
} hipUUID;
#define MAXDEV 8

typedef struct op {
  struct op *next;
  void *dst;
  const void *src;
  size_t n;
  void *staging;            /* host to device from pageable memory: copied at submission */
  struct ihipEvent_t *event; /* an event marker instead of a copy */
} op;

struct ihipStream_t {
  struct ihipStream_t *next;
  int device;
  unsigned flags;
  op *head, *tail;
};

struct ihipEvent_t {
  int device;
  bool pending;
  struct ihipStream_t *stream; /* NULL while pending: behind slow null-stream work */
  unsigned long null_seq;
};

typedef struct alloc {
  struct alloc *next;
  char *base;   /* the address handed out */
  char *shadow; /* where the fake reads and writes it */
  size_t size, mapped;
  int device;
  int type;
  bool pooled; /* of the device's memory pool (hipMallocAsync): counted in its reserved bytes */
} alloc;

/* A device's default memory pool: cached blocks of hipFreeAsync. */
typedef struct {
  void *base;
  size_t size;
} pool_block;
typedef struct ihipMemPoolHandle_t {
  int device;
  uint64_t threshold, reserved;
  pool_block cached[64];
  size_t ncached;
} mempool;

typedef struct {
  char name[256], arch[256];
  unsigned domain, bus, slot;
  size_t total, used;
} device;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_result, ndev, runtime_version = DEFAULT_VERSION;
static device devs[MAXDEV];
static alloc *allocs;
static struct ihipStream_t *streams;
static __thread int current;
static bool no_mempools, slow_null;
static unsigned long null_launched, null_finished; /* slow null-stream work (fakehip_null_launch) */
static mempool pools[MAXDEV];

/* ---- call counters ---- */
static const char *const counted[] = {
    "hipInit", "hipMalloc", "hipFree", "hipMemcpyPeer", "hipMemcpyPeerAsync", "hipEventRecord",
    "hipStreamWaitEvent", "hipStreamSynchronize", "hipGetDeviceProperties", "hipGetDevicePropertiesR0600",
    "hipSetDevice", "hipMemcpy", "hipMemcpyAsync", "hipMallocAsync", "hipFreeAsync", "hipMemPoolTrimTo",
    "hipEventQuery", "hipEventSynchronize",
};
#define NCOUNTED (sizeof counted / sizeof counted[0])
static unsigned counts[NCOUNTED];

static void count(const char *name) { fakegpu_count(counted, counts, NCOUNTED, name); }

unsigned fakehip_calls(const char *name) { return fakegpu_calls(counted, counts, NCOUNTED, name); }

/* ---- configuration ---- */

/* The fault-injection interposer's hooks, when it is preloaded. */
static hdalfi_driver_call_fn *fi_call;
static hdalfi_driver_object_fn *fi_object;

static void configure(void) {
  fakegpu_fi_hooks(&fi_call, &fi_object);
  const char *e = getenv("FAKEHIP_DEVICES");
  ndev = e ? atoi(e) : 1;
  if (ndev < 0) ndev = 0;
  if (ndev > MAXDEV) ndev = MAXDEV;
  e = getenv("FAKEHIP_INIT");
  init_result = e ? atoi(e) : ndev == 0 ? E_INVALID_DEVICE : OK;
  if ((e = getenv("FAKEHIP_RUNTIME_VERSION"))) runtime_version = atoi(e);
  no_mempools = (e = getenv("FAKEHIP_MEMPOOLS")) && !strcmp(e, "0");
  slow_null = (e = getenv("FAKEHIP_SLOW_NULL")) && !strcmp(e, "1");
  const char *names = getenv("FAKEHIP_NAMES"), *pci = getenv("FAKEHIP_PCI_BUS_IDS");
  const char *mem = getenv("FAKEHIP_MEMORY"), *arch = getenv("FAKEHIP_ARCH");
  for (int i = 0; i < ndev; i++) {
    device *d = &devs[i];
    char buf[64];
    if (!fakegpu_list_item(names, i, d->name, sizeof d->name)) snprintf(d->name, sizeof d->name, "Fake AMD GPU %d", i);
    snprintf(d->arch, sizeof d->arch, "%s", arch ? arch : "gfx90a:sramecc+:xnack-");
    d->bus = 0xc1 + (unsigned)i;
    if (fakegpu_list_item(pci, i, buf, sizeof buf)) sscanf(buf, "%x:%x:%x", &d->domain, &d->bus, &d->slot);
    d->total = mem ? strtoull(mem, NULL, 0) : (size_t)64 << 30;
  }
}

/* Every entry point but the error-naming ones starts here.  `caller`: where
 * the entry point was called from, for fault injection (NULL: never fails). */
static hipError_t check(const char *name, bool need_device, const void *caller) {
  pthread_once(&once, configure);
  count(name);
  if (need_device && init_result) return E_NO_DEVICE;
  if (caller && fi_call && fi_call(name, caller)) return E_OUT_OF_MEMORY;
  return OK;
}
#define CHECK_FROM(need, caller)                           \
  do {                                                     \
    hipError_t r_ = check(__func__, (need), (caller));     \
    if (r_) return r_;                                     \
  } while (0)
#define CHECK(need) CHECK_FROM(need, __builtin_return_address(0))
#define CHECK_RELEASE(need) CHECK_FROM(need, NULL) /* gives back: never injected */
#define FI_HELD(object, held) \
  do {                        \
    if (fi_object) fi_object((object), (held), __builtin_return_address(0)); \
  } while (0)

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

static bool valid_device(int d) { return d >= 0 && d < ndev; }

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
  snprintf(id, sizeof id, "fa7eb1d0c0de%04x", (unsigned)d & 0xffff);
  memcpy(u->bytes, id, 16);
  return OK;
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
  snprintf((char *)p + 396, 256, "%s", devs[d].arch);
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
  snprintf((char *)p + 1160, 256, "%s", devs[d].arch);
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

hipError_t hipGetDevice(int *d) {
  CHECK(true);
  if (!d) return E_INVALID_VALUE;
  *d = current;
  return OK;
}

/* ---- memory ---- */

/* The allocation holding [p, p+n); called with the lock held. */
static alloc *find(const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;
  for (alloc *x = allocs; x; x = x->next) {
    uintptr_t base = (uintptr_t)x->base;
    if (a >= base && a - base < x->size && n <= x->size - (a - base)) return x;
  }
  return NULL;
}

/* Where the fake reaches [p, p+n) of a device allocation; NULL if it is none.  Lock held. */
static void *device_view(const void *p, size_t n, int on_device) {
  alloc *a = find(p, n);
  if (!a || a->type != MT_DEVICE || (on_device >= 0 && a->device != on_device)) return NULL;
  return a->shadow + ((const char *)p - a->base);
}

/* Host memory hdal may hand to a copy: anything but device memory. */
static bool host_side(const void *p, size_t n) {
  alloc *a = find(p, 0);
  (void)n;
  return p && (!a || a->type != MT_DEVICE);
}

static hipError_t new_alloc(size_t n, int type, void **out) {
  pthread_mutex_lock(&lock);
  hipError_t r = OK;
  int d = current;
  alloc *a = NULL;
  if (type == MT_DEVICE && n > devs[d].total - devs[d].used) {
    r = E_OUT_OF_MEMORY;
  } else if (!(a = calloc(1, sizeof *a))) {
    r = E_OUT_OF_MEMORY;
  } else if (type == MT_DEVICE) {
    /* Two views of one shared object: PROT_NONE for everyone, writable for the fake. */
    long page = sysconf(_SC_PAGESIZE);
    a->mapped = (n + (size_t)page - 1) / (size_t)page * (size_t)page;
    int fd = memfd_create("fakehip", MFD_CLOEXEC);
    void *base = MAP_FAILED, *shadow = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)a->mapped) == 0) {
      base = mmap(NULL, a->mapped, PROT_NONE, MAP_SHARED, fd, 0);
      shadow = mmap(NULL, a->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (fd >= 0) close(fd);
    if (base == MAP_FAILED || shadow == MAP_FAILED) {
      if (base != MAP_FAILED) munmap(base, a->mapped);
      if (shadow != MAP_FAILED) munmap(shadow, a->mapped);
      r = E_OUT_OF_MEMORY;
    } else {
      a->base = base;
      a->shadow = shadow;
    }
  } else if (!(a->base = a->shadow = aligned_alloc(256, (n + 255) / 256 * 256))) {
    r = E_OUT_OF_MEMORY;
  }
  if (r) {
    free(a);
  } else {
    a->size = n;
    a->device = d;
    a->type = type;
    a->next = allocs;
    allocs = a;
    if (type == MT_DEVICE) devs[d].used += n;
    *out = a->base;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

static hipError_t free_alloc(void *p, int type) {
  if (!p) return OK;
  pthread_mutex_lock(&lock);
  hipError_t r = E_INVALID_VALUE;
  for (alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
    alloc *a = *pp;
    if (a->base != p || a->type != type) continue;
    *pp = a->next;
    if (a->pooled) pools[a->device].reserved -= a->size; /* hipFree may free pool memory too */
    if (a->type == MT_DEVICE) {
      devs[a->device].used -= a->size;
      munmap(a->base, a->mapped);
      munmap(a->shadow, a->mapped);
    } else {
      free(a->base);
    }
    free(a);
    r = OK;
    break;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

hipError_t hipMalloc(void **p, size_t n) {
  CHECK(true);
  if (!p) return E_INVALID_VALUE;
  if (n == 0) { /* as HIP: success, and no memory */
    *p = NULL;
    return OK;
  }
  hipError_t r = new_alloc(n, MT_DEVICE, p);
  if (!r) FI_HELD(*p, 1);
  return r;
}

hipError_t hipHostMalloc(void **p, size_t n, unsigned int flags) {
  CHECK(true);
  if (!p || n == 0) return E_INVALID_VALUE;
  hipError_t r = new_alloc(n, MT_HOST, p);
  if (!r) FI_HELD(*p, 1);
  return r;
}

hipError_t hipFree(void *p) {
  CHECK_RELEASE(true);
  hipError_t r = free_alloc(p, MT_DEVICE);
  if (!r && p) FI_HELD(p, 0);
  return r;
}

hipError_t hipHostFree(void *p) {
  CHECK_RELEASE(true);
  hipError_t r = free_alloc(p, MT_HOST);
  if (!r && p) FI_HELD(p, 0);
  return r;
}

size_t fakehip_live_allocations(void) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (alloc *a = allocs; a; a = a->next) n++;
  pthread_mutex_unlock(&lock);
  return n;
}

typedef struct {
  int type, device;
  void *devicePointer, *hostPointer;
  int isManaged;
  unsigned allocationFlags;
} pointer_attributes;

hipError_t hipPointerGetAttributes(pointer_attributes *out, const void *p) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  alloc *a = find(p, 0);
  pointer_attributes v = {0};
  if (a) {
    v.type = a->type;
    v.device = a->device;
    v.devicePointer = (void *)p; /* one address space */
    v.hostPointer = a->type == MT_HOST ? (void *)p : NULL;
  }
  pthread_mutex_unlock(&lock);
#if FAKEHIP_ABI == 5
  if (!a) return E_INVALID_VALUE;
#else
  if (!a) v.type = MT_UNREGISTERED;
#endif
  *out = v;
  return OK;
}

/* ---- streams and events ---- */

static void run(op *o) {
  if (o->event)
    o->event->pending = false;
  else
    memcpy(o->dst, o->staging ? o->staging : o->src, o->n);
  free(o->staging);
  free(o);
}

/* Runs a stream's queued work, up to and including `until` when given.  Lock held. */
static void flush(struct ihipStream_t *s, struct ihipEvent_t *until) {
  while (s->head) {
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    bool last = until && o->event == until;
    run(o);
    if (last) return;
  }
}

/* Null-stream work waits for every blocking stream, and for its own slow
 * work.  Lock held. */
static void flush_blocking(void) {
  null_finished = null_launched;
  for (struct ihipStream_t *s = streams; s; s = s->next)
    if (!(s->flags & TEST_HIP_STREAM_NON_BLOCKING)) flush(s, NULL);
}

static bool known_stream(hipStream_t s) {
  for (struct ihipStream_t *t = streams; t; t = t->next)
    if (t == s) return true;
  return false;
}

static void enqueue(struct ihipStream_t *s, op *o) {
  if (s->tail) s->tail->next = o;
  else s->head = o;
  s->tail = o;
}

/* Runs a copy on stream `s`, or queues it there.  Lock held. */
static hipError_t submit(hipStream_t s, void *dst, const void *src, size_t n, bool stage) {
  if (s == NULL) flush_blocking();
  if (s == NULL || s == PER_THREAD) {
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
  enqueue(s, o);
  return OK;
}

/* hipMemcpyKind: 0 host to host, 1 to device, 2 from device, 3 device to device, 4 default. */
static hipError_t copy(const void *caller, const char *name, void *dst, int dst_dev, const void *src, int src_dev,
                       size_t n, int kind, hipStream_t s) {
  hipError_t r = check(name, true, caller);
  if (r) return r;
  if (n == 0) return OK;
  if (!dst || !src || kind < 0 || kind > 4) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  if (kind == 4) kind = (device_view(src, n, -1) ? 2 : 0) | (device_view(dst, n, -1) ? 1 : 0);
  void *to = kind & 1 ? device_view(dst, n, dst_dev) : host_side(dst, n) ? dst : NULL;
  const void *from = kind & 2 ? device_view(src, n, src_dev) : host_side(src, n) ? src : NULL;
  if (!to || !from)
    r = E_INVALID_VALUE; /* a range outside an allocation, or device memory named as host memory */
  else
    r = submit(s, to, from, n, !(kind & 2));
  pthread_mutex_unlock(&lock);
  return r;
}
#define COPY(...) copy(__builtin_return_address(0), __func__, __VA_ARGS__)

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

hipError_t hipStreamCreateWithFlags(hipStream_t *out, unsigned int flags) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  struct ihipStream_t *s = calloc(1, sizeof *s);
  if (!s) return E_OUT_OF_MEMORY;
  s->device = current;
  s->flags = flags;
  pthread_mutex_lock(&lock);
  s->next = streams;
  streams = s;
  pthread_mutex_unlock(&lock);
  *out = s;
  FI_HELD(s, 1);
  return OK;
}

hipError_t hipStreamDestroy(hipStream_t s) {
  CHECK_RELEASE(true);
  hipError_t r = E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  for (struct ihipStream_t **pp = &streams; *pp; pp = &(*pp)->next)
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

static void pool_release(mempool *p, uint64_t keep);

hipError_t hipStreamSynchronize(hipStream_t s) {
  CHECK(true);
  hipError_t r = OK;
  pthread_mutex_lock(&lock);
  if (s == NULL)
    flush_blocking();
  else if (s != PER_THREAD) {
    if (known_stream(s)) flush(s, NULL);
    else r = E_INVALID_HANDLE;
  }
  uint64_t keep = pools[current].threshold;
  pthread_mutex_unlock(&lock);
  if (s == NULL) pool_release(&pools[current], keep); /* what exceeds the release threshold goes back */
  return r;
}

hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_VALUE;
  struct ihipEvent_t *ev = calloc(1, sizeof *ev);
  if (!ev) return E_OUT_OF_MEMORY;
  ev->device = current;
  *e = ev;
  FI_HELD(ev, 1);
  return OK;
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  hipError_t r = OK;
  pthread_mutex_lock(&lock);
  if (s == NULL || s == PER_THREAD) {
    e->pending = s == NULL && slow_null && null_launched > null_finished; /* behind the slow work */
    e->stream = NULL;
    e->null_seq = null_launched;
    if (s == NULL && !e->pending) flush_blocking();
  } else if (!known_stream(s) || s->device != e->device) {
    r = E_INVALID_HANDLE; /* an event and a stream of different devices */
  } else {
    op *o = calloc(1, sizeof *o);
    if (!o) {
      r = E_OUT_OF_MEMORY;
    } else {
      o->event = e;
      e->pending = true;
      e->stream = s;
      enqueue(s, o);
    }
  }
  pthread_mutex_unlock(&lock);
  return r;
}

/* The fake runs the awaited work now: earlier than a GPU might, never out of order. */
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  if (e->pending && e->stream) flush(e->stream, e);
  else if (e->pending) flush_blocking();
  pthread_mutex_unlock(&lock);
  return OK;
}

/* Whether an event is still pending (lock held): one behind slow null-stream
 * work is done once that finished. */
static bool event_pending(hipEvent_t e) {
  if (e->pending && !e->stream && e->null_seq <= null_finished) e->pending = false;
  return e->pending;
}

hipError_t hipEventQuery(hipEvent_t e) {
  CHECK(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  hipError_t r = event_pending(e) ? E_NOT_READY : OK;
  pthread_mutex_unlock(&lock);
  return r;
}

hipError_t hipEventSynchronize(hipEvent_t e) {
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

/* Test hook: slow work (a kernel) queued on the null stream, done at its next synchronisation. */
void fakehip_null_launch(void) {
  pthread_mutex_lock(&lock);
  null_launched++;
  pthread_mutex_unlock(&lock);
}

hipError_t hipEventDestroy(hipEvent_t e) {
  CHECK_RELEASE(true);
  if (!e) return E_INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  /* A destroyed event may still be queued: its marker lives on without it. */
  if (e->pending && e->stream)
    for (op *o = e->stream->head; o; o = o->next)
      if (o->event == e) o->event = NULL, o->n = 0;
  pthread_mutex_unlock(&lock);
  FI_HELD(e, 0);
  free(e);
  return OK;
}

/* ---- the stream-ordered allocator ---- */

/* Releases cached blocks until the pool holds at most `keep` bytes. */
static void pool_release(mempool *p, uint64_t keep) {
  pthread_mutex_lock(&lock);
  while (p->ncached && p->reserved > keep) {
    pool_block b = p->cached[--p->ncached];
    pthread_mutex_unlock(&lock);
    free_alloc(b.base, MT_DEVICE);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
}

#if FAKEHIP_MEMPOOL_API
hipError_t hipDeviceGetDefaultMemPool(mempool **out, int d) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (!valid_device(d)) return E_INVALID_DEVICE;
  if (no_mempools) return E_NOT_SUPPORTED;
  pools[d].device = d;
  *out = &pools[d];
  return OK;
}

hipError_t hipMemPoolSetAttribute(mempool *p, int attr, void *value) {
  CHECK(true);
  if (no_mempools) return E_NOT_SUPPORTED;
  if (!p || !value || attr != 4) return E_INVALID_VALUE; /* the release threshold only */
  pthread_mutex_lock(&lock);
  memcpy(&p->threshold, value, sizeof p->threshold);
  pthread_mutex_unlock(&lock);
  return OK;
}

hipError_t hipMemPoolGetAttribute(mempool *p, int attr, void *value) {
  CHECK(true);
  if (no_mempools) return E_NOT_SUPPORTED;
  if (!p || !value) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  hipError_t r = OK;
  if (attr == 4) memcpy(value, &p->threshold, sizeof p->threshold);
  else if (attr == 5) memcpy(value, &p->reserved, sizeof p->reserved);
  else r = E_INVALID_VALUE;
  pthread_mutex_unlock(&lock);
  return r;
}

hipError_t hipMemPoolTrimTo(mempool *p, size_t keep) {
  CHECK(true);
  if (no_mempools) return E_NOT_SUPPORTED;
  if (!p) return E_INVALID_VALUE;
  pool_release(p, keep);
  return OK;
}

hipError_t hipMallocAsync(void **out, size_t n, hipStream_t s) {
  CHECK(true);
  if (!out) return E_INVALID_VALUE;
  if (no_mempools) return E_NOT_SUPPORTED;
  if (n == 0) { /* as hipMalloc */
    *out = NULL;
    return OK;
  }
  mempool *p = &pools[current];
  void *v = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < p->ncached; i++)
    if (p->cached[i].size == n) { /* reuse in stream order: hdal's work is all on the null stream */
      v = p->cached[i].base;
      p->cached[i] = p->cached[--p->ncached];
      break;
    }
  pthread_mutex_unlock(&lock);
  if (!v) {
    hipError_t r = new_alloc(n, MT_DEVICE, &v);
    if (r) return r;
    pthread_mutex_lock(&lock);
    find(v, n)->pooled = true;
    p->reserved += n;
    pthread_mutex_unlock(&lock);
  }
  *out = v;
  FI_HELD(v, 1);
  return OK;
}

/* Back to the pool of the device the block is on. */
hipError_t hipFreeAsync(void *v, hipStream_t s) {
  CHECK_RELEASE(true);
  if (!v) return OK;
  pthread_mutex_lock(&lock);
  alloc *a = find(v, 1);
  hipError_t r = a && a->base == v && a->pooled && pools[a->device].ncached < 64 ? OK : E_INVALID_VALUE;
  if (!r) pools[a->device].cached[pools[a->device].ncached++] = (pool_block){v, a->size};
  pthread_mutex_unlock(&lock);
  if (!r) FI_HELD(v, 0);
  return r;
}
#endif
