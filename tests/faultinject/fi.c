/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal fault injection — an LD_PRELOAD interposer for the walk tests (see fi.h).
 *
 * Only calls made from hdal's own code count: the return address of each
 * interposed call is looked up among the code segments of libhdal, libhdal-mpi
 * and hdal_*.so modules (dl_iterate_phdr), so the test program, libc, hwloc and
 * the OpenCL drivers allocate as usual.  Allocations go to glibc's __libc_*
 * entry points, which needs no dlsym and so cannot recurse.
 *
 * Limits: a call hdal makes as a tail call is attributed to hdal's caller; a
 * module that looks its entry points up with dlsym (the CUDA backend) is not
 * interposed here.  dlopen and dlsym are interposed too: every call goes to
 * glibc's from here, so glibc sees this object as the caller (a library's
 * dlsym(RTLD_NEXT, ...) then means the object after this one: only this
 * interposer uses RTLD_NEXT in the walks' processes).
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "fi.h"

#define FI_EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
/* What the interposer defines beyond <stdlib.h>, <string.h>, <stdio.h>. */
FI_EXPORT void hdalfi_start(long n);
FI_EXPORT void hdalfi_stop_injecting(void);
FI_EXPORT void hdalfi_stop(void);
FI_EXPORT void hdalfi_get_report(hdalfi_report *r);
FI_EXPORT int hdalfi_driver_call(const char *function, const void *caller);
FI_EXPORT void hdalfi_driver_object(const void *object, int held, const void *caller);
FI_EXPORT void *memalign(size_t align, size_t n);
FI_EXPORT int __vasprintf_chk(char **strp, int flag, const char *fmt, va_list ap);
FI_EXPORT int __asprintf_chk(char **strp, int flag, const char *fmt, ...);
struct hwloc_topology;
FI_EXPORT int hwloc_topology_init(struct hwloc_topology **t);
FI_EXPORT int hwloc_topology_load(struct hwloc_topology *t);
FI_EXPORT void hwloc_topology_destroy(struct hwloc_topology *t);
FI_EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
FI_EXPORT int munmap(void *addr, size_t length);
FI_EXPORT int madvise(void *addr, size_t length, int advice);
FI_EXPORT void *dlopen(const char *file, int mode);
FI_EXPORT void *dlsym(void *handle, const char *name);

/* ---- state ---- */

static atomic_bool active;    /* counting and tracking */
static atomic_bool injecting; /* failing the nth call */
static atomic_long nth, calls, injected_at, armed_calls = -1;
static _Atomic(uintptr_t) injected_caller;
static atomic_int injected_kind;
static const char *_Atomic injected_function;

/* ---- is the caller hdal's? ---- */

typedef struct {
  uintptr_t lo, hi;
} range;

enum { MAX_RANGES = 64 };
static range ranges[MAX_RANGES];
static int nranges;
static unsigned long long seen_adds = ~0ULL, seen_subs = ~0ULL;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_hdal_object(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (!strncmp(base, "libhdal.so", 10) || !strncmp(base, "libhdal-mpi.so", 14)) return 1;
  size_t len = strlen(base);
  return len > 8 && !strncmp(base, "hdal_", 5) && !strcmp(base + len - 3, ".so");
}

typedef struct {
  range r[MAX_RANGES];
  int n;
  unsigned long long adds, subs;
} scan;

static int collect(struct dl_phdr_info *info, size_t size, void *arg) {
  scan *s = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
  }
  if (!info->dlpi_name || !is_hdal_object(info->dlpi_name)) return 0;
  for (int i = 0; i < info->dlpi_phnum && s->n < MAX_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
      s->r[s->n++] = (range){info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
  }
  return 0;
}

static int counters(struct dl_phdr_info *info, size_t size, void *arg) {
  scan *s = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
  }
  return 1; /* the counters are the same for every object */
}

static int in_ranges(uintptr_t a) {
  int found = 0;
  pthread_mutex_lock(&ranges_lock);
  for (int i = 0; i < nranges && !found; i++) found = a >= ranges[i].lo && a < ranges[i].hi;
  pthread_mutex_unlock(&ranges_lock);
  return found;
}

/* Modules come and go with dlopen: rescan when the loader says so.  The scan
 * runs outside our lock (the loader takes its own). */
static int from_hdal(const void *caller) {
  uintptr_t a = (uintptr_t)caller;
  if (in_ranges(a)) return 1;
  scan s = {.adds = 0, .subs = 0};
  dl_iterate_phdr(counters, &s);
  pthread_mutex_lock(&ranges_lock);
  int stale = s.adds != seen_adds || s.subs != seen_subs;
  pthread_mutex_unlock(&ranges_lock);
  if (!stale) return 0;
  scan full = {.n = 0};
  dl_iterate_phdr(collect, &full);
  pthread_mutex_lock(&ranges_lock);
  memcpy(ranges, full.r, sizeof ranges);
  nranges = full.n;
  seen_adds = full.adds;
  seen_subs = full.subs;
  pthread_mutex_unlock(&ranges_lock);
  return in_ranges(a);
}

/* Counts a fallible call; true when this one must fail. */
static int should_fail(hdalfi_kind kind, const char *function, const void *caller) {
  if (!atomic_load_explicit(&active, memory_order_acquire) || !from_hdal(caller)) return 0;
  long n = atomic_fetch_add(&calls, 1) + 1;
  if (!atomic_load(&injecting) || n != atomic_load(&nth)) return 0;
  atomic_store(&injected_caller, (uintptr_t)caller);
  atomic_store(&injected_kind, (int)kind);
  atomic_store(&injected_function, function);
  atomic_store(&injected_at, n);
  return 1;
}

/* ---- what hdal holds: pointer -> count tables (linear probing, backward-shift delete) ---- */

typedef struct {
  uintptr_t key;
  long count;
} slot;

typedef struct {
  slot *slots;
  size_t mask;
  long live; /* sum of counts */
  pthread_mutex_t lock;
} table;

static table memory_table = {.lock = PTHREAD_MUTEX_INITIALIZER};
static table object_table = {.lock = PTHREAD_MUTEX_INITIALIZER};

enum { TABLE_BITS = 20 };

static void table_reset(table *t) {
  pthread_mutex_lock(&t->lock);
  if (!t->slots) {
    size_t n = (size_t)1 << TABLE_BITS;
    void *p = mmap(NULL, n * sizeof(slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      t->slots = p;
      t->mask = n - 1;
    }
  } else {
    memset(t->slots, 0, (t->mask + 1) * sizeof(slot));
  }
  t->live = 0;
  pthread_mutex_unlock(&t->lock);
}

static size_t hash(uintptr_t k) { return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ULL); }

static void table_add(table *t, const void *p) {
  if (!p) return;
  pthread_mutex_lock(&t->lock);
  if (t->slots) {
    size_t i = hash((uintptr_t)p) & t->mask;
    while (t->slots[i].key && t->slots[i].key != (uintptr_t)p) i = (i + 1) & t->mask;
    t->slots[i].key = (uintptr_t)p;
    t->slots[i].count++;
    t->live++;
  }
  pthread_mutex_unlock(&t->lock);
}

/* Drops one count of p; pointers never added are ignored. */
static void table_drop(table *t, const void *p) {
  if (!p) return;
  pthread_mutex_lock(&t->lock);
  if (t->slots && t->live) {
    size_t i = hash((uintptr_t)p) & t->mask;
    while (t->slots[i].key && t->slots[i].key != (uintptr_t)p) i = (i + 1) & t->mask;
    if (t->slots[i].key && --t->slots[i].count == 0) {
      /* Backward-shift deletion keeps every probe chain unbroken. */
      size_t hole = i;
      t->slots[hole].key = 0;
      for (size_t j = (hole + 1) & t->mask; t->slots[j].key; j = (j + 1) & t->mask) {
        size_t home = hash(t->slots[j].key) & t->mask;
        if (((j - home) & t->mask) >= ((j - hole) & t->mask)) {
          t->slots[hole] = t->slots[j];
          t->slots[j] = (slot){0, 0};
          hole = j;
        }
      }
      t->live--;
    } else if (t->slots[i].key) {
      t->live--;
    }
  }
  pthread_mutex_unlock(&t->lock);
}

static int tracking(void) { return atomic_load_explicit(&active, memory_order_acquire); }

/* Records an allocation when hdal made it. */
static void *track(void *p, const void *caller) {
  if (p && tracking() && from_hdal(caller)) table_add(&memory_table, p);
  return p;
}

/* ---- control ---- */

FI_EXPORT void hdalfi_start(long n) {
  table_reset(&memory_table);
  table_reset(&object_table);
  atomic_store(&calls, 0);
  atomic_store(&armed_calls, -1);
  atomic_store(&injected_at, 0);
  atomic_store(&injected_caller, 0);
  atomic_store(&injected_function, NULL);
  atomic_store(&nth, n);
  atomic_store(&injecting, n > 0);
  atomic_store_explicit(&active, 1, memory_order_release);
}

FI_EXPORT void hdalfi_stop_injecting(void) {
  atomic_store(&injecting, 0);
  long expected = -1;
  atomic_compare_exchange_strong(&armed_calls, &expected, atomic_load(&calls));
}

FI_EXPORT void hdalfi_stop(void) {
  atomic_store(&injecting, 0);
  atomic_store_explicit(&active, 0, memory_order_release);
}

FI_EXPORT void hdalfi_get_report(hdalfi_report *r) {
  memset(r, 0, sizeof *r);
  long armed = atomic_load(&armed_calls);
  r->calls = armed >= 0 ? armed : atomic_load(&calls);
  r->injected_at = atomic_load(&injected_at);
  r->kind = (hdalfi_kind)atomic_load(&injected_kind);
  const char *fn = atomic_load(&injected_function);
  snprintf(r->function, sizeof r->function, "%s", fn ? fn : "");
  uintptr_t c = atomic_load(&injected_caller);
  Dl_info info;
  if (c && dladdr((void *)c, &info) && info.dli_fname) {
    const char *base = strrchr(info.dli_fname, '/');
    snprintf(r->caller, sizeof r->caller, "%s+0x%lx", base ? base + 1 : info.dli_fname,
             (unsigned long)(c - (uintptr_t)info.dli_fbase));
  }
  pthread_mutex_lock(&memory_table.lock);
  r->live_allocations = memory_table.live;
  pthread_mutex_unlock(&memory_table.lock);
  pthread_mutex_lock(&object_table.lock);
  r->live_objects = object_table.live;
  pthread_mutex_unlock(&object_table.lock);
}

/* ---- a fake driver's calls (tests/fakes/cuda/ asks) ---- */

FI_EXPORT int hdalfi_driver_call(const char *function, const void *caller) {
  return should_fail(HDALFI_DRIVER, function, caller);
}

/* An object the driver made (held) or gave back for hdal: counted with the
 * OpenCL objects, so a device allocation, stream, event or primary-context
 * reference that hdal keeps is a leak. */
FI_EXPORT void hdalfi_driver_object(const void *object, int held, const void *caller) {
  if (!tracking() || !from_hdal(caller)) return;
  if (held) table_add(&object_table, object);
  else table_drop(&object_table, object);
}

/* ---- memory ---- */

#define CALLER __builtin_return_address(0)

FI_EXPORT void *malloc(size_t n) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "malloc", caller)) return errno = ENOMEM, NULL;
  return track(__libc_malloc(n), caller);
}

FI_EXPORT void *calloc(size_t n, size_t size) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "calloc", caller)) return errno = ENOMEM, NULL;
  return track(__libc_calloc(n, size), caller);
}

FI_EXPORT void free(void *p) {
  if (p && tracking()) table_drop(&memory_table, p);
  __libc_free(p);
}

static void *do_realloc(void *p, size_t n, const void *caller, const char *function) {
  if (n && should_fail(HDALFI_MEMORY, function, caller)) return errno = ENOMEM, NULL;
  void *q = __libc_realloc(p, n);
  if ((q || !n) && p && tracking()) table_drop(&memory_table, p);
  return track(q, caller);
}

FI_EXPORT void *realloc(void *p, size_t n) { return do_realloc(p, n, CALLER, "realloc"); }

FI_EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return errno = ENOMEM, NULL;
  return do_realloc(p, n * size, CALLER, "reallocarray");
}

FI_EXPORT char *strdup(const char *s) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "strdup", caller)) return errno = ENOMEM, NULL;
  size_t n = strlen(s) + 1;
  char *d = __libc_malloc(n);
  if (d) memcpy(d, s, n);
  return track(d, caller);
}

FI_EXPORT char *strndup(const char *s, size_t max) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "strndup", caller)) return errno = ENOMEM, NULL;
  size_t n = strnlen(s, max);
  char *d = __libc_malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return track(d, caller);
}

/* On failure *strp is left alone: glibc documents it as undefined. */
static int do_vasprintf(char **strp, const char *fmt, va_list ap, const void *caller, const char *function) {
  if (should_fail(HDALFI_MEMORY, function, caller)) return errno = ENOMEM, -1;
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) return -1;
  char *s = __libc_malloc((size_t)n + 1);
  if (!s) return errno = ENOMEM, -1;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  *strp = track(s, caller);
  return n;
}

FI_EXPORT int vasprintf(char **strp, const char *fmt, va_list ap) {
  return do_vasprintf(strp, fmt, ap, CALLER, "vasprintf");
}

FI_EXPORT int asprintf(char **strp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = do_vasprintf(strp, fmt, ap, CALLER, "asprintf");
  va_end(ap);
  return n;
}

/* What _FORTIFY_SOURCE turns the two above into. */
FI_EXPORT int __vasprintf_chk(char **strp, int flag, const char *fmt, va_list ap) {
  (void)flag;
  return do_vasprintf(strp, fmt, ap, CALLER, "vasprintf");
}

FI_EXPORT int __asprintf_chk(char **strp, int flag, const char *fmt, ...) {
  (void)flag;
  va_list ap;
  va_start(ap, fmt);
  int n = do_vasprintf(strp, fmt, ap, CALLER, "asprintf");
  va_end(ap);
  return n;
}

FI_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  const void *caller = CALLER;
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  if (should_fail(HDALFI_MEMORY, "posix_memalign", caller)) return ENOMEM;
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = track(p, caller);
  return 0;
}

FI_EXPORT void *aligned_alloc(size_t align, size_t n) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "aligned_alloc", caller)) return errno = ENOMEM, NULL;
  return track(__libc_memalign(align, n), caller);
}

FI_EXPORT void *memalign(size_t align, size_t n) {
  const void *caller = CALLER;
  if (should_fail(HDALFI_MEMORY, "memalign", caller)) return errno = ENOMEM, NULL;
  return track(__libc_memalign(align, n), caller);
}

/* ---- threads ---- */

typedef int pthread_create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

FI_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  static pthread_create_fn *real;
  if (!real) real = (pthread_create_fn *)dlsym(RTLD_NEXT, "pthread_create");
  if (should_fail(HDALFI_THREAD, "pthread_create", CALLER)) return EAGAIN;
  return real(t, attr, fn, arg);
}

/* ---- mappings (the CPU backend's allocations of 1 MiB and more) ---- */

/* glibc's own entry points, found without dlsym (which is interposed below). */
static void *next_libc(const char *name) {
  void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  if (!p) {
    fprintf(stderr, "hdalfi: %s not found\n", name);
    abort();
  }
  return p;
}

typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
typedef int munmap_fn(void *, size_t);
typedef int madvise_fn(void *, size_t, int);

FI_EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
  static mmap_fn *real;
  const void *caller = CALLER;
  if (!real) real = (mmap_fn *)next_libc("mmap");
  if (should_fail(HDALFI_MEMORY, "mmap", caller)) return errno = ENOMEM, MAP_FAILED;
  void *p = real(addr, length, prot, flags, fd, offset);
  if (p != MAP_FAILED && tracking() && from_hdal(caller)) table_add(&object_table, p);
  return p;
}

FI_EXPORT int munmap(void *addr, size_t length) {
  static munmap_fn *real;
  if (!real) real = (munmap_fn *)next_libc("munmap");
  int rc = real(addr, length);
  if (rc == 0 && tracking()) table_drop(&object_table, addr);
  return rc;
}

FI_EXPORT int madvise(void *addr, size_t length, int advice) {
  static madvise_fn *real;
  if (!real) real = (madvise_fn *)next_libc("madvise");
  if (should_fail(HDALFI_MEMORY, "madvise", CALLER)) return errno = ENOMEM, -1;
  return real(addr, length, advice);
}

/* ---- the dynamic loader ---- */

typedef void *dlopen_fn(const char *, int);
typedef void *dlsym_fn(void *, const char *);

FI_EXPORT void *dlopen(const char *file, int mode) {
  static dlopen_fn *real;
  if (!real) real = (dlopen_fn *)next_libc("dlopen");
  if (should_fail(HDALFI_LOADER, "dlopen", CALLER)) return NULL; /* dlerror() then has nothing to say */
  return real(file, mode);
}

FI_EXPORT void *dlsym(void *handle, const char *name) {
  static dlsym_fn *real;
  if (!real) real = (dlsym_fn *)next_libc("dlsym");
  if (should_fail(HDALFI_LOADER, "dlsym", CALLER)) return NULL;
  return real(handle, name);
}

/* ---- hwloc ---- */

typedef int hwloc_init_fn(struct hwloc_topology **);
typedef int hwloc_load_fn(struct hwloc_topology *);
typedef void hwloc_destroy_fn(struct hwloc_topology *);

static void *next_symbol(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "hdalfi: %s not found\n", name);
    abort();
  }
  return p;
}

FI_EXPORT int hwloc_topology_init(struct hwloc_topology **t) {
  static hwloc_init_fn *real;
  const void *caller = CALLER;
  if (!real) real = (hwloc_init_fn *)next_symbol("hwloc_topology_init");
  if (should_fail(HDALFI_HWLOC, "hwloc_topology_init", caller)) return errno = ENOMEM, -1;
  int rc = real(t);
  if (rc == 0 && tracking() && from_hdal(caller)) table_add(&object_table, *t);
  return rc;
}

FI_EXPORT int hwloc_topology_load(struct hwloc_topology *t) {
  static hwloc_load_fn *real;
  if (!real) real = (hwloc_load_fn *)next_symbol("hwloc_topology_load");
  if (should_fail(HDALFI_HWLOC, "hwloc_topology_load", CALLER)) return errno = EINVAL, -1;
  return real(t);
}

FI_EXPORT void hwloc_topology_destroy(struct hwloc_topology *t) {
  static hwloc_destroy_fn *real;
  if (!real) real = (hwloc_destroy_fn *)next_symbol("hwloc_topology_destroy");
  if (tracking()) table_drop(&object_table, t);
  real(t);
}

/* ---- OpenCL ---- */

#ifdef HDALFI_WITH_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

/* The module links the ICD loader with RTLD_LOCAL, out of RTLD_NEXT's reach:
 * ask the loaded library itself. */
static void *cl_symbol(const char *name) {
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *p = h ? dlsym(h, name) : NULL;
  if (!p) p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "hdalfi: %s not found\n", name);
    abort();
  }
  return p;
}

#define REAL(fn) \
  static __typeof__(fn) *real; \
  if (!real) real = (__typeof__(fn) *)cl_symbol(#fn)

/* A call returning cl_int. */
#define CL_STATUS_CALL(fn, failure, params, args) \
  FI_EXPORT cl_int fn params { \
    REAL(fn); \
    if (should_fail(HDALFI_OPENCL, #fn, CALLER)) return failure; \
    return real args; \
  }

/* A call returning an object, its status in *errcode_ret. */
#define CL_OBJECT_CALL(type, fn, params, args) \
  FI_EXPORT type fn params { \
    REAL(fn); \
    const void *caller = CALLER; \
    if (should_fail(HDALFI_OPENCL, #fn, caller)) { \
      if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY; \
      return NULL; \
    } \
    type o = real args; \
    if (o && tracking() && from_hdal(caller)) table_add(&object_table, o); \
    return o; \
  }

#define CL_RELEASE_CALL(fn, type) \
  FI_EXPORT cl_int fn(type o) { \
    REAL(fn); \
    cl_int rc = real(o); \
    if (rc == CL_SUCCESS && tracking() && from_hdal(CALLER)) table_drop(&object_table, o); \
    return rc; \
  }

CL_STATUS_CALL(clGetPlatformIDs, CL_OUT_OF_HOST_MEMORY,
               (cl_uint n, cl_platform_id *p, cl_uint *np), (n, p, np))
CL_STATUS_CALL(clGetPlatformInfo, CL_OUT_OF_HOST_MEMORY,
               (cl_platform_id p, cl_platform_info w, size_t n, void *v, size_t *r), (p, w, n, v, r))
CL_STATUS_CALL(clGetDeviceIDs, CL_OUT_OF_HOST_MEMORY,
               (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d, cl_uint *nd), (p, t, n, d, nd))
CL_STATUS_CALL(clGetDeviceInfo, CL_OUT_OF_HOST_MEMORY,
               (cl_device_id d, cl_device_info w, size_t n, void *v, size_t *r), (d, w, n, v, r))
CL_STATUS_CALL(clGetContextInfo, CL_OUT_OF_HOST_MEMORY,
               (cl_context c, cl_context_info w, size_t n, void *v, size_t *r), (c, w, n, v, r))
CL_STATUS_CALL(clGetMemObjectInfo, CL_OUT_OF_HOST_MEMORY,
               (cl_mem m, cl_mem_info w, size_t n, void *v, size_t *r), (m, w, n, v, r))
CL_STATUS_CALL(clFinish, CL_OUT_OF_RESOURCES, (cl_command_queue q), (q))
CL_STATUS_CALL(clEnqueueReadBuffer, CL_OUT_OF_RESOURCES,
               (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, void *p, cl_uint ne,
                const cl_event *w, cl_event *e),
               (q, m, b, o, n, p, ne, w, e))
CL_STATUS_CALL(clEnqueueWriteBuffer, CL_OUT_OF_RESOURCES,
               (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, const void *p, cl_uint ne,
                const cl_event *w, cl_event *e),
               (q, m, b, o, n, p, ne, w, e))
CL_STATUS_CALL(clEnqueueCopyBuffer, CL_OUT_OF_RESOURCES,
               (cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t n, cl_uint ne,
                const cl_event *w, cl_event *e),
               (q, s, d, so, dof, n, ne, w, e))
CL_STATUS_CALL(clEnqueueUnmapMemObject, CL_OUT_OF_RESOURCES,
               (cl_command_queue q, cl_mem m, void *p, cl_uint ne, const cl_event *w, cl_event *e),
               (q, m, p, ne, w, e))

FI_EXPORT void *clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool b, cl_map_flags f, size_t o, size_t n,
                                   cl_uint ne, const cl_event *w, cl_event *e, cl_int *errcode_ret) {
  REAL(clEnqueueMapBuffer);
  if (should_fail(HDALFI_OPENCL, "clEnqueueMapBuffer", CALLER)) {
    if (errcode_ret) *errcode_ret = CL_MAP_FAILURE;
    return NULL;
  }
  return real(q, m, b, f, o, n, ne, w, e, errcode_ret);
}

CL_OBJECT_CALL(cl_context, clCreateContext,
               (const cl_context_properties *p, cl_uint n, const cl_device_id *d,
                void(CL_CALLBACK *cb)(const char *, const void *, size_t, void *), void *u, cl_int *errcode_ret),
               (p, n, d, cb, u, errcode_ret))
CL_OBJECT_CALL(cl_command_queue, clCreateCommandQueue,
               (cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int *errcode_ret),
               (c, d, p, errcode_ret))
CL_OBJECT_CALL(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t n, void *h, cl_int *errcode_ret),
               (c, f, n, h, errcode_ret))
CL_OBJECT_CALL(cl_mem, clCreateSubBuffer,
               (cl_mem m, cl_mem_flags f, cl_buffer_create_type t, const void *i, cl_int *errcode_ret),
               (m, f, t, i, errcode_ret))

FI_EXPORT cl_int clRetainMemObject(cl_mem m) {
  REAL(clRetainMemObject);
  const void *caller = CALLER;
  if (should_fail(HDALFI_OPENCL, "clRetainMemObject", caller)) return CL_OUT_OF_HOST_MEMORY;
  cl_int rc = real(m);
  if (rc == CL_SUCCESS && tracking() && from_hdal(caller)) table_add(&object_table, m);
  return rc;
}

CL_RELEASE_CALL(clReleaseContext, cl_context)
CL_RELEASE_CALL(clReleaseCommandQueue, cl_command_queue)
CL_RELEASE_CALL(clReleaseMemObject, cl_mem)
#endif
