/* SPDX-License-Identifier: BSD-3-Clause */
/* The fake GPU core (tests/fakes/fakegpu.c) under the fake runtimes' three API
 * faces, the CUDA driver API (tests/fakes/cuda/), the HIP runtime
 * (tests/fakes/hip/) and a Level Zero driver (tests/fakes/ze/): devices on host memory, allocations, lazy streams and
 * events, default memory pools, configuration from the environment, call
 * counters and the fault-injection interposer's hooks.  Each fake library
 * compiles the core in with one face, which defines `fakegpu_face` and
 * translates its API's types and numbering to the core's.
 *
 * Results are the numbers both APIs give the same errors. */
#ifndef HDAL_FAKEGPU_H
#define HDAL_FAKEGPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKEGPU_HIDDEN __attribute__((visibility("hidden")))
#define FAKEGPU_MAXDEV 16
/* A stream handle both APIs give hdal's work: the per-thread default stream. */
#define FAKEGPU_PER_THREAD ((void *)2)

enum {
  FAKEGPU_OK = 0,
  FAKEGPU_INVALID_VALUE = 1,
  FAKEGPU_OUT_OF_MEMORY = 2,
  FAKEGPU_NOT_INITIALIZED = 3,
  FAKEGPU_INVALID_DEVICE = 101,
  FAKEGPU_PEER_UNSUPPORTED = 217,      /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, hipErrorPeerAccessUnsupported */
  FAKEGPU_PEER_ALREADY_ENABLED = 704,  /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, hipErrorPeerAccessAlreadyEnabled */
  FAKEGPU_INVALID_CONTEXT = 201,
  FAKEGPU_INVALID_HANDLE = 400,
  FAKEGPU_NOT_READY = 600,
  FAKEGPU_NOT_SUPPORTED = 801,
  FAKEGPU_UNKNOWN = 999,
};
enum { FAKEGPU_HOST = 1, FAKEGPU_DEVICE = 2 }; /* an allocation's kind */

/* What a face says of its API. */
typedef struct {
  const char *prefix;        /* of the variables: "FAKECUDA_" */
  const char *name_format;   /* default device names: "Fake GPU %d" */
  unsigned first_bus;        /* default PCI bus ids: 0000:<first_bus + n>:00.0 */
  size_t memory;             /* default bytes per device */
  const char *slow_variable; /* "1": stream 0's work is slow (fakegpu_slow_launch) */
  int no_device_init;        /* the initialisation's result when there is no device */
  bool guarded;              /* device memory faults on host access: the core reaches it through a shadow */
  bool legacy_handle;        /* stream handle 1 is stream 0 too (CU_STREAM_LEGACY) */
  const char *const *counted; /* the entry points counted by name */
  size_t ncounted;
  void (*configure)(void);   /* the face's own settings, after the core's */
  /* The devices the API's visibility variable (CUDA_VISIBLE_DEVICES, ...) leaves of the
   * n the machine has: their indices among the n, in the API's order, into order[]; their count. */
  int (*visible)(int n, int *order);
} fakegpu_face;
FAKEGPU_HIDDEN extern const fakegpu_face fakegpu_face_of_api;
/* A face's descriptor, with its `counted` names, its `configure` and its `visible`. */
#define FAKEGPU_FACE(prefix, name_format, first_bus, memory, slow_variable, no_device_init, guarded, legacy_handle) \
  const fakegpu_face fakegpu_face_of_api = {prefix,         name_format,   first_bus,                            \
                                            memory,         slow_variable, no_device_init,                       \
                                            guarded,        legacy_handle, counted,                              \
                                            sizeof counted / sizeof counted[0], configure, visible}

typedef struct {
  char name[256];
  unsigned domain, bus, slot;
  size_t total, used;
  int physical; /* its index among the machine's devices, before the visibility variable: its UUID's */
} fakegpu_device;

typedef struct fakegpu_alloc {
  struct fakegpu_alloc *next;
  char *base;   /* the address handed out */
  char *shadow; /* where the core reads and writes it */
  size_t size, mapped;
  int device;
  int kind;
  bool managed;
  bool pooled; /* of the device's memory pool: counted in its reserved bytes */
  const void *owner; /* the face's context that made it, where the face has contexts (Level Zero) */
} fakegpu_alloc;

typedef struct fakegpu_op fakegpu_op;
typedef struct fakegpu_stream {
  struct fakegpu_stream *next;
  int device;
  unsigned flags; /* 1: non-blocking (both APIs' number) */
  fakegpu_op *head, *tail;
} fakegpu_stream;

typedef struct {
  int device;
  bool pending;
  fakegpu_stream *stream; /* NULL while pending: behind slow stream-0 work */
  unsigned long seq;
} fakegpu_event;

/* A device's default memory pool: cached blocks of the stream-ordered free. */
typedef struct {
  void *base;
  size_t size;
} fakegpu_block;
typedef struct {
  uint64_t threshold, reserved;
  fakegpu_block cached[64];
  size_t ncached;
} fakegpu_pool;

/* The core's state, configured at the first call. */
typedef struct {
  pthread_mutex_t lock;
  int ndev, init_result;
  bool no_mempools;
  fakegpu_device devs[FAKEGPU_MAXDEV];
  fakegpu_pool pools[FAKEGPU_MAXDEV];
} fakegpu_state;
FAKEGPU_HIDDEN extern fakegpu_state fakegpu;

/* Every entry point starts here: configured once, counted. */
FAKEGPU_HIDDEN void fakegpu_begin(const char *name);
/* Whether the interposer fails this call (`caller`: where the entry point was called from). */
FAKEGPU_HIDDEN bool fakegpu_injected(const char *name, const void *caller);
/* Tells the interposer, if any, about an object made (1) or given back (0) for `caller`. */
FAKEGPU_HIDDEN void fakegpu_held(const void *object, int held, const void *caller);
FAKEGPU_HIDDEN unsigned fakegpu_calls(const char *name);
FAKEGPU_HIDDEN bool fakegpu_valid_device(int d);
/* Item i of the face's variable `name` (a comma-separated list) into buf; NULL when absent or shorter. */
FAKEGPU_HIDDEN const char *fakegpu_setting(const char *name, int i, char *buf, size_t len);
/* CUDA_VISIBLE_DEVICES' rule, which HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES follow too: `value`
 * is a comma list of ordinals among the nfrom devices from[] (machine indices), or, with uuid_of,
 * UUID prefixes (uuid_of(machine index, buf, len) spells a device's UUID; compared without case);
 * blanks around an entry are ignored.  The list ends at the first entry that is neither, names no
 * device or two, or repeats one: the devices before it stay visible ("" and "-1" leave none).  The
 * devices named, in the list's order, into order[]; their count. */
FAKEGPU_HIDDEN int fakegpu_visible_list(const char *value, const int *from, int nfrom,
                                        void (*uuid_of)(int device, char *buf, size_t len), int *order);
/* Every one of n devices, in order: what a face without its variable shows. */
FAKEGPU_HIDDEN int fakegpu_all_visible(int n, int *order);
/* The face's UUIDS item of the machine's device m, spelled `prefix` ("GPU-" or "") and 32 hex
 * digits, dashes anywhere among them, without case: its 16 bytes into out; false when there is no
 * such item (the face's own UUID stands). */
FAKEGPU_HIDDEN bool fakegpu_uuid_given(int m, const char *prefix, unsigned char out[16]);
/* PEER: whether the machine's device ma may address mb's memory: FAKEGPU_OK with *can (0 for a
 * device and itself), or FAKEGPU_UNKNOWN when the setting makes the query fail. */
FAKEGPU_HIDDEN int fakegpu_peer_machine(int ma, int mb, int *can);
/* Enabling visible device d's access to peer's memory (cuCtxEnablePeerAccess, hipDeviceEnablePeerAccess):
 * FAKEGPU_PEER_UNSUPPORTED where PEER grants none, FAKEGPU_PEER_ALREADY_ENABLED the second time. */
FAKEGPU_HIDDEN int fakegpu_enable_peer(int d, int peer);
/* The same by visible ordinals (CUDA's and HIP's query): FAKEGPU_INVALID_DEVICE for one out of range. */
FAKEGPU_HIDDEN int fakegpu_can_access_peer(int d, int peer, int *can);

/* Memory.  find: the allocation holding [p, p+n), lock held. */
FAKEGPU_HIDDEN fakegpu_alloc *fakegpu_find(const void *p, size_t n);
FAKEGPU_HIDDEN int fakegpu_new_alloc(int device, size_t n, int kind, bool managed, void **out);
FAKEGPU_HIDDEN int fakegpu_free_alloc(void *p, int kind);
/* Allocations not freed by their owner: live ones, and those a context reset took. */
FAKEGPU_HIDDEN size_t fakegpu_live_allocations(void);
/* Device d's context is destroyed: its allocations (device, managed, pinned host) go. */
FAKEGPU_HIDDEN void fakegpu_context_reset(int d);
/* Where the core reaches [p, p+n) of device memory (of `device` unless -1); NULL if none.  Lock held. */
FAKEGPU_HIDDEN void *fakegpu_device_view(const void *p, size_t n, int device);

/* Streams and events.  submit: a copy run now on stream 0, or queued on `s`; lock held. */
FAKEGPU_HIDDEN bool fakegpu_default_stream(const void *s);
FAKEGPU_HIDDEN int fakegpu_submit(void *s, void *dst, const void *src, size_t n, bool stage);
FAKEGPU_HIDDEN int fakegpu_stream_create(int device, unsigned flags, void **out, const void *caller);
FAKEGPU_HIDDEN int fakegpu_stream_destroy(void *s, const void *caller);
/* `device`: the current one, -1 for none (stream 0 is then no stream). */
FAKEGPU_HIDDEN int fakegpu_stream_synchronize(void *s, int device);
FAKEGPU_HIDDEN int fakegpu_event_create(int device, void **out, const void *caller);
FAKEGPU_HIDDEN int fakegpu_event_record(void *e, void *s);
FAKEGPU_HIDDEN int fakegpu_stream_wait_event(void *s, void *e);
FAKEGPU_HIDDEN int fakegpu_event_query(void *e);
FAKEGPU_HIDDEN int fakegpu_event_synchronize(void *e);
FAKEGPU_HIDDEN int fakegpu_event_destroy(void *e, const void *caller);
/* Slow work (a kernel) queued on stream 0, done at its next synchronisation. */
FAKEGPU_HIDDEN void fakegpu_slow_launch(void);

/* The stream-ordered allocator, on device d's pool. */
FAKEGPU_HIDDEN void fakegpu_pool_release(int d, uint64_t keep);
/* The same for pool p (a handle of fakegpu_default_pool), whose device is its place in the table. */
FAKEGPU_HIDDEN void fakegpu_pool_trim(fakegpu_pool *p, uint64_t keep);
FAKEGPU_HIDDEN fakegpu_pool *fakegpu_default_pool(int d);
FAKEGPU_HIDDEN int fakegpu_pool_set(fakegpu_pool *p, int attr, const void *value);
FAKEGPU_HIDDEN int fakegpu_pool_get(fakegpu_pool *p, int attr, void *value);
FAKEGPU_HIDDEN int fakegpu_malloc_async(int d, size_t n, void **out, const void *caller);
/* Back to the pool of device `d` (-1: the block's own), if it is a block of one when `pooled`. */
FAKEGPU_HIDDEN int fakegpu_free_async(int d, void *v, bool pooled, const void *caller);

#endif
