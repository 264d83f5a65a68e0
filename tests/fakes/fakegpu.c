/* SPDX-License-Identifier: BSD-3-Clause */
/* The fake GPU core under tests/fakes/cuda, tests/fakes/hip and tests/fakes/ze (fakegpu.h).
 *
 * Scripted by the environment, read at the first call, with the face's prefix
 * (FAKECUDA_, FAKEHIP_, FAKEZE_):
 *   DEVICES      the machine's device count (default 1)
 *   INIT         the initialisation's result (default 0; the face's with no visible device)
 *   NAMES        comma-separated names (default the face's "<name> <n>")
 *   PCI_BUS_IDS  comma-separated "dddd:bb:dd.f" (default 0000:<face's first bus + n>:00.0)
 *   MEMORY       bytes per device (default the face's); allocations beyond fail
 *   MEMPOOLS     "0": no stream-ordered allocator
 *   PEER         which devices may address each other's memory (cuDeviceCanAccessPeer,
 *                hipDeviceCanAccessPeer, zeDeviceCanAccessPeer): unset, every pair; "none", no
 *                pair; "fail", the query fails (CUDA_ERROR_UNKNOWN, hipErrorUnknown,
 *                ZE_RESULT_ERROR_UNKNOWN); else groups of machine indices, the groups
 *                separated by ",", their members by "-" ("0-1-2-3,4-5-6-7"): two devices may
 *                when one group holds both (an entry that is no index below DEVICES names
 *                nothing; "" : no pair).  A device and itself: no, as CUDA and HIP answer.
 *   UUIDS        comma-separated UUIDs, one per machine device, spelled as the face spells
 *                its own (CUDA: "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"; HIP: "GPU-" and the
 *                16 characters of AMD's unique id; Level Zero: "8680d50b-...", 32 hex digits);
 *                an item missing or spelled otherwise leaves that device the face's own
 * NAMES, PCI_BUS_IDS, PEER and UUIDS are the machine's devices', in its order.  Each face
 * then honours its API's visibility variable as the real runtime does
 * (CUDA_VISIBLE_DEVICES; ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES or
 * CUDA_VISIBLE_DEVICES; ZE_AFFINITY_MASK): the devices it leaves are
 * renumbered from 0 and keep the name, PCI bus id and UUID of their machine
 * index (fakegpu_device::physical), as a real GPU keeps its own, and answer
 * peer queries by it; a UUID given names it in the visibility variable too.
 * and the face's slow-stream variable: "1", work on stream 0 is slow: an event
 * recorded there after fakegpu_slow_launch() stays pending until stream 0 is
 * synchronised (a synchronous copy, a stream or event synchronisation).
 *
 * Each device has a default memory pool: freed blocks are cached and reused
 * for the same size; synchronising stream 0 releases what exceeds the release
 * threshold (0 by default, as the real ones'), trimming releases down to its
 * argument.  Streams a test creates run their work lazily, when something
 * waits for them (synchronisation, an event wait, stream-0 work for a
 * blocking stream), so that tests see whether hdal orders its work after a
 * caller's stream.
 *
 * Under tests/faultinject's interposer (preloaded), every call hdal makes that
 * can fail is counted and the walk's Nth fails with out of memory; the calls
 * that give something back never fail.  Allocations, streams, events (and the
 * face's contexts) made for hdal are reported to it, so that one hdal keeps
 * is a leak.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fakegpu.h"
#include "fake_list.h"
#include "faultinject/fi.h"

#define FACE fakegpu_face_of_api

fakegpu_state fakegpu = {.lock = PTHREAD_MUTEX_INITIALIZER};
#define LOCK() pthread_mutex_lock(&fakegpu.lock)
#define UNLOCK() pthread_mutex_unlock(&fakegpu.lock)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool slow;
static unsigned long slow_launched, slow_finished; /* slow stream-0 work (fakegpu_slow_launch) */
static fakegpu_alloc *allocs;
static size_t reset_live; /* allocations a context reset took from their owner */
static fakegpu_stream *streams;
static unsigned counts[64];

/* The fault-injection interposer's hooks, NULL when it is not preloaded. */
static hdalfi_driver_call_fn *fi_call;
static hdalfi_driver_object_fn *fi_object;

/* ---- configuration, counters, fault injection ---- */

static const char *variable(const char *name) {
  char var[64];
  snprintf(var, sizeof var, "%s%s", FACE.prefix, name);
  return getenv(var);
}

const char *fakegpu_setting(const char *name, int i, char *buf, size_t len) {
  return fake_list_item(variable(name), i, buf, len);
}

int fakegpu_all_visible(int n, int *order) {
  for (int i = 0; i < n; i++) order[i] = i;
  return n;
}

/* One entry of a visibility list, [b, e) without blanks, as a device among from[]: -1 when it names none or two. */
static int visible_entry(const char *b, const char *e, const int *from, int nfrom,
                         void (*uuid_of)(int device, char *buf, size_t len)) {
  if (b == e) return -1;
  if (*b >= '0' && *b <= '9') {
    long v = 0;
    for (const char *p = b; p < e; p++) {
      if (*p < '0' || *p > '9' || (v = v * 10 + (*p - '0')) >= nfrom) return -1;
    }
    return from[v];
  }
  if (!uuid_of) return -1;
  int found = -1;
  for (int i = 0; i < nfrom; i++) {
    char uuid[64];
    uuid_of(from[i], uuid, sizeof uuid);
    if ((size_t)(e - b) > strlen(uuid) || strncasecmp(uuid, b, (size_t)(e - b))) continue;
    if (found >= 0) return -1; /* a prefix of two */
    found = from[i];
  }
  return found;
}

int fakegpu_visible_list(const char *value, const int *from, int nfrom,
                         void (*uuid_of)(int device, char *buf, size_t len), int *order) {
  int n = 0;
  for (const char *p = value;; p++) {
    const char *b = p, *e = p + strcspn(p, ",");
    p = e;
    while (b < e && (*b == ' ' || *b == '\t')) b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t')) e--;
    int d = visible_entry(b, e, from, nfrom, uuid_of);
    for (int i = 0; i < n && d >= 0; i++)
      if (order[i] == d) d = -1; /* named twice */
    if (d < 0) break;
    order[n++] = d;
    if (!*p) break;
  }
  return n;
}

bool fakegpu_uuid_given(int m, const char *prefix, unsigned char out[16]) {
  char buf[128];
  if (!fakegpu_setting("UUIDS", m, buf, sizeof buf) || strncasecmp(buf, prefix, strlen(prefix))) return false;
  unsigned char b[16];
  int n = 0;
  for (const char *p = buf + strlen(prefix); *p; p++) {
    if (*p == '-') continue;
    if (!isxdigit((unsigned char)*p) || n == 32) return false;
    int v = isdigit((unsigned char)*p) ? *p - '0' : (*p | 0x20) - 'a' + 10;
    b[n / 2] = (unsigned char)(n % 2 ? b[n / 2] << 4 | v : v);
    n++;
  }
  if (n != 32) return false;
  memcpy(out, b, 16);
  return true;
}

/* PEER, read at configuration: peer_can[a][b] by machine index, or every query failing. */
static bool peer_can[FAKEGPU_MAXDEV][FAKEGPU_MAXDEV], peer_fail;

static void configure_peers(int n) {
  const char *e = variable("PEER");
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) peer_can[a][b] = !e && a != b;
  peer_fail = e && !strcmp(e, "fail");
  if (!e || peer_fail || !strcmp(e, "none")) return;
  for (const char *g = e;; g++) { /* each group: its members' bits */
    size_t len = strcspn(g, ",");
    unsigned members = 0;
    for (const char *p = g; p < g + len;) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end > p && v >= 0 && v < n && (*end == '-' || end == g + len)) members |= 1u << v;
      p = end > p ? end : p + 1;
      if (p < g + len && *p == '-') p++;
    }
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        if (a != b && (members >> a & 1u) && (members >> b & 1u)) peer_can[a][b] = true;
    g += len;
    if (!*g) break;
  }
}

int fakegpu_peer_machine(int ma, int mb, int *can) {
  if (peer_fail) return FAKEGPU_UNKNOWN;
  *can = ma >= 0 && mb >= 0 && ma < FAKEGPU_MAXDEV && mb < FAKEGPU_MAXDEV && peer_can[ma][mb];
  return FAKEGPU_OK;
}

int fakegpu_can_access_peer(int d, int peer, int *can) {
  if (!can) return FAKEGPU_INVALID_VALUE;
  if (!fakegpu_valid_device(d) || !fakegpu_valid_device(peer)) return FAKEGPU_INVALID_DEVICE;
  return fakegpu_peer_machine(fakegpu.devs[d].physical, fakegpu.devs[peer].physical, can);
}

static bool peer_enabled[FAKEGPU_MAXDEV][FAKEGPU_MAXDEV];
int fakegpu_enable_peer(int d, int peer) {
  int can = 0, r = fakegpu_can_access_peer(d, peer, &can);
  if (r) return r;
  if (!can) return FAKEGPU_PEER_UNSUPPORTED;
  pthread_mutex_lock(&fakegpu.lock);
  bool was = peer_enabled[d][peer];
  peer_enabled[d][peer] = true;
  pthread_mutex_unlock(&fakegpu.lock);
  return was ? FAKEGPU_PEER_ALREADY_ENABLED : FAKEGPU_OK;
}

static void configure(void) {
  fi_call = (hdalfi_driver_call_fn *)dlsym(RTLD_DEFAULT, "hdalfi_driver_call");
  fi_object = (hdalfi_driver_object_fn *)dlsym(RTLD_DEFAULT, "hdalfi_driver_object");
  const char *e = variable("DEVICES");
  int n = e ? atoi(e) : 1;
  n = n < 0 ? 0 : n > FAKEGPU_MAXDEV ? FAKEGPU_MAXDEV : n;
  /* The machine's devices, then those the face's visibility variable leaves, renumbered. */
  fakegpu_device all[FAKEGPU_MAXDEV];
  memset(all, 0, sizeof all);
  const char *mem = variable("MEMORY");
  for (int i = 0; i < n; i++) {
    fakegpu_device *d = &all[i];
    char buf[64];
    if (!fakegpu_setting("NAMES", i, d->name, sizeof d->name)) snprintf(d->name, sizeof d->name, "%s%d", FACE.name_format, i);
    d->bus = FACE.first_bus + (unsigned)i;
    if (fakegpu_setting("PCI_BUS_IDS", i, buf, sizeof buf)) sscanf(buf, "%x:%x:%x", &d->domain, &d->bus, &d->slot);
    d->total = mem ? strtoull(mem, NULL, 0) : FACE.memory;
    d->physical = i;
  }
  configure_peers(n);
  int order[FAKEGPU_MAXDEV];
  fakegpu.ndev = FACE.visible(n, order);
  for (int i = 0; i < fakegpu.ndev; i++) fakegpu.devs[i] = all[order[i]];
  e = variable("INIT");
  fakegpu.init_result = e ? atoi(e) : fakegpu.ndev == 0 ? FACE.no_device_init : FAKEGPU_OK;
  fakegpu.no_mempools = (e = variable("MEMPOOLS")) && !strcmp(e, "0");
  slow = (e = getenv(FACE.slow_variable)) && !strcmp(e, "1");
  FACE.configure();
}

void fakegpu_begin(const char *name) {
  pthread_once(&once, configure);
  for (size_t i = 0; i < FACE.ncounted; i++)
    if (!strcmp(FACE.counted[i], name)) __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED);
}

unsigned fakegpu_calls(const char *name) {
  for (size_t i = 0; i < FACE.ncounted; i++)
    if (!strcmp(FACE.counted[i], name)) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
  return 0;
}

bool fakegpu_injected(const char *name, const void *caller) { return caller && fi_call && fi_call(name, caller); }

void fakegpu_held(const void *object, int held, const void *caller) {
  if (fi_object) fi_object(object, held, caller);
}

bool fakegpu_valid_device(int d) { return d >= 0 && d < fakegpu.ndev; }

/* ---- memory ---- */

fakegpu_alloc *fakegpu_find(const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;
  for (fakegpu_alloc *x = allocs; x; x = x->next) {
    uintptr_t base = (uintptr_t)x->base;
    if (a >= base && a - base < x->size && n <= x->size - (a - base)) return x;
  }
  return NULL;
}

void *fakegpu_device_view(const void *p, size_t n, int device) {
  fakegpu_alloc *a = fakegpu_find(p, n);
  if (!a || a->kind != FAKEGPU_DEVICE || (device >= 0 && a->device != device)) return NULL;
  return a->shadow + ((const char *)p - a->base);
}

/* Two views of one shared object: PROT_NONE for everyone, writable for the core. */
static bool map_guarded(fakegpu_alloc *a, size_t n) {
  long page = sysconf(_SC_PAGESIZE);
  a->mapped = (n + (size_t)page - 1) / (size_t)page * (size_t)page;
  int fd = memfd_create("fakegpu", MFD_CLOEXEC);
  void *base = MAP_FAILED, *shadow = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, (off_t)a->mapped) == 0) {
    base = mmap(NULL, a->mapped, PROT_NONE, MAP_SHARED, fd, 0);
    shadow = mmap(NULL, a->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (fd >= 0) close(fd);
  if (base == MAP_FAILED || shadow == MAP_FAILED) {
    if (base != MAP_FAILED) munmap(base, a->mapped);
    if (shadow != MAP_FAILED) munmap(shadow, a->mapped);
    return false;
  }
  a->base = base;
  a->shadow = shadow;
  return true;
}

int fakegpu_new_alloc(int d, size_t n, int kind, bool managed, void **out) {
  if (n == 0) return FAKEGPU_INVALID_VALUE;
  LOCK();
  int r = FAKEGPU_OK;
  fakegpu_alloc *a = NULL;
  fakegpu_device *dev = &fakegpu.devs[d];
  if (kind == FAKEGPU_DEVICE && n > dev->total - dev->used) r = FAKEGPU_OUT_OF_MEMORY;
  else if (!(a = calloc(1, sizeof *a))) r = FAKEGPU_OUT_OF_MEMORY;
  else if (kind == FAKEGPU_DEVICE && FACE.guarded && !managed) r = map_guarded(a, n) ? FAKEGPU_OK : FAKEGPU_OUT_OF_MEMORY;
  else if (!(a->base = a->shadow = aligned_alloc(256, (n + 255) / 256 * 256))) r = FAKEGPU_OUT_OF_MEMORY;
  if (r) {
    free(a);
  } else {
    a->size = n;
    a->device = d;
    a->kind = kind;
    a->managed = managed;
    a->next = allocs;
    allocs = a;
    if (kind == FAKEGPU_DEVICE) dev->used += n;
    *out = a->base;
  }
  UNLOCK();
  return r;
}

/* Unlinks *pp and gives its memory back; lock held. */
static void drop(fakegpu_alloc **pp) {
  fakegpu_alloc *a = *pp;
  *pp = a->next;
  if (a->pooled) fakegpu.pools[a->device].reserved -= a->size; /* the synchronous free may free pool memory too */
  if (a->kind == FAKEGPU_DEVICE) fakegpu.devs[a->device].used -= a->size;
  if (a->mapped) {
    munmap(a->base, a->mapped);
    munmap(a->shadow, a->mapped);
  } else {
    free(a->base);
  }
  free(a);
}

int fakegpu_free_alloc(void *p, int kind) {
  LOCK();
  int r = FAKEGPU_INVALID_VALUE;
  for (fakegpu_alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
    if ((*pp)->base != p || (*pp)->kind != kind) continue;
    drop(pp);
    r = FAKEGPU_OK;
    break;
  }
  UNLOCK();
  return r;
}

/* As a real driver destroys a context: everything allocated in it goes, the
 * cached pool blocks too.  What its owner never freed stays counted as live,
 * and is not reported to the interposer as given back, so a leak still shows. */
void fakegpu_context_reset(int d) {
  fakegpu_pool *p = &fakegpu.pools[d];
  LOCK();
  for (fakegpu_alloc **pp = &allocs; *pp;) {
    if ((*pp)->device != d) {
      pp = &(*pp)->next;
      continue;
    }
    bool cached = false; /* freed by its owner into the pool */
    for (size_t i = 0; i < p->ncached && !cached; i++) cached = p->cached[i].base == (*pp)->base;
    if (!cached) reset_live++;
    drop(pp);
  }
  p->ncached = 0;
  UNLOCK();
}

size_t fakegpu_live_allocations(void) {
  LOCK();
  size_t n = reset_live;
  for (fakegpu_alloc *a = allocs; a; a = a->next) n++;
  UNLOCK();
  return n;
}

/* ---- streams and events ---- */

struct fakegpu_op {
  fakegpu_op *next;
  void *dst;
  const void *src;
  size_t n;
  void *staging;        /* host to device from pageable memory: copied at submission */
  fakegpu_event *event; /* an event marker instead of a copy */
};

static void run(fakegpu_op *o) {
  if (o->event) o->event->pending = false;
  else memcpy(o->dst, o->staging ? o->staging : o->src, o->n);
  free(o->staging);
  free(o);
}

/* Runs a stream's queued work, up to and including `until` when given.  Lock held. */
static void flush(fakegpu_stream *s, fakegpu_event *until) {
  while (s->head) {
    fakegpu_op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    bool last = until && o->event == until;
    run(o);
    if (last) return;
  }
}

/* Stream-0 work waits for every blocking stream, and for its own slow work.  Lock held. */
static void flush_blocking(void) {
  slow_finished = slow_launched;
  for (fakegpu_stream *s = streams; s; s = s->next)
    if (!(s->flags & 1u)) flush(s, NULL);
}

static bool known_stream(const void *s) {
  for (fakegpu_stream *t = streams; t; t = t->next)
    if (t == s) return true;
  return false;
}

static void enqueue(fakegpu_stream *s, fakegpu_op *o) {
  if (s->tail) s->tail->next = o;
  else s->head = o;
  s->tail = o;
}

bool fakegpu_default_stream(const void *s) { return s == NULL || (FACE.legacy_handle && s == (void *)1); }

int fakegpu_submit(void *s, void *dst, const void *src, size_t n, bool stage) {
  if (fakegpu_default_stream(s)) flush_blocking();
  if (fakegpu_default_stream(s) || s == FAKEGPU_PER_THREAD) {
    memmove(dst, src, n);
    return FAKEGPU_OK;
  }
  if (!known_stream(s)) return FAKEGPU_INVALID_HANDLE;
  fakegpu_op *o = calloc(1, sizeof *o);
  if (!o || (stage && !(o->staging = malloc(n)))) {
    free(o);
    return FAKEGPU_OUT_OF_MEMORY;
  }
  if (stage) memcpy(o->staging, src, n);
  o->dst = dst;
  o->src = src;
  o->n = n;
  enqueue(s, o);
  return FAKEGPU_OK;
}

int fakegpu_stream_create(int device, unsigned flags, void **out, const void *caller) {
  fakegpu_stream *s = calloc(1, sizeof *s);
  if (!s) return FAKEGPU_OUT_OF_MEMORY;
  s->device = device;
  s->flags = flags;
  LOCK();
  s->next = streams;
  streams = s;
  UNLOCK();
  *out = s;
  fakegpu_held(s, 1, caller);
  return FAKEGPU_OK;
}

int fakegpu_stream_destroy(void *s, const void *caller) {
  int r = FAKEGPU_INVALID_HANDLE;
  LOCK();
  for (fakegpu_stream **pp = &streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      flush(s, NULL); /* its work still completes */
      *pp = (*pp)->next;
      fakegpu_held(s, 0, caller);
      free(s);
      r = FAKEGPU_OK;
      break;
    }
  UNLOCK();
  return r;
}

int fakegpu_stream_synchronize(void *s, int device) {
  int r = FAKEGPU_OK;
  bool trim = false;
  LOCK();
  if (fakegpu_default_stream(s)) {
    if (device < 0) r = FAKEGPU_INVALID_CONTEXT;
    else flush_blocking();
    trim = device >= 0;
  } else if (s != FAKEGPU_PER_THREAD) {
    if (known_stream(s)) flush(s, NULL);
    else r = FAKEGPU_INVALID_HANDLE;
  }
  uint64_t keep = trim ? fakegpu.pools[device].threshold : 0;
  UNLOCK();
  if (trim) fakegpu_pool_release(device, keep); /* what exceeds the release threshold goes back */
  return r;
}

int fakegpu_event_create(int device, void **out, const void *caller) {
  fakegpu_event *ev = calloc(1, sizeof *ev);
  if (!ev) return FAKEGPU_OUT_OF_MEMORY;
  ev->device = device;
  *out = ev;
  fakegpu_held(ev, 1, caller);
  return FAKEGPU_OK;
}

int fakegpu_event_record(void *event, void *s) {
  fakegpu_event *e = event;
  fakegpu_stream *st = s;
  int r = FAKEGPU_OK;
  LOCK();
  if (fakegpu_default_stream(s) || s == FAKEGPU_PER_THREAD) {
    bool zero = s != FAKEGPU_PER_THREAD;
    e->pending = zero && slow && slow_launched > slow_finished; /* behind the slow work */
    e->stream = NULL;
    e->seq = slow_launched;
    if (zero && !e->pending) flush_blocking();
  } else if (!known_stream(s) || st->device != e->device) {
    r = FAKEGPU_INVALID_HANDLE; /* an event and a stream of different contexts or devices */
  } else {
    fakegpu_op *o = calloc(1, sizeof *o);
    if (!o) {
      r = FAKEGPU_OUT_OF_MEMORY;
    } else {
      o->event = e;
      e->pending = true;
      e->stream = st;
      enqueue(st, o);
    }
  }
  UNLOCK();
  return r;
}

/* The core runs the awaited work now: earlier than a GPU might, never out of order. */
int fakegpu_stream_wait_event(void *s, void *event) {
  fakegpu_event *e = event;
  LOCK();
  if (e->pending && e->stream) flush(e->stream, e);
  else if (e->pending) flush_blocking();
  UNLOCK();
  return FAKEGPU_OK;
}

/* Whether an event is still pending (lock held): one behind slow stream-0 work is done once that finished. */
static bool event_pending(fakegpu_event *e) {
  if (e->pending && !e->stream && e->seq <= slow_finished) e->pending = false;
  return e->pending;
}

int fakegpu_event_query(void *e) {
  LOCK();
  int r = event_pending(e) ? FAKEGPU_NOT_READY : FAKEGPU_OK;
  UNLOCK();
  return r;
}

int fakegpu_event_synchronize(void *event) {
  fakegpu_event *e = event;
  LOCK();
  if (event_pending(e)) {
    if (e->stream) flush(e->stream, e);
    else flush_blocking();
    e->pending = false;
  }
  UNLOCK();
  return FAKEGPU_OK;
}

int fakegpu_event_destroy(void *event, const void *caller) {
  fakegpu_event *e = event;
  LOCK();
  /* A destroyed event may still be queued: its marker lives on without it. */
  if (e->pending && e->stream)
    for (fakegpu_op *o = e->stream->head; o; o = o->next)
      if (o->event == e) {
        o->event = NULL;
        o->n = 0;
      }
  UNLOCK();
  fakegpu_held(e, 0, caller);
  free(e);
  return FAKEGPU_OK;
}

void fakegpu_slow_launch(void) {
  LOCK();
  slow_launched++;
  UNLOCK();
}

/* ---- the stream-ordered allocator ---- */

/* Releases cached blocks until the pool holds at most `keep` bytes. */
void fakegpu_pool_release(int d, uint64_t keep) {
  fakegpu_pool *p = &fakegpu.pools[d];
  LOCK();
  while (p->ncached && p->reserved > keep) {
    fakegpu_block b = p->cached[--p->ncached];
    UNLOCK();
    fakegpu_free_alloc(b.base, FAKEGPU_DEVICE);
    LOCK();
  }
  UNLOCK();
}

fakegpu_pool *fakegpu_default_pool(int d) { return &fakegpu.pools[d]; }

void fakegpu_pool_trim(fakegpu_pool *p, uint64_t keep) { fakegpu_pool_release((int)(p - fakegpu.pools), keep); }

int fakegpu_pool_set(fakegpu_pool *p, int attr, const void *value) {
  if (!p || !value || attr != 4) return FAKEGPU_INVALID_VALUE; /* the release threshold only */
  LOCK();
  memcpy(&p->threshold, value, sizeof p->threshold);
  UNLOCK();
  return FAKEGPU_OK;
}

/* 4: the release threshold, 5: the reserved bytes (both APIs' numbers). */
int fakegpu_pool_get(fakegpu_pool *p, int attr, void *value) {
  if (!p || !value) return FAKEGPU_INVALID_VALUE;
  LOCK();
  int r = FAKEGPU_OK;
  if (attr == 4) memcpy(value, &p->threshold, sizeof p->threshold);
  else if (attr == 5) memcpy(value, &p->reserved, sizeof p->reserved);
  else r = FAKEGPU_INVALID_VALUE;
  UNLOCK();
  return r;
}

int fakegpu_malloc_async(int d, size_t n, void **out, const void *caller) {
  fakegpu_pool *p = &fakegpu.pools[d];
  void *v = NULL;
  LOCK();
  for (size_t i = 0; i < p->ncached; i++)
    if (p->cached[i].size == n) { /* reuse in stream order: hdal's work is all on stream 0 */
      v = p->cached[i].base;
      p->cached[i] = p->cached[--p->ncached];
      break;
    }
  UNLOCK();
  if (!v) {
    int r = fakegpu_new_alloc(d, n, FAKEGPU_DEVICE, false, &v);
    if (r) return r;
    LOCK();
    fakegpu_find(v, n)->pooled = true;
    p->reserved += n;
    UNLOCK();
  }
  *out = v;
  fakegpu_held(v, 1, caller);
  return FAKEGPU_OK;
}

int fakegpu_free_async(int d, void *v, bool pooled, const void *caller) {
  LOCK();
  fakegpu_alloc *a = fakegpu_find(v, 1);
  fakegpu_pool *p = a ? &fakegpu.pools[d >= 0 ? d : a->device] : NULL;
  int r = a && a->base == v && (a->pooled || !pooled) && p->ncached < 64 ? FAKEGPU_OK : FAKEGPU_INVALID_VALUE;
  if (!r) p->cached[p->ncached++] = (fakegpu_block){v, a->size};
  UNLOCK();
  if (!r) fakegpu_held(v, 0, caller);
  return r;
}
