/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — backend module ABI, version 6.
 * What a backend implements and what the core gives it: the @defgroup below. */
#ifndef HDAL_BACKEND_H
#define HDAL_BACKEND_H

/**
 * @defgroup hdal_backends Backend modules
 * @brief The interface a backend implements: the descriptor, the host services, the buffer operations.
 *
 * A backend is one const ::hdal_backend descriptor.  A loadable module is a
 * shared object named hdal_<name>.so in $(pkglibdir)/backends or in a
 * directory of @c HDAL_BACKEND_PATH that exports its descriptor as the data
 * symbol hdal_<name>_backend (::HDAL_BACKEND_DEFINE).  The loader refuses a
 * module whose @c abi_version is not ::HDAL_BACKEND_ABI_VERSION, or whose
 * symbol is missing, and says why in the backend's status.
 *
 * A module never calls into libhdal: what it needs of the core comes through
 * the ::hdal_backend_host table handed to @c discover(), so it links only what
 * it drives.  Ownership: strings in a device info are copied by the core;
 * errors a backend returns are owned by the core from then on (made with
 * hdal_backend_host::error_new or hdal_backend_host::error_oom).
 *
 * Thread safety: @c discover() of different backends runs concurrently, each
 * in one thread; the buffer operations may be called from any thread at once
 * and must be thread safe; @c finalize() runs once, after the last buffer.
 * Writing a backend: docs/backend-abi.md.
 * @{
 */

#include <stdarg.h>
#include <stddef.h>
#include <hdal.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this interface; a module with another @c abi_version is refused. */
#define HDAL_BACKEND_ABI_VERSION 6u

/** Where @c discover() puts its devices.  Opaque; owned by the core. */
typedef struct hdal_backend_discovery hdal_backend_discovery;

/** A device a backend adds (hdal_backend_host::add_device).  Initialise with ::HDAL_BACKEND_DEVICE_INFO_INIT. */
typedef struct {
  const char *kind;                 /**< Model name (hdal_device_kind()); copied; required. */
  int local_hardware_id;            /**< Ordinal inside the backend; devices are listed by it. */
  DLDevice dlpack_device;           /**< hdal_device_dlpack_device(). */
  uint64_t memory_bytes;            /**< hdal_device_memory_bytes(); 0 unknown. */
  int numa_node;                    /**< hwloc logical index of the nearest NUMA node, -1 unknown. */
  hdal_runtime_class runtime_class; /**< 0: the backend's own class. */
  const char *runtime_class_reason; /**< Why the device is IFRT-native; copied. */
  bool host_addressable;            /**< Its memory handles are host pointers (CPU devices). */
  void *data;                       /**< The backend's per-device state, handed back to the operations; owned by the backend. */
} hdal_backend_device_info;

/** Initialiser of ::hdal_backend_device_info: NUMA node unknown (-1), the rest 0 or NULL. */
#define HDAL_BACKEND_DEVICE_INFO_INIT {NULL, 0, {kDLCPU, 0}, 0, -1, (hdal_runtime_class)0, NULL, false, NULL}

/** An attribute a backend gives (hdal_backend_host::add_attribute): a key and a typed value, as PJRT's
 * named values are.  The core writes the text of hdal_device_attribute() from it, one spelling for every
 * backend (numbers in decimal, booleans "yes" and "no"). */
typedef struct {
  const char *key;         /**< Copied; required. */
  unsigned type_and_flags; /**< An ::hdal_attribute_type, or ::HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES, or'ed with
                                ::HDAL_ATTRIBUTE_TOPOLOGY where it applies; unknown flag bits are dropped. */
  union {
    const char *string; /**< ::HDAL_ATTRIBUTE_STRING; copied; required. */
    uint64_t uint;      /**< ::HDAL_ATTRIBUTE_UINT. */
    bool boolean;       /**< ::HDAL_ATTRIBUTE_BOOL. */
  } value;              /**< The value, by its type; none for ::HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES. */
} hdal_backend_attribute;

/** Type of an attribute without a value: the core lists the device's hdal_backend_device_info::memory_bytes
 * under its key, as an ::HDAL_ATTRIBUTE_UINT, so that the fact crosses once and still shows where the
 * backend lists it among its attributes. */
#define HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES 0x80u

/** An ::HDAL_ATTRIBUTE_STRING attribute, for hdal_backend_host::add_attribute (C99 compound literal). */
#define HDAL_BACKEND_STRING(KEY, S) (&(const hdal_backend_attribute){(KEY), HDAL_ATTRIBUTE_STRING, {.string = (S)}})
/** An ::HDAL_ATTRIBUTE_UINT attribute. */
#define HDAL_BACKEND_UINT(KEY, N) (&(const hdal_backend_attribute){(KEY), HDAL_ATTRIBUTE_UINT, {.uint = (N)}})
/** An ::HDAL_ATTRIBUTE_BOOL attribute. */
#define HDAL_BACKEND_BOOL(KEY, B) (&(const hdal_backend_attribute){(KEY), HDAL_ATTRIBUTE_BOOL, {.boolean = (B)}})
/** The device's memory_bytes, listed under @p KEY (::HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES). */
#define HDAL_BACKEND_MEMORY_BYTES(KEY) (&(const hdal_backend_attribute){(KEY), HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES, {0}})

/** The request of hdal_backend_buffer_ops::runtime_pool. */
typedef enum {
  HDAL_BACKEND_POOL_ENABLE = 1,   /**< From now on serve allocate() and release() from the runtime's own
                                       stream-ordered pool, if it has one; asked once per device, before its
                                       first allocation, and only when caching is on. */
  HDAL_BACKEND_POOL_RESERVED = 2, /**< Report the bytes the runtime's pool holds (in use plus cached). */
  HDAL_BACKEND_POOL_TRIM = 3,     /**< Give the pool's cached memory back to the device, then report. */
} hdal_backend_pool_request;

/** Buffer operations: a backend without them (buffer_ops == NULL) serves no buffer
 * runtime and its devices are IFRT-native, whatever the descriptor declares.
 * Memory is named by a handle (host or device pointer, or cl_mem) and a byte
 * offset into it.  `dev` is the device's `data` pointer from discovery, `state`
 * the backend's state from discover().  An operation left NULL is unsupported:
 * the core answers HDAL_UNIMPLEMENTED (or goes through the host, as noted). */
typedef struct {
  /** May `dev` use the memory of tensor `t` in place (zero-copy)?  `t` is on a
   * device type this backend or another owns; answer only for memory `dev` can
   * address (kDLCPU memory for a CPU device, a cl_mem of the same context...). */
  bool (*can_alias)(void *state, void *dev, const DLTensor *t);
  /** Routes a tensor of one of the descriptor's dl_device_types to a device of
   * this backend (local index, in discovery order).  NULL: match device_id with
   * the devices' dlpack_device.device_id. */
  hdal_error *(*route)(void *state, const DLTensor *t, size_t *local_index);
  /** Allocates @p nbytes on `dev`; the handle is released with release(). */
  hdal_error *(*allocate)(void *state, void *dev, size_t nbytes, void **handle);
  /** Takes a reference on a foreign handle that is aliased (clRetainMemObject);
   * NULL: nothing to take. */
  hdal_error *(*retain)(void *state, void *dev, void *handle);
  /** Frees an allocation or drops a reference taken by retain(). */
  void (*release)(void *state, void *dev, void *handle);
  /** Host to device.  `stream`, when not NULL, is the caller's stream/queue: the
   * operation is ordered after work already submitted to it. */
  hdal_error *(*write)(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t nbytes,
                       const intptr_t *stream);
  /** Device to host; `stream` as for write(). */
  hdal_error *(*read)(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t nbytes,
                      const intptr_t *stream);
  /** Device -> device inside this backend; NULL: through host memory. */
  hdal_error *(*copy)(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev, const void *src,
                      uint64_t src_offset, size_t nbytes, const intptr_t *stream);
  /** A handle that starts at `offset` (for export with byte_offset 0), holding its
   * own reference (release() drops it).  NULL: pointer arithmetic, no reference. */
  hdal_error *(*subrange)(void *state, void *dev, void *handle, uint64_t offset, size_t nbytes, void **out);
  /** Orders hdal's following work on `dev` after the work on the caller's stream. */
  hdal_error *(*stream_wait)(void *state, void *dev, intptr_t stream);
  /** A marker after the work queued on `dev` (or on @p handle) so far, taken when block @p handle goes back
   * to the pool: the block is not handed out again before fence_done() says that work is done.  *fence
   * NULL: nothing is queued.  NULL: hdal's work is done when its calls return. */
  hdal_error *(*fence)(void *state, void *dev, void *handle, void **fence);
  /** Whether the work before @p fence is done, waiting for it when @p wait; true also frees the fence. */
  bool (*fence_done)(void *state, void *dev, void *fence, bool wait);
  /** The runtime's own stream-ordered pool (::hdal_backend_pool_request): true when the runtime has one
   * (for ::HDAL_BACKEND_POOL_ENABLE: it serves `dev` from now on), with its reserved bytes in
   * @p *reserved; false: hdal's pool serves `dev` (for the other requests: it cannot say now).
   * NULL: the runtime has none. */
  bool (*runtime_pool)(void *state, void *dev, hdal_backend_pool_request request, uint64_t *reserved);
  /** The host address of the byte at @p offset in @p handle when the CPU can read and write that memory in
   * place (host, pinned or managed memory), else NULL.  The core then compacts strided elements straight
   * from or into it, without a temporary.  NULL: none of this device's memory is host-addressable.  Host
   * memory's operations: hdal_backend_host::host_buffer_ops. */
  void *(*host_pointer)(void *state, void *dev, void *handle, uint64_t offset);
  /** The stream or queue hdal's own work on `dev` goes to, as DLPack names a stream for the device type
   * (a cl_command_queue for OpenCL), made on first use; 0 is the runtime's default stream (CUDA's legacy
   * stream).  NULL: 0, for a device without streams or whose work hdal issues on the default one. */
  hdal_error *(*work_stream)(void *state, void *dev, intptr_t *stream);
  /** Waits until the work queued so far on the stream of work_stream() on `dev` is done, hdal's and the
   * application's (clFinish on hdal's queue; the default stream synchronised), for hdal_device_synchronize().
   * NULL: nothing to wait for (hdal's work is done when its calls return, and no stream of `dev` is handed out). */
  hdal_error *(*synchronize)(void *state, void *dev);
  /** The native handle @p which (an ::hdal_native_handle) of `dev`, for hdal_device_native_handle(): true
   * when the backend has that kind, with @p *handle set, or with @p *error set (the core's from then on) when
   * the runtime failed to make it; false when it has none of that kind (the core's refusal names the device
   * and the kind).  A handle stays the backend's, valid until finalize(); one made on first use is made once,
   * thread-safely.  NULL: no native handle of any kind (the CPU's). */
  bool (*native_handle)(void *state, void *dev, hdal_native_handle which, intptr_t *handle, hdal_error **error);
  /** Whether the runtime lets devices `a` and `b` (two of this backend's, a != b) address each other's memory,
   * both ways (cuDeviceCanAccessPeer, hipDeviceCanAccessPeer, zeDeviceCanAccessPeer): *can set, or an error
   * when the runtime's query failed (hdal_device_link() then reports no peer access).  NULL: never. */
  hdal_error *(*peer_access)(void *state, void *a, void *b, bool *can);
  /** Whether a GPU fabric the runtime or its kernel driver knows joins devices `a` and `b` (two of this
   * backend's, a != b): true with out->fabric ("nvlink", "xgmi", "xelink"), out->bandwidth_mbps and
   * out->fabric_links set (0 where not known), the rest of *out untouched.  Asked by hdal_device_link() where
   * hwloc's matrices know no fabric between them (docs/reference.md, "Links").  NULL: none known. */
  bool (*fabric)(void *state, void *a, void *b, hdal_link *out);
} hdal_backend_buffer_ops;

/** Services the core offers a backend during discovery and after.  Owned by the core. */
typedef struct {
  /** Adds a device; NULL when out of memory or @c info->kind is NULL.  The device belongs to the core. */
  hdal_device *(*add_device)(hdal_backend_discovery *disc, const hdal_backend_device_info *info);
  /** Adds an attribute (::hdal_backend_attribute) to a device being discovered; a key given twice keeps
   * its last value.  False when out of memory, or when the attribute has no key, an unknown type or a
   * NULL string. */
  bool (*add_attribute)(hdal_device *dev, const hdal_backend_attribute *attribute);
  /** Discovery diagnostics; printed to stderr only under @c HDAL_DEBUG. */
  void (*debug)(hdal_backend_discovery *disc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
  /** NUMA node (hwloc logical index) nearest to a PCI device "dddd:bb:dd.f"; -1 unknown. */
  int (*numa_node_of_pci)(hdal_backend_discovery *disc, const char *pci_bus_id);
  /** A new error object, owned by whoever receives it; the static out-of-memory error when out of memory. */
  hdal_error *(*error_new)(hdal_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
  /** The static out-of-memory error (::HDAL_RESOURCE_EXHAUSTED); destroying it does nothing. */
  hdal_error *(*error_oom)(void);
  /** Allocates @p nbytes (> 0) on @p dev (a device the module added) through the device's memory pool,
   * counted in hdal_device_memory_stats(); give it back with memory_release() and the same size. */
  hdal_error *(*memory_allocate)(hdal_device *dev, size_t nbytes, void **handle);
  /** Gives a block of memory_allocate() back to the pool: it is reused once the work queued on @p dev is done. */
  void (*memory_release)(hdal_device *dev, void *handle, size_t nbytes);
  /** The operations of host memory that the CPU backend uses (allocate, release, read, write, copy,
   * host_pointer; `state` and `dev` unused), for a module to reuse for pinned or managed memory. */
  const hdal_backend_buffer_ops *host_buffer_ops;
  /** Restricts a hwloc topology (a @c hwloc_topology_t, between @c hwloc_topology_init and
   * @c hwloc_topology_load) as hdal's own are: hwloc components that would start GPU or OpenCL
   * runtimes are kept from running, and nothing hdal reports is lost.  For a backend that loads a
   * topology of its own, as the CPU backend does. */
  void (*topology_restrict)(void *topology);
  /** Whether the user named this backend (in @c HDAL_BACKENDS or hdal_context_options::backends) rather
   * than it running by default: a backend whose default is to leave out what costs much and serves little
   * (the Vulkan backend's CPU drivers) includes it when asked for by name. */
  bool (*named)(hdal_backend_discovery *disc);
} hdal_backend_host;

/** How the core reads a visibility variable (hdal_backend_visibility::flags). */
enum {
  /** The value is in CUDA's grammar (ordinals, "GPU-" and "MIG-" UUIDs): set empty, "-1" or any other
   * word first, it leaves the runtime no device. */
  HDAL_BACKEND_VISIBILITY_ORDINALS = 1u << 0,
  /** Set empty, it is as unset: every device shown (ZE_AFFINITY_MASK). */
  HDAL_BACKEND_VISIBILITY_EMPTY_IS_ALL = 1u << 1,
  /** Read only where the variable before it in the list is unset (HIP reads CUDA_VISIBLE_DEVICES only
   * where HIP_VISIBLE_DEVICES is unset). */
  HDAL_BACKEND_VISIBILITY_FALLBACK = 1u << 2,
};

/** A variable that narrows the devices a runtime shows (CUDA_VISIBLE_DEVICES).  Where one is set, the
 * core hides the other backends' faces of that runtime's vendor's GPUs the runtime does not show
 * (docs/reference.md, "The scheduler's GPUs on every backend"). */
typedef struct {
  const char *name; /**< The variable; NULL ends a list. */
  unsigned flags;   /**< HDAL_BACKEND_VISIBILITY_*. */
} hdal_backend_visibility;

/** A backend: what a module exports (::HDAL_BACKEND_DEFINE). */
typedef struct hdal_backend {
  uint32_t abi_version;             /**< ::HDAL_BACKEND_ABI_VERSION. */
  const char *name;                 /**< The name, such as "opencl": the @c HDAL_BACKENDS name and module file hdal_<name>.so. */
  const char *platform;             /**< hdal_device_platform() of its devices; NULL: the name. */
  hdal_runtime_class runtime_class; /**< The class of its devices, unless a device info says otherwise. */
  uint64_t dl_device_types; /**< Bit (1 << DLDeviceType) for each type whose imports this backend owns (::HDAL_DL_TYPE_BIT). */
  /** Finds devices and adds them through host->add_device.  *state is the
   * backend's own, given to every operation and to finalize().  A non-NULL
   * error makes the backend "unavailable: <message>"; devices added before
   * it are dropped. */
  hdal_error *(*discover)(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state);
  /** Releases the state when the context is gone (after its last buffer). */
  void (*finalize)(void *state);
  const hdal_backend_buffer_ops *buffer_ops; /**< Buffer operations; NULL: its devices are IFRT-native. */
  /** The PCI vendor whose devices alone its runtime drives (0x10de for CUDA), for devices that have no
   * @c vendor_id attribute; 0: devices of several vendors (OpenCL, Vulkan), or none. */
  uint32_t pci_vendor;
  /** The variables that narrow the devices its runtime shows, in the order the runtime applies them,
   * ended by a NULL name; NULL: none.  Read even when the backend is not enabled: a first-party module
   * is then opened, not run, for them. */
  const hdal_backend_visibility *visibility;
  /** The kinds of ::hdal_native_handle its devices have, ended by 0; NULL: none.
   * hdal_device_native_handle() refuses any other kind without asking the backend. */
  const hdal_native_handle *native_handles;
} hdal_backend;

/** The bit of DLPack device type @p t in hdal_backend::dl_device_types. */
#define HDAL_DL_TYPE_BIT(t) (UINT64_C(1) << (t))

/** Defines the exported descriptor of module @p NAME: <tt>HDAL_BACKEND_DEFINE(mine) = {...};</tt> */
#define HDAL_BACKEND_DEFINE(NAME) \
  __attribute__((visibility("default"))) extern const hdal_backend hdal_##NAME##_backend; \
  const hdal_backend hdal_##NAME##_backend

/** @} */

#ifdef __cplusplus
}
#endif
#endif /* HDAL_BACKEND_H */
