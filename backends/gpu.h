/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal GPU backends — the layer the CUDA, ROCm and Level Zero modules share
 * (docs/design.md, "One GPU layer").
 *
 * The buffer operations (gpu_buffer.c) and the errors named by the driver
 * (gpu.c) are written once over a table of the driver's entry points,
 * hdal__gpu_driver, which each module fills with thin calls of its own API,
 * leaving out what its runtime does not have.  Each module compiles these
 * files in: a module calls nothing of another's (docs/backend-abi.md).  The module's state starts with an hdal__gpu and its
 * devices with an hdal__gpu_device, so the core's `state` and `dev` pointers
 * are theirs too.
 */
#ifndef HDAL_GPU_H
#define HDAL_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <hdal/backend.h>

/* A driver call's result: CUresult and hipError_t are both int, and agree on these. */
enum { HDAL__GPU_SUCCESS = 0, HDAL__GPU_NOT_READY = 600 };
/* What a driver's native_handle answers for a kind its API has not: no driver's code. */
enum { HDAL__GPU_NO_HANDLE = -1 };

typedef struct hdal__gpu hdal__gpu;

/* The first member of a module's device. */
typedef struct {
  hdal__gpu *gpu;
  int ordinal;   /* the driver's device ordinal: the local hardware id and DLPack device_id */
  bool async;    /* allocations come from the device's default memory pool, stream-ordered on hdal's stream */
  void *mempool; /* that pool, once hdal's pool asked for it (docs/memory.md) */
  /* Bit n: whether this device may address ordinal n's memory was asked (and, where the runtime
   * enables access, enabling tried), once; and the answer (gpu_buffer.c, peer_reach). */
  uint64_t peers_asked, peers_reached;
} hdal__gpu_device;

/* What enter() found current, for leave(); `what`: the call that failed. */
typedef struct {
  int prev;
  const char *what;
} hdal__gpu_saved;

/* What the driver says of an address. */
typedef enum {
  HDAL__GPU_MEM_UNKNOWN,
  HDAL__GPU_MEM_HOST,
  HDAL__GPU_MEM_DEVICE,
  HDAL__GPU_MEM_MANAGED,
  HDAL__GPU_MEM_OTHER
} hdal__gpu_mem;
typedef struct {
  hdal__gpu_mem kind;
  int device;
  void *device_pointer; /* where the driver says so with the rest; else NULL */
} hdal__gpu_pointer;

typedef enum { HDAL__GPU_TO_DEVICE, HDAL__GPU_FROM_DEVICE, HDAL__GPU_ON_DEVICE } hdal__gpu_direction;

/* A driver: its names in messages and the calls the layer makes
 * (docs/new-backend.md).  A call about a device takes it, `d` (its module is
 * d->gpu); pointer_query, which finds the device, and the error calls take
 * the module.  An entry marked "optional" is NULL where the runtime has no
 * such call; gpu_buffer.c applies what stands in for it, in one place.
 * Streams are the caller's handles; 0 is hdal's own (CUDA's legacy default
 * stream, HIP's null stream, Level Zero's immediate list), which comes after
 * every blocking stream's work. */
typedef struct {
  const char *vendor;      /* "CUDA": "CUDA device 0" */
  const char *runtime;     /* "CUDA driver": "the CUDA driver does not know its data" */
  const char *says;        /* "driver": "but the driver says" */
  const char *dl_name;     /* "kDLCUDA" */
  DLDeviceType dl_type;    /* kDLCUDA: the tensors whose device_id is an ordinal */
  uint64_t pointer_types;  /* DLPack types whose data are addresses the driver knows (HDAL_DL_TYPE_BIT) */
  bool address_as_pointer; /* addresses in messages as %p, else as 0x%llx */
  const char *alloc_name, *alloc_async_name, *event_query_name; /* entry points named in messages */
  bool fence_done_enters;  /* an event is queried with its device current */

  /* Makes `d` current until leave() (CUDA: its primary context pushed; HIP:
   * it selected; Level Zero: its list locked); an error is enter_error's to name. */
  int (*enter)(hdal__gpu_device *d, hdal__gpu_saved *saved);
  void (*leave)(hdal__gpu_device *d, const hdal__gpu_saved *saved);
  hdal_error *(*enter_error)(hdal__gpu_device *d, int r, const hdal__gpu_saved *saved);
  /* Optional: before a copy from `src` to the current device.  NULL: nothing to do. */
  int (*peer_enter)(hdal__gpu_device *src, hdal__gpu_saved *saved);
  void (*pointer_query)(hdal__gpu *g, const void *p, hdal__gpu_pointer *out);
  /* Optional: does the current-to-be `d` map pinned host memory `p` at the
   * same address?  NULL: pointer_query said, as device_pointer. */
  bool (*host_mapped)(hdal__gpu_device *d, const void *p, const hdal__gpu_pointer *pi);
  /* d->async says which allocator; `async` which free. */
  int (*alloc_fn)(hdal__gpu_device *d, size_t n, void **p);
  void (*free_fn)(hdal__gpu_device *d, void *p, bool async);
  /* Issued on `stream` when given, synchronous otherwise; `d` is current. */
  int (*copy)(hdal__gpu_device *d, hdal__gpu_direction dir, void *dst, const void *src, size_t n,
              const intptr_t *stream);
  /* Optional: from `sd` to the current `dd`.  NULL: dd's copy does it (one address space). */
  int (*peer)(hdal__gpu_device *dd, void *dst, hdal__gpu_device *sd, const void *src, size_t n, const intptr_t *stream);
  /* Optional, both or neither: the caller's streams, waited for, and stream 0
   * ordered after an event.  NULL: the runtime has no stream of the caller's
   * and every copy is done when it returns (Level Zero): nothing to wait for. */
  int (*synchronize)(hdal__gpu_device *d, intptr_t stream);
  int (*stream_wait_event)(hdal__gpu_device *d, intptr_t stream, void *ev);
  /* Optional: whether the event calls were found.  NULL: they always are. */
  bool (*has_events)(const hdal__gpu *g);
  /* The events of hdal's pool's fences.  An event recorded on `stream` (0
   * alone without synchronize): created, recorded, destroyed again if that failed. */
  int (*event_record)(hdal__gpu_device *d, intptr_t stream, void **ev);
  int (*event_query)(hdal__gpu_device *d, void *ev, bool wait);
  void (*event_destroy)(hdal__gpu_device *d, void *ev);
  /* Optional, all or none: the device's default memory pool, stream-ordered:
   * whether `d` may have one, and it, its release threshold raised ("kept whole
   * between uses"), with `d` current, as d->mempool.  NULL: none; hdal's pool serves. */
  bool (*pool_supported)(hdal__gpu_device *d);
  bool (*pool_open)(hdal__gpu_device *d, void **pool);
  void (*pool_trim)(hdal__gpu_device *d);
  int (*pool_reserved)(hdal__gpu_device *d, uint64_t *bytes);
  /* The native handle `which` of `d` (hdal_device_native_handle), not entered: HDAL__GPU_SUCCESS with
   * *handle, HDAL__GPU_NO_HANDLE for a kind of another API, or the driver's error with saved->what naming
   * the failed call, for enter_error. */
  int (*native_handle)(hdal__gpu_device *d, hdal_native_handle which, intptr_t *handle, hdal__gpu_saved *saved);
  /* Optional: whether `a` may address `b`'s memory (one way; gpu_buffer.c asks both), *can 0 or 1,
   * not entered, or the runtime's error, named in messages as peer_query_name.  NULL: never
   * (docs/backend-abi.md, peer_access). */
  int (*can_access_peer)(hdal__gpu_device *a, hdal__gpu_device *b, int *can);
  /* Optional, only with `peer`: lets the current `d` address `peer`'s memory (cuCtxEnablePeerAccess), so that
   * peer copies go directly, not staged through host memory by the runtime; success also where already
   * enabled.  NULL: peer copies stay as the runtime makes them. */
  int (*enable_peer)(hdal__gpu_device *d, hdal__gpu_device *peer);
  /* Optional, both or neither, for a runtime without `peer`: page-locked host memory that both `a` and `b`
   * copy to and from, not entered, or the runtime's error.  A copy between two GPUs that cannot reach each
   * other goes through it (gpu_buffer.c, staged_copy); NULL, or an error: through plain host memory. */
  int (*staging_alloc)(hdal__gpu_device *a, hdal__gpu_device *b, size_t n, void **p);
  void (*staging_free)(hdal__gpu_device *a, void *p);
  /* Optional: a fabric joining a and b that the runtime or its kernel driver knows (hdal_backend_buffer_ops::
   * fabric), not entered.  NULL: none known. */
  bool (*fabric)(hdal__gpu_device *a, hdal__gpu_device *b, hdal_link *out);
  const char *peer_query_name; /* "cuDeviceCanAccessPeer" */
  /* "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", and the code that fits. */
  void (*describe)(const hdal__gpu *g, int r, char *buf, size_t len);
  hdal_code (*code_of)(int r);
} hdal__gpu_driver;

/* The calls of a driver's table, each a static function of that name in the
 * module's file: those every runtime has, and those of a runtime with
 * streams, peer copies and a memory pool (CUDA, HIP). */
#define HDAL__GPU_DRIVER_CALLS                                                                                  \
  .enter = enter, .leave = leave, .enter_error = enter_error, .pointer_query = pointer_query,                  \
  .alloc_fn = alloc_fn, .free_fn = free_fn, .copy = copy, .event_record = event_record,                        \
  .event_query = event_query, .event_destroy = event_destroy, .native_handle = native_handle, .describe = describe
#define HDAL__GPU_STREAM_CALLS                                                                                  \
  .peer = peer, .synchronize = synchronize, .stream_wait_event = stream_wait_event, .has_events = has_events,  \
  .pool_supported = pool_supported, .pool_open = pool_open, .pool_trim = pool_trim, .pool_reserved = pool_reserved

/* The first member of a module's state. */
struct hdal__gpu {
  const hdal_backend_host *host;
  const hdal__gpu_driver *drv;
  int ndevices;
  void *devices;      /* ndevices of the module's device struct, each starting with an hdal__gpu_device */
  size_t device_size; /* sizeof that struct */
};

/* gpu.c */
/* An error for a failed driver call: "<what>: <describe>", with the code that fits. */
HDAL__HIDDEN hdal_error *hdal__gpu_error(const hdal__gpu *g, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* gpu_buffer.c */
HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__gpu_buffer_ops;
/* Gives back what the devices' default memory pools cache for hdal (at finalize). */
HDAL__HIDDEN void hdal__gpu_pools_trim(hdal__gpu *g);

#endif /* HDAL_GPU_H */
