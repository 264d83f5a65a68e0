/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake Level Zero driver for hdal's tests: the Level Zero face of the fake
 * GPU core (tests/fakes/fakegpu.c says what it emulates and how it is scripted).
 * Built for `make check` only, never installed, and loaded by the system's
 * real loader (Debian's libze1) through ZE_ENABLE_ALT_DRIVERS, so that the
 * loader's dispatch, and its validation layer when enabled, are real.
 *
 * A driver gives the loader its entry points through tables: it exports the
 * table getters (zeGet*ProcAddrTable), and the loader 1.8 refuses a driver
 * that lacks any of the 46 non-experimental ones (ze 17, zet 12, zes 17).
 * Those of the calls hdal and its tests make are filled; the others are left
 * NULL, which the loader answers with "unsupported feature".  The entry
 * points themselves are static: nothing but the getters and the test hooks
 * (fakeze_*) is exported, so no symbol of the fake can stand for the loader's.
 *
 * Device memory (zeMemAllocDevice) faults on host access, as a GPU's does;
 * shared memory (zeMemAllocShared) and host memory (zeMemAllocHost) are host
 * memory.  Immediate command lists run their work when it is appended, in
 * order; with FAKEZE_SLOW_LIST=1, an event signalled after
 * fakeze_slow_launch() (a kernel still running) stays unsignalled until the
 * host waits on an event.
 *
 * Besides the core's FAKEZE_DEVICES, FAKEZE_INIT (default 0; with no device
 * ZE_RESULT_ERROR_UNINITIALIZED, as Intel's driver without a GPU),
 * FAKEZE_NAMES ("Fake Intel GPU <n>"), FAKEZE_PCI_BUS_IDS (0000:<3a+n>:00.0)
 * and FAKEZE_MEMORY (16 GiB):
 *   FAKEZE_SUBDEVICES       sub-devices (tiles) per device, each with a memory of its share (default 0)
 *   FAKEZE_STRICT_CONTEXTS  "1": zeMemGetAllocProperties knows only the memory of the context asked
 *                           (by default, as Intel's driver, any of the driver's contexts)
 *   FAKEZE_DEVICE_COUNT     what zeDeviceGet says the count is (a broken driver's absurd count)
 *   FAKEZE_DRIVER_VERSION   driverVersion (default 16842752)
 * It honours ZE_AFFINITY_MASK as Intel's driver does ("0,2", "1.0": root
 * devices, or one tile of one; entries that name nothing are ignored; the
 * devices left keep the machine's order, renumbered from 0).  The machine's
 * device m keeps its UUID (last byte m, or its FAKEZE_UUIDS item,
 * "8680d50b-0000-0000-0000-0000000000a7", its tiles' with their number + 1 in
 * the last but one byte) and PCI bus id whatever its ordinal.
 * zeDeviceCanAccessPeer answers FAKEZE_PEER by machine index, and yes for two
 * tiles of a device or a device and its own tile; zeCommandListAppendMemoryCopy
 * refuses (ZE_RESULT_ERROR_INVALID_ARGUMENT) device memory of another device
 * that the list's device may not reach by that answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../backends/levelzero/ze_api.h"
#include "../fakegpu.h"

#define EXPORT __attribute__((visibility("default")))

static const char *const counted[] = {
    "zeInit", "zeMemAllocDevice", "zeMemAllocShared", "zeMemAllocHost", "zeMemFree", "zeContextCreate",
    "zeContextDestroy", "zeCommandListCreateImmediate", "zeCommandListDestroy", "zeCommandListAppendMemoryCopy",
    "zeCommandListAppendSignalEvent", "zeEventQueryStatus", "zeEventHostSynchronize", "zeEventCreate",
    "zeEventDestroy", "zeMemGetAllocProperties", "zeDevicePciGetPropertiesExt", "zeDeviceCanAccessPeer",
};

static int nsub, device_count = -1;
static bool strict;
static uint32_t driver_version = 16842752;

/* Per machine device, the tiles ZE_AFFINITY_MASK leaves it, a bit each; 0: all of them. */
static unsigned tiles[FAKEGPU_MAXDEV];

static void configure(void) {
  const char *e;
  if ((e = getenv("FAKEZE_DEVICE_COUNT"))) device_count = atoi(e);
  if ((e = getenv("FAKEZE_DRIVER_VERSION"))) driver_version = (uint32_t)strtoul(e, NULL, 0);
  strict = (e = getenv("FAKEZE_STRICT_CONTEXTS")) && !strcmp(e, "1");
}

/* A decimal number at *p, below `limit`, moving *p past it; -1 when there is none or it is too large. */
static int number(const char **p, int limit) {
  long v = -1;
  for (; **p >= '0' && **p <= '9'; ++*p)
    if ((v = (v < 0 ? 0 : v * 10) + (**p - '0')) >= limit) v = limit;
  return v >= limit ? -1 : (int)v;
}

/* ZE_AFFINITY_MASK, as Intel's driver reads it: "D" keeps root device D, "D.T" its tile T only; an entry
 * that names no device or tile is ignored; the devices kept stay in the machine's order.  Unset or empty:
 * every device.  The tile count (FAKEZE_SUBDEVICES) is read here, before the face's configuration. */
static int visible(int n, int *order) {
  const char *e = getenv("FAKEZE_SUBDEVICES");
  if (e) nsub = atoi(e) < 0 ? 0 : atoi(e) > 4 ? 4 : atoi(e);
  const char *mask = getenv("ZE_AFFINITY_MASK");
  if (!mask || !*mask) return fakegpu_all_visible(n, order);
  bool kept[FAKEGPU_MAXDEV] = {false}, whole[FAKEGPU_MAXDEV] = {false};
  for (const char *p = mask;;) {
    while (*p == ' ') p++;
    int d = number(&p, n), t = -1;
    if (d >= 0 && *p == '.') {
      p++;
      if ((t = number(&p, nsub)) < 0) d = -1;
    }
    while (*p == ' ') p++;
    if (d >= 0 && (*p == ',' || !*p)) {
      kept[d] = true;
      if (t < 0) whole[d] = true;
      else tiles[d] |= 1u << t;
    }
    p += strcspn(p, ",");
    if (!*p++) break;
  }
  int k = 0;
  for (int d = 0; d < n; d++) {
    if (whole[d]) tiles[d] = 0;
    if (kept[d]) order[k++] = d;
  }
  return k;
}

/* The tiles of visible device i: their count, and the j-th one's number. */
static int tile_count(int i) {
  unsigned m = tiles[fakegpu.devs[i].physical];
  return m ? __builtin_popcount(m) : nsub;
}
static int tile_number(int i, int j) {
  unsigned m = tiles[fakegpu.devs[i].physical];
  if (!m) return j;
  for (int t = 0; t < 4; t++)
    if ((m >> t & 1u) && j-- == 0) return t;
  return -1;
}

FAKEGPU_FACE("FAKEZE_", "Fake Intel GPU ", 0x3a, (size_t)16 << 30, "FAKEZE_SLOW_LIST", ZE_RESULT_ERROR_UNINITIALIZED,
             true, false);

/* ---- handles ---- */

typedef struct {
  int magic;
} fake_driver;
typedef struct {
  int index;      /* the root device's */
  int sub;        /* -1: the root device; else its tile */
} fake_device;
typedef struct {
  int magic;
} fake_context;
typedef struct {
  fake_context *context;
  int device;
} fake_list;
typedef struct {
  fake_context *context;
  uint32_t count;
} fake_pool;
typedef struct {
  fake_pool *pool;
  void *core; /* the core's event */
} fake_event;

static fake_driver driver = {0x2e};
static fake_device roots[FAKEGPU_MAXDEV], subs[FAKEGPU_MAXDEV][4];
static int live_contexts, live_lists, live_pools, live_events;

static fake_device *device_of(ze_device_handle_t h) {
  fake_device *d = (fake_device *)h;
  for (int i = 0; i < fakegpu.ndev; i++)
    if (d == &roots[i] || (d >= subs[i] && d < subs[i] + tile_count(i))) return d;
  return NULL;
}

/* The core's results as Level Zero's. */
static ze_result_t ze_of(int r) {
  switch (r) {
  case FAKEGPU_OK: return ZE_RESULT_SUCCESS;
  case FAKEGPU_OUT_OF_MEMORY: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  case FAKEGPU_NOT_READY: return ZE_RESULT_NOT_READY;
  case FAKEGPU_INVALID_HANDLE: return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  case FAKEGPU_UNKNOWN: return ZE_RESULT_ERROR_UNKNOWN;
  default: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
}

/* Every entry point starts here.  `caller`: for fault injection (NULL: never fails). */
static ze_result_t check(const char *name, bool need_init, const void *caller) {
  fakegpu_begin(name);
  if (need_init && fakegpu.init_result) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (fakegpu_injected(name, caller)) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  return ZE_RESULT_SUCCESS;
}
#define CALLER __builtin_return_address(0)

/* A driver object handed out (counted live, held for the fault-injection
 * interposer) and one taken back and freed; `caller` is the API entry's CALLER. */
static void object_made(void *o, int *live, const void *caller) {
  __atomic_add_fetch(live, 1, __ATOMIC_RELAXED);
  fakegpu_held(o, 1, caller);
}

static ze_result_t object_gone(void *o, int *live, const void *caller) {
  __atomic_sub_fetch(live, 1, __ATOMIC_RELAXED);
  fakegpu_held(o, 0, caller);
  free(o);
  return ZE_RESULT_SUCCESS;
}
#define CHECK(need)                                               \
  do {                                                            \
    ze_result_t r_ = check(__func__ + 5, (need), CALLER);         \
    if (r_) return r_;                                            \
  } while (0)

/* ---- the hooks the tests call ---- */

EXPORT size_t fakeze_live_allocations(void) { return fakegpu_live_allocations(); }
EXPORT unsigned fakeze_calls(const char *name) { return fakegpu_calls(name); }
EXPORT void fakeze_slow_launch(void) { fakegpu_slow_launch(); }
/* Objects made and not destroyed: "context", "list", "pool", "event". */
EXPORT int fakeze_live(const char *what) {
  return !strcmp(what, "context") ? live_contexts
         : !strcmp(what, "list")  ? live_lists
         : !strcmp(what, "pool")  ? live_pools
         : !strcmp(what, "event") ? live_events
                                  : -1;
}

/* ---- driver and devices ---- */

static ze_result_t fake_zeInit(uint32_t flags) {
  CHECK(false);
  (void)flags;
  for (int i = 0; i < FAKEGPU_MAXDEV; i++) {
    roots[i] = (fake_device){i, -1};
    for (int j = 0; j < 4; j++) subs[i][j] = (fake_device){i, i < fakegpu.ndev && tile_number(i, j) >= 0 ? tile_number(i, j) : j};
  }
  return fakegpu.init_result;
}

static ze_result_t fake_zeDriverGet(uint32_t *count, ze_driver_handle_t *drivers) {
  CHECK(true);
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (drivers && *count) drivers[0] = (ze_driver_handle_t)&driver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetApiVersion(ze_driver_handle_t h, ze_api_version_t *v) {
  CHECK(true);
  if ((fake_driver *)h != &driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  *v = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDriverGetProperties(ze_driver_handle_t h, ze_driver_properties_t *p) {
  CHECK(true);
  if ((fake_driver *)h != &driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  memset(p->uuid.id, 0x2e, sizeof p->uuid.id);
  p->driverVersion = driver_version;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGet(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *devices) {
  CHECK(true);
  if ((fake_driver *)h != &driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  uint32_t n = device_count >= 0 ? (uint32_t)device_count : (uint32_t)fakegpu.ndev;
  if (!devices) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  for (uint32_t i = 0; i < *count; i++) devices[i] = (ze_device_handle_t)&roots[i % FAKEGPU_MAXDEV];
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetSubDevices(ze_device_handle_t h, uint32_t *count, ze_device_handle_t *out) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  uint32_t n = d->sub < 0 ? (uint32_t)tile_count(d->index) : 0;
  if (!out) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  for (uint32_t i = 0; i < *count; i++) out[i] = (ze_device_handle_t)&subs[d->index][i];
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDeviceGetProperties(ze_device_handle_t h, ze_device_properties_t *p) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const fakegpu_device *fd = &fakegpu.devs[d->index];
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5;
  p->flags = d->sub < 0 ? 0 : ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE;
  p->subdeviceId = d->sub < 0 ? 0 : (uint32_t)d->sub;
  p->coreClockRate = 1600;
  p->maxMemAllocSize = fd->total;
  p->maxHardwareContexts = 65536;
  p->numThreadsPerEU = 8;
  p->physicalEUSimdWidth = 16;
  p->numEUsPerSubslice = 8;
  p->numSubslicesPerSlice = 16;
  p->numSlices = 2;
  p->timerResolution = 52;
  p->timestampValidBits = p->kernelTimestampValidBits = 64;
  /* The vendor and device ids, then the device's index (the tile's in the last but one byte). */
  uint8_t u[16] = {0x86, 0x80, 0xd5, 0x0b};
  u[15] = (uint8_t)fd->physical; /* the GPU's own, whatever its ordinal */
  bool given = fakegpu_uuid_given(fd->physical, "", u);
  if (!given || d->sub >= 0) u[14] = (uint8_t)(d->sub + 1);
  memcpy(p->uuid.id, u, sizeof u);
  snprintf(p->name, sizeof p->name, "%s", fd->name);
  return ZE_RESULT_SUCCESS;
}

/* FAKEZE_PEER by machine index; a device's tiles share its memory.  "fail": ZE_RESULT_ERROR_UNKNOWN. */
static ze_result_t fake_zeDeviceCanAccessPeer(ze_device_handle_t h, ze_device_handle_t peer, ze_bool_t *value) {
  CHECK(true);
  fake_device *a = device_of(h), *b = device_of(peer);
  if (!a || !b) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!value) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  int can = a->index == b->index && a != b;
  int r = a->index == b->index ? FAKEGPU_OK
                               : fakegpu_peer_machine(fakegpu.devs[a->index].physical, fakegpu.devs[b->index].physical,
                                                      &can);
  if (r == FAKEGPU_OK) *value = (ze_bool_t)(can != 0);
  return ze_of(r);
}

/* One memory per tile, the device's memory shared among them; one without tiles. */
static ze_result_t fake_zeDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t *count,
                                                    ze_device_memory_properties_t *p) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  uint32_t n = d->sub < 0 && tile_count(d->index) ? (uint32_t)tile_count(d->index) : 1;
  if (!p) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  size_t total = fakegpu.devs[d->index].total;
  for (uint32_t i = 0; i < *count; i++) {
    p[i].flags = 0;
    p[i].maxClockRate = 3200;
    p[i].maxBusWidth = 4096;
    p[i].totalSize = nsub ? total / (size_t)nsub : total;
    snprintf(p[i].name, sizeof p[i].name, "HBM");
  }
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeDevicePciGetPropertiesExt(ze_device_handle_t h, ze_pci_ext_properties_t *p) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const fakegpu_device *fd = &fakegpu.devs[d->index];
  p->address = (ze_pci_address_ext_t){fd->domain, fd->bus, fd->slot, 0};
  p->maxSpeed = (ze_pci_speed_ext_t){4, 16, 31500000000};
  return ZE_RESULT_SUCCESS;
}

/* ---- contexts ---- */

static ze_result_t fake_zeContextCreate(ze_driver_handle_t h, const ze_context_desc_t *desc, ze_context_handle_t *out) {
  CHECK(true);
  if ((fake_driver *)h != &driver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fake_context *c = calloc(1, sizeof *c);
  if (!c) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  c->magic = 0xc0;
  object_made(c, &live_contexts, CALLER);
  *out = (ze_context_handle_t)c;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeContextDestroy(ze_context_handle_t h) {
  fakegpu_begin("zeContextDestroy");
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return object_gone(h, &live_contexts, CALLER);
}

/* ---- memory ---- */

static ze_result_t new_alloc(ze_context_handle_t c, int device, size_t n, int kind, bool managed, void **out,
                             const void *caller) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (n == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  int r = fakegpu_new_alloc(device, n, kind, managed, out);
  if (r) return ze_of(r);
  pthread_mutex_lock(&fakegpu.lock);
  fakegpu_find(*out, n)->owner = c;
  pthread_mutex_unlock(&fakegpu.lock);
  fakegpu_held(*out, 1, caller);
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeMemAllocDevice(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *desc, size_t n,
                                         size_t alignment, ze_device_handle_t h, void **out) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  return new_alloc(c, d->index, n, FAKEGPU_DEVICE, false, out, CALLER);
}

static ze_result_t fake_zeMemAllocShared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *ddesc,
                                         const ze_host_mem_alloc_desc_t *hdesc, size_t n, size_t alignment,
                                         ze_device_handle_t h, void **out) {
  CHECK(true);
  fake_device *d = h ? device_of(h) : &roots[0];
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ddesc || !hdesc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  (void)alignment;
  return new_alloc(c, d->index, n, FAKEGPU_DEVICE, true, out, CALLER);
}

static ze_result_t fake_zeMemAllocHost(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *desc, size_t n,
                                       size_t alignment, void **out) {
  CHECK(true);
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  (void)alignment;
  return new_alloc(c, 0, n, FAKEGPU_HOST, false, out, CALLER);
}

static ze_result_t fake_zeMemFree(ze_context_handle_t c, void *p) {
  fakegpu_begin("zeMemFree");
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&fakegpu.lock);
  fakegpu_alloc *a = fakegpu_find(p, 0);
  int kind = a && a->base == p ? a->kind : -1;
  pthread_mutex_unlock(&fakegpu.lock);
  if (kind < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  int r = fakegpu_free_alloc(p, kind);
  if (!r) fakegpu_held(p, 0, CALLER);
  return ze_of(r);
}

static ze_result_t fake_zeMemGetAllocProperties(ze_context_handle_t c, const void *p,
                                                ze_memory_allocation_properties_t *props, ze_device_handle_t *dev) {
  CHECK(true);
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pthread_mutex_lock(&fakegpu.lock);
  fakegpu_alloc *a = fakegpu_find(p, 0);
  if (a && strict && a->owner != c) a = NULL;
  props->type = !a                          ? ZE_MEMORY_TYPE_UNKNOWN
                : a->kind == FAKEGPU_HOST   ? ZE_MEMORY_TYPE_HOST
                : a->managed                ? ZE_MEMORY_TYPE_SHARED
                                            : ZE_MEMORY_TYPE_DEVICE;
  props->id = a ? (uint64_t)(uintptr_t)a->base : 0;
  props->pageSize = a ? 4096 : 0;
  if (dev) *dev = a && a->kind != FAKEGPU_HOST ? (ze_device_handle_t)&roots[a->device] : NULL;
  pthread_mutex_unlock(&fakegpu.lock);
  return ZE_RESULT_SUCCESS;
}

/* ---- command lists and events ---- */

static ze_result_t fake_zeCommandListCreateImmediate(ze_context_handle_t c, ze_device_handle_t h,
                                                     const ze_command_queue_desc_t *desc, ze_command_list_handle_t *out) {
  CHECK(true);
  fake_device *d = device_of(h);
  if (!c || !d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fake_list *l = calloc(1, sizeof *l);
  if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->context = (fake_context *)c;
  l->device = d->index;
  object_made(l, &live_lists, CALLER);
  *out = (ze_command_list_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListDestroy(ze_command_list_handle_t l) {
  fakegpu_begin("zeCommandListDestroy");
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return object_gone(l, &live_lists, CALLER);
}

static ze_result_t fake_zeEventPoolCreate(ze_context_handle_t c, const ze_event_pool_desc_t *desc, uint32_t ndev,
                                          ze_device_handle_t *devs, ze_event_pool_handle_t *out) {
  CHECK(true);
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < ndev; i++)
    if (!devs || !device_of(devs[i])) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  fake_pool *p = calloc(1, sizeof *p);
  if (!p) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  p->context = (fake_context *)c;
  p->count = desc->count;
  object_made(p, &live_pools, CALLER);
  *out = (ze_event_pool_handle_t)p;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeEventPoolDestroy(ze_event_pool_handle_t p) {
  fakegpu_begin("zeEventPoolDestroy");
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return object_gone(p, &live_pools, CALLER);
}

/* An event starts unsignalled: pending on nothing, until signalled or waited for. */
static void unsignal(void *core) {
  fakegpu_event *e = core;
  pthread_mutex_lock(&fakegpu.lock);
  e->pending = true;
  e->stream = NULL;
  e->seq = (unsigned long)-1;
  pthread_mutex_unlock(&fakegpu.lock);
}

static ze_result_t fake_zeEventCreate(ze_event_pool_handle_t ph, const ze_event_desc_t *desc, ze_event_handle_t *out) {
  CHECK(true);
  fake_pool *p = (fake_pool *)ph;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= p->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  fake_event *e = calloc(1, sizeof *e);
  if (!e) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  int r = fakegpu_event_create(0, &e->core, NULL);
  if (r) {
    free(e);
    return ze_of(r);
  }
  unsignal(e->core);
  e->pool = p;
  object_made(e, &live_events, CALLER);
  *out = (ze_event_handle_t)e;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeEventDestroy(ze_event_handle_t h) {
  fakegpu_begin("zeEventDestroy");
  fake_event *e = (fake_event *)h;
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  fakegpu_event_destroy(e->core, NULL);
  return object_gone(e, &live_events, CALLER);
}

static ze_result_t fake_zeEventHostSynchronize(ze_event_handle_t h, uint64_t timeout) {
  CHECK(true);
  fake_event *e = (fake_event *)h;
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (timeout == 0) return ze_of(fakegpu_event_query(e->core));
  return ze_of(fakegpu_event_synchronize(e->core));
}

static ze_result_t fake_zeEventQueryStatus(ze_event_handle_t h) {
  CHECK(true);
  fake_event *e = (fake_event *)h;
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ze_of(fakegpu_event_query(e->core));
}

static ze_result_t fake_zeEventHostReset(ze_event_handle_t h) {
  CHECK(true);
  fake_event *e = (fake_event *)h;
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  unsignal(e->core);
  return ZE_RESULT_SUCCESS;
}

/* Where the core reaches [p, p+n): device memory through its shadow, host memory as it is; NULL outside an allocation. */
static void *reach(const void *p, size_t n) {
  fakegpu_alloc *a = fakegpu_find(p, 0);
  if (!a) return (void *)p; /* the host's own memory */
  if (!fakegpu_find(p, n)) return NULL;
  return a->shadow + ((const char *)p - a->base);
}

/* Whether a list of device `d` may address the memory at p: host and shared memory, its own device memory,
 * or another device's that FAKEZE_PEER lets it reach (zeDeviceCanAccessPeer's answer).  Lock held. */
static bool device_reaches(int d, const void *p) {
  fakegpu_alloc *a = fakegpu_find(p, 0);
  if (!a || a->kind != FAKEGPU_DEVICE || a->managed || a->device == d) return true;
  int can = 0;
  return fakegpu_peer_machine(fakegpu.devs[d].physical, fakegpu.devs[a->device].physical, &can) == FAKEGPU_OK && can;
}

static ze_result_t wait_events(uint32_t n, ze_event_handle_t *events) {
  if (n && !events) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < n; i++) {
    if (!events[i]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    fakegpu_stream_wait_event(NULL, ((fake_event *)events[i])->core);
  }
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListAppendMemoryCopy(ze_command_list_handle_t l, void *dst, const void *src, size_t n,
                                                      ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait) {
  CHECK(true);
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_result_t r = wait_events(nwait, wait);
  if (r) return r;
  pthread_mutex_lock(&fakegpu.lock);
  /* The specification asks that the list's device reach both: a copy that it cannot is refused (a real
   * driver may fault on the GPU instead). */
  int ld = ((fake_list *)l)->device;
  if (!device_reaches(ld, dst) || !device_reaches(ld, src)) {
    pthread_mutex_unlock(&fakegpu.lock);
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  void *to = reach(dst, n), *from = reach(src, n);
  int cr = to && from ? fakegpu_submit(NULL, to, from, n, false) : FAKEGPU_INVALID_VALUE;
  pthread_mutex_unlock(&fakegpu.lock);
  if (cr) return ze_of(cr);
  return signal ? ze_of(fakegpu_event_record(((fake_event *)signal)->core, NULL)) : ZE_RESULT_SUCCESS;
}

static ze_result_t fake_zeCommandListAppendSignalEvent(ze_command_list_handle_t l, ze_event_handle_t e) {
  CHECK(true);
  if (!l || !e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ze_of(fakegpu_event_record(((fake_event *)e)->core, NULL));
}

static ze_result_t fake_zeCommandListAppendWaitOnEvents(ze_command_list_handle_t l, uint32_t n, ze_event_handle_t *e) {
  CHECK(true);
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return wait_events(n, e);
}

/* ---- the tables ---- */

/* Places of the entry points in the specification's tables (ze_*_dditable_t). */
enum { GLOBAL_INIT = 0 };
enum { DRIVER_GET = 0, DRIVER_GET_API_VERSION = 1, DRIVER_GET_PROPERTIES = 2 };
enum { DEVICE_GET = 0, DEVICE_GET_SUB_DEVICES = 1, DEVICE_GET_PROPERTIES = 2, DEVICE_GET_MEMORY_PROPERTIES = 6,
       DEVICE_CAN_ACCESS_PEER = 12, DEVICE_PCI_GET_PROPERTIES_EXT = 17 };
enum { CONTEXT_CREATE = 0, CONTEXT_DESTROY = 1 };
enum { LIST_CREATE_IMMEDIATE = 1, LIST_DESTROY = 2, LIST_APPEND_MEMORY_COPY = 8, LIST_APPEND_SIGNAL_EVENT = 18,
       LIST_APPEND_WAIT_ON_EVENTS = 19 };
enum { POOL_CREATE = 0, POOL_DESTROY = 1 };
enum { EVENT_CREATE = 0, EVENT_DESTROY = 1, EVENT_HOST_SYNCHRONIZE = 3, EVENT_QUERY_STATUS = 4, EVENT_HOST_RESET = 5 };
enum { MEM_ALLOC_SHARED = 0, MEM_ALLOC_DEVICE = 1, MEM_ALLOC_HOST = 2, MEM_FREE = 3, MEM_GET_ALLOC_PROPERTIES = 4 };

typedef void (*fn_t)(void);
#define SET(table, place, fn) ((fn_t *)(table))[place] = (fn_t)(fn)

/* The loader asks with its API version; one of major version 1 is served. */
static ze_result_t table_check(ze_api_version_t version, void *table) {
  if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != 1) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  return ZE_RESULT_SUCCESS;
}

#define GETTER(name) EXPORT ze_result_t name(ze_api_version_t version, void *table)
#define FILLED(name, ...)                           \
  GETTER(name) {                                    \
    ze_result_t r = table_check(version, table);    \
    if (r == ZE_RESULT_SUCCESS) { __VA_ARGS__; }    \
    return r;                                       \
  }
/* A table of nothing the fake does: left as the loader gave it (zeroed). */
#define EMPTY(name) \
  GETTER(name) { return table_check(version, table); }

FILLED(zeGetGlobalProcAddrTable, SET(table, GLOBAL_INIT, fake_zeInit))
FILLED(zeGetDriverProcAddrTable, SET(table, DRIVER_GET, fake_zeDriverGet);
       SET(table, DRIVER_GET_API_VERSION, fake_zeDriverGetApiVersion);
       SET(table, DRIVER_GET_PROPERTIES, fake_zeDriverGetProperties))
FILLED(zeGetDeviceProcAddrTable, SET(table, DEVICE_GET, fake_zeDeviceGet);
       SET(table, DEVICE_GET_SUB_DEVICES, fake_zeDeviceGetSubDevices);
       SET(table, DEVICE_GET_PROPERTIES, fake_zeDeviceGetProperties);
       SET(table, DEVICE_GET_MEMORY_PROPERTIES, fake_zeDeviceGetMemoryProperties);
       SET(table, DEVICE_CAN_ACCESS_PEER, fake_zeDeviceCanAccessPeer);
       SET(table, DEVICE_PCI_GET_PROPERTIES_EXT, fake_zeDevicePciGetPropertiesExt))
FILLED(zeGetContextProcAddrTable, SET(table, CONTEXT_CREATE, fake_zeContextCreate);
       SET(table, CONTEXT_DESTROY, fake_zeContextDestroy))
FILLED(zeGetCommandListProcAddrTable, SET(table, LIST_CREATE_IMMEDIATE, fake_zeCommandListCreateImmediate);
       SET(table, LIST_DESTROY, fake_zeCommandListDestroy);
       SET(table, LIST_APPEND_MEMORY_COPY, fake_zeCommandListAppendMemoryCopy);
       SET(table, LIST_APPEND_SIGNAL_EVENT, fake_zeCommandListAppendSignalEvent);
       SET(table, LIST_APPEND_WAIT_ON_EVENTS, fake_zeCommandListAppendWaitOnEvents))
FILLED(zeGetEventPoolProcAddrTable, SET(table, POOL_CREATE, fake_zeEventPoolCreate);
       SET(table, POOL_DESTROY, fake_zeEventPoolDestroy))
FILLED(zeGetEventProcAddrTable, SET(table, EVENT_CREATE, fake_zeEventCreate);
       SET(table, EVENT_DESTROY, fake_zeEventDestroy);
       SET(table, EVENT_HOST_SYNCHRONIZE, fake_zeEventHostSynchronize);
       SET(table, EVENT_QUERY_STATUS, fake_zeEventQueryStatus);
       SET(table, EVENT_HOST_RESET, fake_zeEventHostReset))
FILLED(zeGetMemProcAddrTable, SET(table, MEM_ALLOC_SHARED, fake_zeMemAllocShared);
       SET(table, MEM_ALLOC_DEVICE, fake_zeMemAllocDevice);
       SET(table, MEM_ALLOC_HOST, fake_zeMemAllocHost);
       SET(table, MEM_FREE, fake_zeMemFree);
       SET(table, MEM_GET_ALLOC_PROPERTIES, fake_zeMemGetAllocProperties))
EMPTY(zeGetCommandQueueProcAddrTable)
EMPTY(zeGetFenceProcAddrTable)
EMPTY(zeGetImageProcAddrTable)
EMPTY(zeGetKernelProcAddrTable)
EMPTY(zeGetModuleBuildLogProcAddrTable)
EMPTY(zeGetModuleProcAddrTable)
EMPTY(zeGetPhysicalMemProcAddrTable)
EMPTY(zeGetSamplerProcAddrTable)
EMPTY(zeGetVirtualMemProcAddrTable)
/* Tools (zet) and sysman (zes): none of it, but the loader wants every getter. */
EMPTY(zetGetCommandListProcAddrTable)
EMPTY(zetGetContextProcAddrTable)
EMPTY(zetGetDebugProcAddrTable)
EMPTY(zetGetDeviceProcAddrTable)
EMPTY(zetGetKernelProcAddrTable)
EMPTY(zetGetMetricGroupProcAddrTable)
EMPTY(zetGetMetricProcAddrTable)
EMPTY(zetGetMetricQueryPoolProcAddrTable)
EMPTY(zetGetMetricQueryProcAddrTable)
EMPTY(zetGetMetricStreamerProcAddrTable)
EMPTY(zetGetModuleProcAddrTable)
EMPTY(zetGetTracerExpProcAddrTable)
EMPTY(zesGetDeviceProcAddrTable)
EMPTY(zesGetDiagnosticsProcAddrTable)
EMPTY(zesGetDriverProcAddrTable)
EMPTY(zesGetEngineProcAddrTable)
EMPTY(zesGetFabricPortProcAddrTable)
EMPTY(zesGetFanProcAddrTable)
EMPTY(zesGetFirmwareProcAddrTable)
EMPTY(zesGetFrequencyProcAddrTable)
EMPTY(zesGetLedProcAddrTable)
EMPTY(zesGetMemoryProcAddrTable)
EMPTY(zesGetPerformanceFactorProcAddrTable)
EMPTY(zesGetPowerProcAddrTable)
EMPTY(zesGetPsuProcAddrTable)
EMPTY(zesGetRasProcAddrTable)
EMPTY(zesGetSchedulerProcAddrTable)
EMPTY(zesGetStandbyProcAddrTable)
EMPTY(zesGetTemperatureProcAddrTable)
