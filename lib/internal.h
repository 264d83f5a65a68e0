/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — internal declarations shared by lib/ and the built-in CPU backend. */
#ifndef HDAL_INTERNAL_H
#define HDAL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <hdal.h>
#include <hdal/backend.h>


/* ---- errors (error.c) ---- */
struct hdal_error {
  hdal_code code;
  bool is_static; /* the out-of-memory error: never freed */
  char *message;
  hdal_cause cause;
};
/* Gives e the cause (not the static out-of-memory error, which keeps none); returns e. */
HDAL__HIDDEN hdal_error *hdal__error_with_cause(hdal_error *e, hdal_cause cause);
HDAL__HIDDEN hdal_error *hdal__error_new(hdal_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
HDAL__HIDDEN hdal_error *hdal__error_vnew(hdal_code code, const char *fmt, va_list ap);
HDAL__HIDDEN hdal_error *hdal__error_oom(void);
HDAL__HIDDEN char *hdal__strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- versioned structs (error.c) ---- */
/* Whether a caller's struct, `struct_size` bytes as it was compiled, holds
 * FIELD: options and statistics structs only ever grow at the end. */
#define HDAL__HAS_FIELD(p, type, field) ((p)->struct_size >= offsetof(type, field) + sizeof((p)->field))
/* INVALID_ARGUMENT "<type>: struct_size N is too small", for a struct that
 * does not even hold its first field. */
HDAL__HIDDEN hdal_error *hdal__struct_size_error(const char *type, size_t struct_size);

/* ---- devices (device.c) ---- */
/* A memory pool limit (pool.c): bytes, or a percentage of the device's memory. */
typedef struct {
  uint64_t bytes;   /* 0: none (or a percentage) */
  unsigned percent; /* 0: none */
} hdal__pool_limit;
struct hdal__pool;
typedef struct {
  char *key;
  char *value;
  unsigned type_flags; /* hdal_attribute_type | HDAL_ATTRIBUTE_TOPOLOGY */
  uint64_t number;     /* the value read once: a UINT's number, a BOOL's 0 or 1; 0 for a string */
} hdal__attribute;

struct hdal_device {
  hdal_context *ctx;
  struct hdal_backend_discovery *backend; /* NULL for a device of another process */
  const hdal_backend_buffer_ops *ops;     /* the backend's, read by device_ops.c only; NULL when remote */
  bool host_rule; /* of the built-in backend, whose can_alias is host memory's (device_ops.h) */
  void *data;                             /* the backend's per-device state */
  int id;
  size_t added; /* its place in the order its backend added its devices: route()'s local index */
  int local_hardware_id;
  int process_index;
  char *platform;
  char *remote_backend; /* backend name of a device of another process; local ones use backend->name */
  char *kind;
  char *reason; /* NULL for PjRt-compatible devices */
  hdal_runtime_class runtime_class;
  DLDevice dl;
  uint64_t memory_bytes;
  int numa_node;
  bool host_addressable;
  hdal__attribute *attrs;
  size_t nattrs, attrs_cap;
  _Atomic(struct hdal__pool *) pool; /* made on first allocation (pool.c) */
  struct hdal__machine *host;        /* its process's host, one of the context's (host.c) */
  struct hdal__locality *locality;   /* worked out on first hdal_device_locality(), under ctx->lock
                                      * (locality.c); one block, freed with the device */
  /* Where the context's topology with I/O objects has it, found on its first link, under ctx->lock
   * (links.c): its PCI object and GPU OS device (NULL where none), the topology's for the context's life. */
  struct hwloc_obj *topology_pci, *topology_osdev;
  bool topology_placed;
};
/* The longest string a device holds (kind, reason, attribute keys and values):
 * longer ones are cut there, as the process table's format allows no more. */
#define HDAL__MAX_STRING 4096u
HDAL__HIDDEN hdal_device *hdal__device_new(void);
/* The rules every device keeps, whether its backend adds it or a process table
 * brings it (docs/backend-abi.md): false, and why in `why`, when one is broken.
 * Local hardware ids are also unique inside a backend; the callers check that. */
HDAL__HIDDEN bool hdal__device_rules_hold(int local_hardware_id, int numa_node, int dl_type, char *why, size_t size);
HDAL__HIDDEN void hdal__device_free(hdal_device *d);
/* Frees n devices and the array. */
HDAL__HIDDEN void hdal__device_list_free(hdal_device **v, size_t n);
/* hdal_backend_host::add_attribute: the value's text written here, unknown flag bits dropped. */
HDAL__HIDDEN bool hdal__device_add_attribute(hdal_device *d, const hdal_backend_attribute *a);
/* The bits of a type-and-flags word this hdal knows. */
#define HDAL__ATTRIBUTE_KNOWN (HDAL_ATTRIBUTE_TYPE_MASK | HDAL_ATTRIBUTE_TOPOLOGY)
/* The text of a boolean attribute, one spelling for every backend (words.c). */
HDAL__HIDDEN const char *hdal__bool_word(bool b);

/* ---- hosts (host.c; docs/dlpack.md, "Hosts") ---- */
/* A host (a machine) as a process table names it.  The context owns its hosts: its own
 * (ctx->own_host) and those of other processes' devices. */
typedef struct hdal__machine {
  char *name;        /* the hostname; NULL: not known */
  char *id;          /* "BOOT_ID/net:[INODE]"; NULL: not known, the host is its process's alone */
  int index;         /* its place in ctx->hosts; -1 while no device of it is in the table */
  int first_process; /* the lowest process index of its devices in the table */
} hdal__machine;
/* The longest host name or id a table may carry, and what each may hold: a
 * name, bytes from 0x20 up but 0x7F; an id, printable ASCII without space. */
#define HDAL__HOST_FIELD_MAX 255u
HDAL__HIDDEN bool hdal__host_name_valid(const char *s, size_t n);
HDAL__HIDDEN bool hdal__host_id_valid(const char *s, size_t n);
/* A host record owning name and id (freed here when out of memory: NULL). */
HDAL__HIDDEN hdal__machine *hdal__host_new(char *name, char *id);
HDAL__HIDDEN void hdal__host_free(hdal__machine *h);
/* This process's host, read from /proc (under HDAL_FSROOT); NULL when out of memory. */
HDAL__HIDDEN hdal__machine *hdal__host_local(void);
/* Whether h is the host a table names so: the same id, and the same name (or none). */
HDAL__HIDDEN bool hdal__host_same(const hdal__machine *h, const char *name, const char *id);

/* ---- backends (backend_list.c, discovery.c, backend_status.c, module.c) ---- */

/* The most runtimes whose visibility variables (hdal_backend::visibility) hide other backends' faces
 * of their GPUs (faces.c). */
#define HDAL__NARROWINGS 8

/* One backend of a context: its descriptor, state, status and devices.  It is
 * also the hdal_backend_discovery handed to the backend's discover(). */
struct hdal_backend_discovery {
  hdal_context *ctx;
  char *name;
  const hdal_backend *desc; /* NULL until loaded, and when unavailable */
  char *file;               /* the module's file, as the path scan found it; NULL: none */
  void *module;             /* dlopen handle; NULL for built-in backends */
  void *state;
  bool enabled;
  bool named;      /* listed, not excluded, by name in the backend selection */
  bool discovered; /* discover() succeeded: finalize() is owed */
  /* Its status as data (hdal_context_backend_state), and the text made from it. */
  hdal_backend_state_kind kind; /* 0 until discovery settles it */
  size_t nrefused;
  size_t nunselected;        /* left out by the device selector */
  size_t hidden[HDAL__NARROWINGS]; /* faces of GPUs each narrowed runtime does not show (faces.c) */
  size_t nhidden;            /* their sum */
  size_t nowned_elsewhere;   /* GPUs the binding left to other local ranks (faces.c) */
  bool first_lost;           /* devices were refused and the first reason could not be kept (out of memory) */
  char *reason; /* NULL, allocated, or the static "out of memory" (backend_status.c) */
  char *status;
  hdal_device **devices; /* local devices, in local hardware id order */
  size_t ndevices, devices_cap;
};
typedef struct hdal_backend_discovery hdal__backend;

/* What a backend's discover() is given to reach the core (host_services.c). */
HDAL__HIDDEN extern const hdal_backend_host hdal__host;
/* Host memory's buffer operations (host_ops.c): the CPU backend's, and what
 * modules get as hdal_backend_host::host_buffer_ops. */
HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__host_buffer_ops;
HDAL__HIDDEN hdal_error *hdal__host_write(void *state, void *dev, void *handle, uint64_t offset, const void *src,
                                          size_t n, const intptr_t *stream);
HDAL__HIDDEN hdal_error *hdal__host_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst,
                                         size_t n, const intptr_t *stream);
HDAL__HIDDEN hdal_error *hdal__host_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                                         const void *src, uint64_t src_offset, size_t n, const intptr_t *stream);
HDAL__HIDDEN void *hdal__host_pointer(void *state, void *dev, void *handle, uint64_t offset);

/* module.c */
/* HDAL_BACKEND_PATH's absolute directories (the install directory too when it
 * ends with ':'), or the install directory when it is NULL or empty. */
HDAL__HIDDEN char *hdal__module_search_path(const hdal_context *ctx, const char *user_path);
/* Every module on the path: names, and the file of each (the first directory's). */
HDAL__HIDDEN hdal_error *hdal__module_scan(const char *search_path, char ***names, char ***files, size_t *count);
/* Sets b's descriptor (and module); false, and why in *why_not (NULL: out of
 * memory), when it cannot: the caller, discovery.c, writes the status. */
HDAL__HIDDEN bool hdal__module_load(hdal__backend *b, const char *search_path, char **why_not);
HDAL__HIDDEN void hdal__module_unload(hdal__backend *b);
HDAL__HIDDEN void hdal__string_list_free(char **list, size_t n);
HDAL__HIDDEN bool hdal__string_list_has(char *const *list, size_t n, const char *s);

/* ---- context (context.c) ---- */
/* HDAL_GPU_BINDING, or hdal_context_options::gpu_binding (faces.c). */
typedef enum { HDAL__BINDING_NONE = 0, HDAL__BINDING_LOCAL_RANK = 1 } hdal__binding_mode;
typedef struct {
  hdal__binding_mode mode;
  int local_rank, local_size; /* 0 of 1 when nothing says */
  const char *who;            /* where the mode came from: "HDAL_GPU_BINDING" or the option's name */
  const char *source;         /* where the local rank came from: the option, a launcher's variables, or none */
} hdal__binding;

struct hdal_context {
  atomic_long refs; /* the user's reference, live buffers' and threads' stocks (lifetime.c) */
  atomic_bool dying; /* hdal_context_destroy was called: stocks go back */
  int process_index;
  int process_count;
  bool debug;
  hdal__backend *backends;
  size_t nbackends;
  hdal_device **devices; /* global order */
  size_t ndevices, devices_cap;
  /* Import routing: the backend that owns each DLDeviceType (dense, filled by the backends). */
  hdal__backend *owner_of_dl_type[64];
  pthread_mutex_t lock; /* serialises lazy state (topology, process tables) */
  void *pci_topology;   /* hwloc topology with I/O objects, loaded on first need */
  bool pool_caching;    /* HDAL_MEMORY_POOL is not "0" (pool.c) */
  hdal__pool_limit pool_limit; /* the option, else HDAL_MEMORY_POOL_LIMIT */
  bool pci_topology_tried;
  int topology_source;     /* hdal_topology_source of pci_topology, set when loaded (topology.c) */
  char *topology_detail;   /* its file or synthetic description; NULL for this system */
  bool hwloc_held;      /* a hold of hdal__hwloc_hold, given back with the context */
  unsigned forks; /* hdal__forks when the context was made (fork.c) */
  const struct hdal__selector *selector; /* while the context is made: the devices discovery keeps (selector.c) */
  bool hide_faces;          /* HDAL_HIDE_FACES or the option is not "0" (faces.c) */
  char narrowed_by[HDAL__NARROWINGS][96]; /* the visibility variables set, per narrowed runtime (faces.c) */
  hdal__backend *narrower[HDAL__NARROWINGS]; /* those runtimes' backends */
  hdal__binding binding;    /* the GPUs of this local rank (faces.c) */
  char *selected_by; /* NULL, or the selector described (hdal__selector_describe), for refusals it explains */
  /* Hosts (host.c): this process's, and the hosts of the devices in the
   * table, ascending by their lowest process index: a host's index is its place. */
  hdal__machine *own_host;
  hdal__machine **hosts;
  size_t nhosts, hosts_cap;
  /* Which devices are the same hardware (hardware.c): worked out on first
   * need, under the lock, and dropped when the table changes. */
  struct hdal__hardware *hardware;
};
/* Frees the context and its backends: its last reference is gone. */
HDAL__HIDDEN void hdal__context_free(hdal_context *ctx);

/* ---- a context's hosts (host.c) ---- */
/* The listed host, or this process's own when not yet listed, that a table names so; NULL: none. */
HDAL__HIDDEN hdal__machine *hdal__hosts_find(const hdal_context *ctx, const char *name, const char *id);
/* Room for `more` hosts in ctx->hosts; false when out of memory. */
HDAL__HIDDEN bool hdal__hosts_reserve(hdal_context *ctx, size_t more);
/* Lists h (room reserved) with process p among its processes, keeping the
 * hosts ascending by lowest process and their indices their places. */
HDAL__HIDDEN void hdal__hosts_place(hdal_context *ctx, hdal__machine *h, int p);
HDAL__HIDDEN void hdal__hosts_free(hdal_context *ctx);

/* ---- same hardware (hardware.c; docs/reference.md, "Hosts and hardware") ---- */
/* Drops what was worked out: the table changed (called with the lock held). */
HDAL__HIDDEN void hdal__hardware_forget(hdal_context *ctx);

/* ---- devices served here (device.c): needs both structs ---- */
/* Whether a buffer runtime serves device d for context ctx's process: the one
 * test behind import's checks 1 and 2, export's and copy_to_device's. */
typedef enum { HDAL__SERVED, HDAL__NOT_PJRT, HDAL__NOT_ADDRESSABLE } hdal__service;
static inline hdal__service hdal__device_service(const hdal_context *ctx, const hdal_device *d) {
  if (d->runtime_class != HDAL_RUNTIME_PJRT) return HDAL__NOT_PJRT;
  if (d->process_index != ctx->process_index || !d->ops) return HDAL__NOT_ADDRESSABLE; /* no operations here */
  return HDAL__SERVED;
}
/* Refuses a target device that is not PjRt-compatible, not addressable or of another context. */
HDAL__HIDDEN hdal_error *hdal__check_target(const hdal_device *d, const hdal_context *ctx, const char *who);
/* A diagnostic line on stderr under HDAL_DEBUG (error.c). */
HDAL__HIDDEN void hdal__debug(const hdal_context *ctx, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- lifetimes (lifetime.c): per-thread stocks of context references and
 * buffer objects, so that the import/release path writes no shared line ---- */
/* A reference for a new buffer / given back by a released one: inline in lifetime.h. */
/* hdal_context_destroy lives there too: the user's reference and every
 * thread's stock go back, and the last reference frees the context
 * (hdal__context_free), so that context.c calls nothing of lifetime.c. */

/* ---- recycling (recycle.c): HDAL_NO_RECYCLE, beneath the context and the lifetimes ---- */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
/* AddressSanitizer builds never recycle a buffer object, so that a use after
 * the last release is still caught; ThreadSanitizer builds do, so that the
 * hand-over between threads is checked. */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define HDAL__CACHED_OBJECTS 0
#else
#define HDAL__CACHED_OBJECTS 4
#endif

/* Objects a thread keeps: HDAL__CACHED_OBJECTS, or 0 when HDAL_NO_RECYCLE is
 * set (hdal__recycle_init): every released object is then freed, so that
 * valgrind reports a use after the last release (docs/hardening.md). */
HDAL__HIDDEN extern int hdal__cached_objects;
HDAL__HIDDEN extern bool hdal__no_recycle; /* HDAL_NO_RECYCLE is set: no device memory kept either */
/* Reads HDAL_NO_RECYCLE, once per process: hdal_context_create calls it. */
HDAL__HIDDEN void hdal__recycle_init(void);

/* ---- fork (fork.c) ---- */
/* Children of fork() this process descends from, since hdal began counting. */
HDAL__HIDDEN extern atomic_uint hdal__forks;
/* Starts counting (once) and returns the count: for a new context. */
HDAL__HIDDEN unsigned hdal__fork_watch(void);
/* Whether the context is used in a fork() child of the process that made it. */
static inline bool hdal__forked(const hdal_context *ctx) {
  return atomic_load_explicit(&hdal__forks, memory_order_relaxed) != ctx->forks;
}
/* A module's runtime started here (its discover() succeeded); whether this
 * process is a fork() child of the one where it started. */
HDAL__HIDDEN void hdal__fork_runtime_started(const char *name);
HDAL__HIDDEN bool hdal__fork_runtime_left_behind(const char *name);
/* Keeps a module's state that a fork() child cannot finalize reachable. */
HDAL__HIDDEN void hdal__fork_leave(void *state);
/* Which devices refuse in a fork() child, and how: device_ops.h. */

/* ---- topology (topology.c) ---- */
/* What a backend's topology loads: hdal__topology_apply(, HDAL__TOPOLOGY_DEVICES) (hwloc_policy.h). */
HDAL__HIDDEN void hdal__topology_restrict(void *topology);
HDAL__HIDDEN int hdal__numa_node_of_pci(hdal_context *ctx, const char *pci_bus_id);
/* The context's topology with I/O objects (an hwloc_topology_t), loaded on the first call;
 * NULL when hwloc could not load it.  Called with ctx->lock held. */
HDAL__HIDDEN void *hdal__pci_topology_locked(hdal_context *ctx);
/* hwloc's PCI object of a bus id in that topology (hwloc_get_pcidev_by_busidstring) and its
 * first non-I/O ancestor (hwloc_get_non_io_ancestor_obj), each NULL when there is none: the one
 * lookup of the NUMA node of a PCI device and of a device's locality.  What was found, or why
 * not.  Called with ctx->lock held. */
struct hwloc_obj;
typedef enum {
  HDAL__PCI_FOUND,           /* both, the ancestor with a cpuset */
  HDAL__PCI_NO_TOPOLOGY,     /* hwloc could not load the topology with I/O objects */
  HDAL__PCI_NO_PCI_OBJECTS,  /* the topology has none (synthetic, an XML file without I/O) */
  HDAL__PCI_NO_OBJECT,       /* none of this bus id */
  HDAL__PCI_NO_ANCESTOR,     /* the object, without a CPU-side ancestor (or one without a cpuset) */
} hdal__pci_lookup;
HDAL__HIDDEN hdal__pci_lookup hdal__pci_object_locked(hdal_context *ctx, const char *bus_id, struct hwloc_obj **pci,
                                                      struct hwloc_obj **ancestor);
HDAL__HIDDEN void hdal__topology_free(void *topology);
/* hdal_device_locality() for the core's callers (binding.c), its errors worded for `who`
 * ("hdal_device_bind: device 3 (...): why"); d and out not NULL. */
HDAL__HIDDEN hdal_error *hdal__device_locality(const hdal_device *d, const char *who, hdal_locality *out);

/* ---- DLPack (dlpack_import.c; buffers in buffer.h) ---- */
/* Memory of these DLPack device types is host memory: kDLCPU, kDLCUDAHost,
 * kDLCUDAManaged, kDLROCMHost (pinned by HIP). */
static inline bool hdal__host_readable_type(int32_t t) {
  return t == kDLCPU || t == kDLCUDAHost || t == kDLCUDAManaged || t == kDLROCMHost;
}

#endif /* HDAL_INTERNAL_H */
