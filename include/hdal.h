/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — Heterogeneous Device Abstraction Layer: the public API.
 *
 * Every fallible call returns an hdal_error*: NULL on success, else an error the
 * caller frees with hdal_error_destroy() (the PJRT C API convention).
 * Option structs start with struct_size: set it to sizeof the struct you were
 * compiled with (the HDAL_*_OPTIONS_INIT initialisers do), so that later
 * versions can add fields.
 */
#ifndef HDAL_H
#define HDAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hdal/dlpack.h>
#include <hdal/version.h>

/**
 * @mainpage hdal — Heterogeneous Device Abstraction Layer
 *
 * hdal enumerates the compute devices of a machine across a CPU backend (the
 * hwloc topology) and the CUDA, OpenCL, ROCm, Level Zero and Vulkan backends
 * (loadable modules), tags
 * each device by runtime class and process addressability, and imports and
 * exports tensors through DLPack.  One header, @c <hdal.h>, declares the API;
 * @c <hdal/mpi.h> adds the MPI layer (libhdal-mpi) and @c <hdal/backend.h> the
 * interface of backend modules.
 *
 * The reference is grouped by concern (Modules):
 * @ref hdal_errors, @ref hdal_version, @ref hdal_contexts, @ref hdal_devices,
 * @ref hdal_memory, @ref hdal_streams, @ref hdal_native, @ref hdal_capsules,
 * @ref hdal_buffers, @ref hdal_dlpack_io, @ref hdal_processes, @ref hdal_mpi,
 * @ref hdal_dlpack and @ref hdal_backends.
 * Every function also has a manual page of its own: <tt>man 3 hdal_context_create</tt>.
 *
 * Conventions that hold throughout:
 * - **Errors.** Every fallible call returns an ::hdal_error pointer: NULL on
 *   success, else an error that the caller owns and frees with
 *   hdal_error_destroy().  On failure, output arguments are set to NULL and
 *   nothing else changed.  Out of memory is ::HDAL_RESOURCE_EXHAUSTED, never a
 *   crash.  Passing NULL where an object is required to an accessor that cannot
 *   return an error (hdal_device_id() and the like) is undefined.
 * - **Options.** Options structs start with @c struct_size: initialise them with
 *   their @c HDAL_*_OPTIONS_INIT macro (::HDAL_CONTEXT_OPTIONS_INIT,
 *   ::HDAL_IMPORT_OPTIONS_INIT, ::HDAL_EXPORT_OPTIONS_INIT), then set the fields
 *   you need.  A NULL options pointer means the defaults.
 * - **Ownership.** Strings and objects returned by accessors belong to the
 *   object they came from and live as long as it does; do not free them.
 * - **Threads.** A context and its devices may be used from many threads at
 *   once; buffers are reference counted atomically.  Exceptions are noted.
 *
 * Design notes, the DLPack rules and the backend module interface are in the
 * project's docs/ (installed with libhdal-dev): design.md, dlpack.md,
 * backend-abi.md, mpi.md.
 *
 * @code
 * #include <hdal.h>
 * #include <stdio.h>
 *
 * int main(void) {
 *   hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
 *   opts.backends = "cpu,opencl";
 *   hdal_context *ctx;
 *   hdal_error *err = hdal_context_create(&opts, &ctx);
 *   if (err) {
 *     fprintf(stderr, "%s\n", hdal_error_message(err));
 *     hdal_error_destroy(err);
 *     return 1;
 *   }
 *   for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
 *     hdal_device *d = hdal_context_device(ctx, i);
 *     printf("%d %s %s\n", hdal_device_id(d), hdal_device_platform(d), hdal_device_kind(d));
 *   }
 *   hdal_context_destroy(ctx);
 *   return 0;
 * }
 * @endcode
 */

#ifdef __cplusplus
extern "C" {
#endif

/** @cond HDAL_INTERNAL */
#if defined(HDAL_BUILDING) && defined(HDAL_HAVE_VISIBILITY)
#define HDAL_API __attribute__((visibility("default")))
#else
#define HDAL_API
#endif
/** @endcond */

/* ---- Errors -------------------------------------------------------------- */

/**
 * @defgroup hdal_errors Errors
 * @brief Error objects returned by every fallible call, their codes and messages.
 *
 * A function that can fail returns an ::hdal_error pointer: NULL on success,
 * else an error object that the caller owns and must free with
 * hdal_error_destroy().  The object holds a code (::hdal_code, numbered as
 * absl::StatusCode) and a message without a code prefix.
 *
 * @code
 * hdal_error *err = hdal_context_create(NULL, &ctx);
 * if (err) {
 *   printf("%s: ", hdal_code_name(hdal_error_code(err)));
 *   puts(hdal_error_message(err));
 *   hdal_error_destroy(err);
 * }
 * @endcode
 *
 * Thread safety: error objects are not shared by hdal; each belongs to the
 * caller that received it.  All functions of this group are safe to call from
 * any thread.
 * @{
 */

/** Error codes, numbered as absl::StatusCode (and the PJRT C API). */
typedef enum {
  HDAL_OK = 0,                  /**< Not an error: what hdal_error_code() says of NULL. */
  HDAL_CANCELLED = 1,           /**< The operation was cancelled. */
  HDAL_UNKNOWN = 2,             /**< An error of unknown cause. */
  HDAL_INVALID_ARGUMENT = 3,    /**< A bad argument: NULL output pointer, malformed input, bad option. */
  HDAL_DEADLINE_EXCEEDED = 4,   /**< A deadline passed. */
  HDAL_NOT_FOUND = 5,           /**< Something asked for does not exist. */
  HDAL_ALREADY_EXISTS = 6,      /**< Something to add is already there (a process added twice). */
  HDAL_PERMISSION_DENIED = 7,   /**< Not permitted. */
  HDAL_RESOURCE_EXHAUSTED = 8,  /**< Out of memory, host or device. */
  HDAL_FAILED_PRECONDITION = 9, /**< The system is not in a state for the operation (a device that is not PjRt-compatible or not addressable). */
  HDAL_ABORTED = 10,            /**< The operation was aborted. */
  HDAL_OUT_OF_RANGE = 11,       /**< A value past a valid range. */
  HDAL_UNIMPLEMENTED = 12,      /**< Not supported: a DLPack data type or layout hdal does not take, a buffer operation a backend lacks. */
  HDAL_INTERNAL = 13,           /**< A backend's runtime or MPI failed. */
  HDAL_UNAVAILABLE = 14,        /**< A runtime or driver is not available. */
  HDAL_DATA_LOSS = 15,          /**< Unrecoverable data loss. */
  HDAL_UNAUTHENTICATED = 16,    /**< Not authenticated. */
} hdal_code;

/** An error: a code and a message.  Opaque; owned by whoever received it. */
typedef struct hdal_error hdal_error;

/**
 * The code of an error.
 * @param err an error, or NULL.
 * @return the error's code; ::HDAL_OK when @p err is NULL.
 */
HDAL_API hdal_code hdal_error_code(const hdal_error *err);

/**
 * The message of an error, without a code prefix.
 * @param err an error, or NULL.
 * @return the message, owned by @p err and valid until hdal_error_destroy();
 *         "" when @p err is NULL.
 */
HDAL_API const char *hdal_error_message(const hdal_error *err);

/**
 * Frees an error.
 * @param err an error received from hdal; NULL does nothing.  The error must
 *        not be used afterwards.
 */
HDAL_API void hdal_error_destroy(hdal_error *err);

/**
 * Makes an error, for layers built on hdal (libhdal-mpi, language bindings)
 * that hand their own failures to callers in hdal's form.
 * @param code the code; ::HDAL_OK is not an error and gives ::HDAL_UNKNOWN.
 * @param message the message, copied; NULL gives "".
 * @return an error the caller owns (free it with hdal_error_destroy()); when
 *         memory runs out, the static ::HDAL_RESOURCE_EXHAUSTED error
 *         "out of memory" (destroying it does nothing).  Thread safe.
 */
HDAL_API hdal_error *hdal_error_create(hdal_code code, const char *message);

/**
 * The name of a code, as absl spells it without its prefix.
 * @param code a code.
 * @return a static string: "OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"...;
 *         "UNKNOWN" for a value that is no code.
 */
HDAL_API const char *hdal_code_name(hdal_code code);

/**
 * What an error is about where its code alone does not say enough to act on:
 * a caller that maps errors onto another API's (the Python package onto the
 * array API's exceptions) reads this, never the message.
 */
typedef enum {
  HDAL_CAUSE_NONE = 0,         /**< Nothing beyond the code. */
  HDAL_CAUSE_COPY_REFUSED = 1, /**< The operation needs a copy and ::HDAL_COPY_NEVER forbids one
                                    (an import that cannot be a view, an export to another device). */
} hdal_cause;

/**
 * The cause of an error.
 * @param err an error, or NULL.
 * @return its ::hdal_cause; ::HDAL_CAUSE_NONE when @p err is NULL, for errors
 *         made with hdal_error_create(), and for out of memory.
 */
HDAL_API hdal_cause hdal_error_cause(const hdal_error *err);

/** @} */

/* ---- Version ------------------------------------------------------------- */

/**
 * @addtogroup hdal_version
 * @{
 */

/**
 * The version of the library loaded at run time.
 * @return a static string, "major.minor.patch" (e.g. "0.2.0"); the headers'
 *         version is ::HDAL_VERSION_STRING.  Thread safe.
 */
HDAL_API const char *hdal_version_string(void);

/** @} */

/* ---- Context, backends, devices ----------------------------------------- */

/**
 * @defgroup hdal_contexts Contexts and backends
 * @brief A context: the backends hdal ran and the devices they found.
 *
 * hdal_context_create() selects the backends (@c HDAL_BACKENDS or
 * hdal_context_options::backends), loads the module ones, runs their discovery
 * concurrently and builds one device table, ordered by process index, then
 * backend (hdal's own in their documented order, docs/reference.md; other modules by name), then local
 * hardware id.
 * A backend that is missing or fails does not fail the context: its status says
 * why (hdal_context_backend_status()).
 *
 * Thread safety: once created, a context may be used from many threads at
 * once; its devices are immutable, except that hdal_context_add_process()
 * renumbers them (see there).  hdal_context_destroy() must not race with other
 * calls on the context.
 * @{
 */

/** A context: backends, devices, and the buffers made on them.  Opaque. */
typedef struct hdal_context hdal_context;
/** A device of a context.  Opaque; owned by its context. */
typedef struct hdal_device hdal_device;

/** Whether hdal serves buffers on a device in this process. */
typedef enum {
  HDAL_RUNTIME_PJRT = 1,        /**< PjRt-compatible: a buffer runtime serves the device in this process
                                     (allocation, transfers, DLPack import and export). */
  HDAL_RUNTIME_IFRT_NATIVE = 2, /**< IFRT-native: listed, but no PjRt-style buffer runtime serves it;
                                     hdal_device_runtime_class_reason() says why. */
} hdal_runtime_class;

/**
 * Options of hdal_context_create().  Initialise with ::HDAL_CONTEXT_OPTIONS_INIT.
 */
typedef struct {
  size_t struct_size;       /**< sizeof(hdal_context_options) as the caller was compiled. */
  const char *backends;     /**< The backends to run, as @c HDAL_BACKENDS: "cpu,opencl" keeps those, "-cuda" drops one;
                                 NULL: the variable, else all.  Names are case-sensitive; one that is neither hdal's
                                 nor a module on the path is an error (docs/reference.md, "Backend names"). */
  const char *backend_path; /**< Colon-separated directories searched for hdal_<name>.so modules instead of the
                                 install directory (before it when the list ends with ':'), as
                                 @c HDAL_BACKEND_PATH; NULL: the variable. */
  int process_index;        /**< This process's index among cooperating processes (set by libhdal-mpi from the
                                 rank); must be in [0, process_count) when process_count is not 0. */
  int process_count;        /**< The number of cooperating processes; 0: a single process, index 0. */
  const char *memory_pool_limit; /**< Each device's memory limit, as @c HDAL_MEMORY_POOL_LIMIT: bytes ("1073741824")
                                      or a percentage of the device's memory ("80%"); NULL: the variable, else none. */
  const char *device_selector;   /**< The devices to keep, as @c HDAL_DEVICE_SELECTOR ("cuda:0,1;!opencl:cpu";
                                      docs/reference.md, "Choosing devices"); NULL: the variable, else all.
                                      With an accept term, backends no term names keep no device: the host's
                                      too, so "cpu:*;opencl:0" keeps the host and OpenCL device 0. */
  const char *gpu_binding;       /**< Which of its host's GPUs this process keeps, as @c HDAL_GPU_BINDING:
                                      "none" (every GPU) or "local-rank" (local rank r of L keeps the GPUs that
                                      fall to it: blocks in PCI bus id order, or GPU r mod G when there are
                                      fewer GPUs than ranks; every face of each GPU; docs/reference.md, "GPUs
                                      per local rank"); NULL: the variable, else "none". */
  int local_rank;                /**< This process's rank among the processes of its host, for @c gpu_binding
                                      (set by libhdal-mpi from MPI_COMM_TYPE_SHARED); must be in
                                      [0, local_size) when local_size is not 0. */
  int local_size;                /**< The number of processes on its host; 0: the launcher says both
                                      (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID), else 0 of 1. */
  const char *hide_faces;        /**< As @c HDAL_HIDE_FACES: "1" hides the other backends' faces of the GPUs that
                                      CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or
                                      ZE_AFFINITY_MASK leave out of their runtime, "0" keeps every face
                                      (docs/reference.md, "The scheduler's GPUs on every backend"); NULL: the
                                      variable, else "1". */
} hdal_context_options;

/**
 * Initialiser of ::hdal_context_options: @c struct_size set, every other field
 * at its default (NULL, 0), as NULL options.
 * @code
 * hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
 * opts.backends = "cpu,opencl";
 * @endcode
 */
#define HDAL_CONTEXT_OPTIONS_INIT {sizeof(hdal_context_options), NULL, NULL, 0, 0, NULL, NULL, NULL, 0, 0, NULL}

/**
 * Creates a context: selects and loads the backends, discovers their devices
 * concurrently and builds the device table.
 *
 * A backend that is absent, fails to load or fails discovery is listed with a
 * status that says why ("unavailable: ...") and the context is made with the
 * others; it is not an error of this function.
 *
 * @param opts options, or NULL for the defaults (see ::hdal_context_options).
 * @param[out] out the new context, owned by the caller (hdal_context_destroy());
 *        NULL on failure.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: @p out is NULL; @p opts->struct_size is too small
 *   to hold @c backends; the backend list is malformed (a character other than
 *   letters, digits, '_', '-', ',' and space, or a '-' without a name); the
 *   list names, to keep or to leave out, a backend that is not known: neither
 *   one of hdal's (hdal_context_backend_name() lists them first) nor a module
 *   found on the module path.  Names are case-sensitive; the message lists the
 *   known names and suggests one that differs only in case, '-' or '_'
 *   ("HDAL_BACKENDS: unknown backend 'openCL' (did you mean 'opencl'?);
 *   known: " and the names, comma-separated);
 *   @c process_count is not 0 and @c process_index is not in
 *   [0, process_count), or @c process_count is negative.
 * - ::HDAL_INVALID_ARGUMENT: the device selector (@c device_selector, else
 *   @c HDAL_DEVICE_SELECTOR) is malformed, names a backend that is not known
 *   (in the same words as the backend list's, after the term),
 *   or has a @c uuid= that matches two devices of one backend; the message
 *   names the option or variable, the term and what is wrong
 *   ("HDAL_DEVICE_SELECTOR: term 1 ("cuda", at character 1): no ':' (a term
 *   reads BACKEND:DEVICES)").
 * - ::HDAL_INVALID_ARGUMENT: the memory pool limit (@c memory_pool_limit, else
 *   @c HDAL_MEMORY_POOL_LIMIT) is neither a number of bytes nor a percentage
 *   from 1% to 100%; the message names the option or variable and the value.
 * - ::HDAL_INVALID_ARGUMENT: the GPU binding (@c gpu_binding, else
 *   @c HDAL_GPU_BINDING) is neither "none" nor "local-rank"
 *   ("HDAL_GPU_BINDING: unknown GPU binding 'rr'; known: none, local-rank");
 *   @c local_size is not 0 and @c local_rank is not in [0, local_size), or
 *   @c local_size is negative; @c hide_faces (else @c HDAL_HIDE_FACES) is
 *   neither "0" nor "1".
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory.
 *
 * Thread safety: safe to call from several threads at once.  hdal leaves the
 * environment as it found it (see README.md, "Environment").
 */
HDAL_API hdal_error *hdal_context_create(const hdal_context_options *opts, hdal_context **out);

/**
 * Destroys a context.  Its devices go with it; buffers still alive keep what
 * they need of it until their last release.
 * @param ctx a context; NULL does nothing.
 */
HDAL_API void hdal_context_destroy(hdal_context *ctx);

/**
 * This process's index among cooperating processes.
 * @param ctx a context.
 * @return 0 without a multi-process layer; the MPI rank under libhdal-mpi.
 */
HDAL_API int hdal_context_process_index(const hdal_context *ctx);

/**
 * The number of cooperating processes.
 * @param ctx a context.
 * @return 1 without a multi-process layer; grows as hdal_context_add_process()
 *         adds higher indices.
 */
HDAL_API int hdal_context_process_count(const hdal_context *ctx);

/**
 * The number of devices in the context, of every process.
 * @param ctx a context.
 * @return the device count; device ids are 0 to count - 1.
 */
HDAL_API size_t hdal_context_device_count(const hdal_context *ctx);

/**
 * A device of the context.
 * @param ctx a context.
 * @param index an index in [0, hdal_context_device_count()).
 * @return the device whose id is @p index, owned by the context; NULL when
 *         @p index is out of range.
 */
HDAL_API hdal_device *hdal_context_device(const hdal_context *ctx, size_t index);

/**
 * The number of backends the context lists: every backend hdal knows or found
 * as a module, selected or not.
 * @param ctx a context.
 * @return the backend count.
 */
HDAL_API size_t hdal_context_backend_count(const hdal_context *ctx);

/**
 * The name of a backend ("cpu", "cuda", "opencl", "rocm", "levelzero", "vulkan", or a module's name).
 * @param ctx a context.
 * @param i an index in [0, hdal_context_backend_count()).
 * @return the name, owned by the context; NULL when @p i is out of range.
 */
HDAL_API const char *hdal_context_backend_name(const hdal_context *ctx, size_t i);

/**
 * The status of a backend: "ok: 2 devices", "disabled",
 * "unavailable: libcuda.so.1: cannot open shared object file: ...", and the like.
 * @param ctx a context.
 * @param i an index in [0, hdal_context_backend_count()).
 * @return the status, owned by the context; NULL when @p i is out of range.
 */
HDAL_API const char *hdal_context_backend_status(const hdal_context *ctx, size_t i);

/**
 * What became of a backend (::hdal_backend_state).  Later versions of hdal may
 * add states; a reader that meets one it does not know reads it as
 * ::HDAL_BACKEND_UNAVAILABLE.
 */
typedef enum {
  HDAL_BACKEND_OK = 1,          /**< Discovered: its devices are in the context (none is not an error). */
  HDAL_BACKEND_DISABLED = 2,    /**< Not selected (@c HDAL_BACKENDS, hdal_context_options::backends). */
  HDAL_BACKEND_UNAVAILABLE = 3, /**< Selected, but absent: no module, a module that cannot be loaded, or a
                                     discovery that found nothing to run (no driver, no device: its error was
                                     ::HDAL_UNAVAILABLE or ::HDAL_NOT_FOUND); the reason says why. */
  HDAL_BACKEND_FAILED = 4,      /**< Selected and loaded, but its discovery failed otherwise (an error of its
                                     runtime, a precondition, out of memory); the reason says why.  Its text
                                     status reads "unavailable: <reason>" all the same. */
} hdal_backend_state_kind;

/**
 * A backend's status as data (hdal_context_backend_state()): what
 * hdal_context_backend_status() says in words, which are for people and may
 * change.  Set @c struct_size before the call.
 */
typedef struct {
  size_t struct_size;            /**< sizeof(hdal_backend_state) as the caller was compiled; fields past it are not written. */
  hdal_backend_state_kind state; /**< What became of the backend. */
  size_t device_count;           /**< The devices it added to the context; 0 unless ::HDAL_BACKEND_OK. */
  size_t refused_count;          /**< The devices it gave that broke a rule and were dropped (docs/backend-abi.md). */
  const char *reason;            /**< ::HDAL_BACKEND_UNAVAILABLE: why; ::HDAL_BACKEND_OK with refused devices: why
                                      the first was refused; NULL otherwise.  Owned by the context. */
  size_t unselected_count;       /**< The devices it found that the device selector left out (not in @c device_count). */
  size_t hidden_count;           /**< The devices it found that are faces of GPUs a narrowed runtime does not show
                                      (CUDA_VISIBLE_DEVICES and the like), hidden (not in @c device_count). */
  size_t owned_elsewhere_count;  /**< The devices it found that the GPU binding left to other local ranks
                                      (not in @c device_count). */
} hdal_backend_state;

/**
 * The status of a backend as data, for programs: the text of
 * hdal_context_backend_status() is made from it.
 * @param ctx a context.
 * @param i an index in [0, hdal_context_backend_count()).
 * @param[out] out filled up to @c out->struct_size.
 * @return true; false, writing nothing, when @p i is out of range, @p out is
 *         NULL or @c out->struct_size does not hold @c state.
 *
 * Thread safety: a context's backend states never change; any thread may read them.
 */
HDAL_API bool hdal_context_backend_state(const hdal_context *ctx, size_t i, hdal_backend_state *out);

/**
 * The word hdal prints for a backend state: "ok", "disabled", "unavailable" or
 * "failed", as hdal-ls and the Python package show it.
 * @param state a state.
 * @return the word, static; NULL for a value that is no state of this hdal.
 */
HDAL_API const char *hdal_backend_state_name(hdal_backend_state_kind state);

/** @} */

/**
 * @defgroup hdal_devices Devices
 * @brief What hdal knows of a device: identity, runtime class, memory, placement, attributes.
 *
 * Devices are owned by their context and live as long as it does.  Every
 * accessor takes a device of a live context (not NULL), does not fail, and
 * returns strings owned by the device.  Thread safety: devices are immutable,
 * so every accessor is safe from any thread, except hdal_device_id() while
 * hdal_context_add_process() renumbers the table.
 * @{
 */

/**
 * The device's global id: unique in the context, dense from 0.
 * @param d a device.
 * @return its id; hdal_context_device(ctx, id) == @p d.
 */
HDAL_API int hdal_device_id(const hdal_device *d);

/**
 * The device's platform.
 * @param d a device.
 * @return the platform: "cpu", "cuda", "opencl", "rocm", "levelzero", "vulkan", or a module's own platform name.
 */
HDAL_API const char *hdal_device_platform(const hdal_device *d);

/**
 * The PCI vendor whose devices alone the runtime of the device's backend drives, as its backend module
 * says (NVIDIA's 0x10de for CUDA, AMD's 0x1002 for ROCm, Intel's 0x8086 for Level Zero): where several
 * backends show one GPU, that runtime's device is the vendor's own view of it.
 * @param d a device.
 * @return the vendor id; 0 for a runtime of several vendors' devices (OpenCL and Vulkan, whose devices say
 *         theirs in the @c vendor_id attribute) and for the CPU backend.  For another process's device, what
 *         this process's module of that backend says (0 where this process has none).
 */
HDAL_API unsigned hdal_device_runtime_vendor(const hdal_device *d);

/**
 * The device's model.
 * @param d a device.
 * @return e.g. "NVIDIA H200", "pthread-AMD EPYC ...".
 */
HDAL_API const char *hdal_device_kind(const hdal_device *d);

/**
 * The device's ordinal inside its backend on its own process.
 * @param d a device.
 * @return the local hardware id (a CUDA ordinal, a flat OpenCL index, a NUMA node's rank).
 */
HDAL_API int hdal_device_local_hardware_id(const hdal_device *d);

/**
 * The index of the process the device belongs to.
 * @param d a device.
 * @return the process index; the context's own for its local devices.
 */
HDAL_API int hdal_device_process_index(const hdal_device *d);

/**
 * Whether the device belongs to the calling process.
 * @param d a device.
 * @return true when its process index is the context's; devices learnt from
 *         other processes are not addressable.
 */
HDAL_API bool hdal_device_is_addressable(const hdal_device *d);

/**
 * The device's runtime class.
 * @param d a device.
 * @return ::HDAL_RUNTIME_PJRT or ::HDAL_RUNTIME_IFRT_NATIVE.
 */
HDAL_API hdal_runtime_class hdal_device_runtime_class(const hdal_device *d);

/**
 * Why the device is IFRT-native.
 * @param d a device.
 * @return NULL for a PjRt-compatible device; else the reason, e.g.
 *         "backend 'x' provides no buffer operations".
 */
HDAL_API const char *hdal_device_runtime_class_reason(const hdal_device *d);

/**
 * The word hdal prints for a runtime class: "pjrt" or "ifrt-native", as
 * hdal-ls and the Python package show it.
 * @param c a runtime class.
 * @return the word, static; NULL for a value that is no class.
 */
HDAL_API const char *hdal_runtime_class_name(hdal_runtime_class c);

/**
 * The device as DLPack names it.
 * @param d a device.
 * @return (kDLCPU, 0) for CPU devices, (kDLCUDA, ordinal), (kDLOpenCL, flat index), or a module's own.
 */
HDAL_API DLDevice hdal_device_dlpack_device(const hdal_device *d);

/**
 * The name of a DLPack device type, as dlpack.h spells it.
 * @param type a DLDeviceType value.
 * @return the name, such as "kDLCPU", "kDLTrn" (18, DLPack 1.2) or "kDLTPU", "kDLTPUHost", "kDLAscend" (19-21,
 *         reserved after DLPack 1.3); NULL for a value DLPack does not define.
 */
HDAL_API const char *hdal_dlpack_device_type_name(DLDeviceType type);

/**
 * The device's memory.
 * @param d a device.
 * @return its size in bytes (a NUMA node's memory for a CPU device); 0 when unknown.
 */
HDAL_API uint64_t hdal_device_memory_bytes(const hdal_device *d);

/**
 * The NUMA node nearest to the device.
 * @param d a device.
 * @return the node's hwloc logical index; -1 when unknown.
 */
HDAL_API int hdal_device_numa_node(const hdal_device *d);

/**
 * Where a device sits in the machine (hdal_device_locality()): the host CPUs
 * and the NUMA nodes nearest it, and the PCIe root above a device with a PCI
 * bus id.  The strings and the array are the device's,
 * valid while its context lives.
 */
typedef struct {
  const char *cpuset;         /**< The nearest CPUs as hwloc_bitmap_snprintf() writes a bitmap ("0x0000ffff"; hwloc_bitmap_sscanf() reads it back); the ::HDAL_ATTRIBUTE_CPUSET attribute names the same CPUs in hwloc's list syntax ("0-15"). */
  const unsigned *numa_nodes; /**< The OS indexes of the nearest NUMA nodes, ascending; NULL when there are none. */
  size_t numa_node_count;     /**< How many @c numa_nodes holds. */
  const char *pcie_root;      /**< The PCIe root complex above a device with a PCI bus id, as Kubernetes' DRA attribute resource.kubernetes.io/pcieRoot and sysfs (/sys/devices/pci0000:00) name it: "pci<domain>:<bus>" ("pci0000:00"), from the host bridge above its PCI object in hwloc's topology; NULL when not known (a CPU device, a device without a PCI object, no host bridge above it). */
} hdal_locality;

/**
 * The locality of a device: the CPUs and NUMA nodes nearest it
 * (docs/reference.md, "Locality").  A CPU device's is its own NUMA node (its
 * @c cpuset and @c numa_os_index attributes); a device with a PCI bus id (a
 * GPU) has that of hwloc's PCI object of its bus id, the cpuset and nodeset of
 * its first non-I/O ancestor, in the topology with I/O objects the context
 * loads on first need (@c HWLOC_XMLFILE's when set); another device with a
 * cpuset attribute (an OpenCL device on the host CPUs) has that cpuset and
 * the NUMA nodes of the CPU devices it meets.  Worked out on the first call
 * for a device and kept, the answer or why there is none; safe from any thread.
 * What attributes place (a CPU device, a device with a cpuset) is placed for
 * a device of any process; a device with a PCI bus id of a process on this
 * host, by this host's topology.
 * @param d a device.
 * @param[out] out the locality; zeroed on failure.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d or @p out is NULL ("hdal_device_locality:
 *   device is NULL", "... out is NULL").
 * - ::HDAL_FAILED_PRECONDITION: @p d has a PCI bus id and is of a process on
 *   another host, whose topology this process does not read.
 * - ::HDAL_NOT_FOUND: nothing places the device, named with why
 *   ("hdal_device_locality: device 1 (cuda, ...): hwloc's topology has no
 *   PCI object with bus id 0000:3b:00.0"): a topology without PCI objects (a
 *   synthetic one), a bus id it does not know, a device with neither a PCI
 *   bus id nor a cpuset.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory.
 */
HDAL_API hdal_error *hdal_device_locality(const hdal_device *d, hdal_locality *out);

/** Where the topology that places devices comes from (hdal_context_topology_source()). */
typedef enum {
  HDAL_TOPOLOGY_THIS_SYSTEM = 0, /**< This machine, as hwloc reads it. */
  HDAL_TOPOLOGY_XML_FILE = 1,    /**< An hwloc XML file (@c HWLOC_XMLFILE), maybe of another machine. */
  HDAL_TOPOLOGY_SYNTHETIC = 2,   /**< A synthetic description (@c HWLOC_SYNTHETIC): no PCI objects. */
  HDAL_TOPOLOGY_OTHER = 3,       /**< Not this system otherwise (@c HWLOC_FSROOT, @c HWLOC_THISSYSTEM=0). */
  HDAL_TOPOLOGY_UNAVAILABLE = 4, /**< hwloc could not load one. */
} hdal_topology_source;

/**
 * Where the topology with I/O objects that hdal_device_locality() and
 * hdal_device_link() read comes from (docs/reference.md, "Links"): loaded on
 * the first call of any of the three, once per context.
 * @param ctx a context.
 * @param[out] detail when not NULL: the XML file or the synthetic description, valid while @p ctx lives;
 *        NULL for this system.
 * @return the source; ::HDAL_TOPOLOGY_UNAVAILABLE when @p ctx is NULL or hwloc failed.
 */
HDAL_API hdal_topology_source hdal_context_topology_source(const hdal_context *ctx, const char **detail);

/**
 * The name of a topology source as hdal-ls --json writes it ("system", "xml", "synthetic", "other",
 * "unavailable").
 * @param source a source.
 * @return the name; NULL for a value that is no ::hdal_topology_source.
 */
HDAL_API const char *hdal_topology_source_name(hdal_topology_source source);

/** How hdal_device_bind() binds (flags, or-ed). */
enum {
  HDAL_BIND_THREAD = 0,           /**< The calling thread (the default). */
  HDAL_BIND_PROCESS = 1u << 0,    /**< The whole process, every thread. */
  HDAL_BIND_NO_MEMORY = 1u << 1,  /**< CPUs only: leave the memory policy as it is. */
};

/**
 * Binds the calling thread (or process) to the CPUs nearest a device, and its
 * memory policy to the device's NUMA nodes (docs/reference.md, "Binding"):
 * hdal_device_locality()'s cpuset, within what the process may use (the
 * cgroup's and the affinity's allowed CPUs).
 * @param d a device of this process's host.
 * @param flags ::HDAL_BIND_THREAD or ::HDAL_BIND_PROCESS, optionally with
 *        ::HDAL_BIND_NO_MEMORY.
 * @return NULL, or an error the caller owns, nothing changed:
 * - ::HDAL_INVALID_ARGUMENT: @p d NULL, or unknown @p flags.
 * - ::HDAL_NOT_FOUND: as hdal_device_locality().
 * - ::HDAL_FAILED_PRECONDITION: a device of another host (as hdal_device_locality()), or hwloc's topology is
 *   not this machine (@c HWLOC_XMLFILE, @c HWLOC_SYNTHETIC, @c HWLOC_FSROOT: the message names the variable).
 * - ::HDAL_PERMISSION_DENIED: none of the device's CPUs is allowed to the process (the message names both
 *   sets).
 * - ::HDAL_UNAVAILABLE: hwloc could not load this machine's topology, or the operating system refused the
 *   binding.
 */
HDAL_API hdal_error *hdal_device_bind(const hdal_device *d, unsigned flags);

/**
 * How two devices are joined (hdal_device_link()), from the nearest: the
 * kinds of @c nvidia-smi @c topo @c -m, for every vendor.
 */
typedef enum {
  HDAL_LINK_SAME = 0,   /**< Two faces of one piece of hardware (hdal_device_same_hardware()). */
  HDAL_LINK_FABRIC = 1, /**< A GPU fabric: NVLink (or NVSwitch), XGMI, Xe Link. */
  HDAL_LINK_PIX = 2,    /**< At most one PCIe switch (PCIe bridges, no host bridge). */
  HDAL_LINK_PXB = 3,    /**< Several PCIe switches, no host bridge. */
  HDAL_LINK_PHB = 4,    /**< A PCIe host bridge. */
  HDAL_LINK_NODE = 5,   /**< Host bridges within one NUMA node. */
  HDAL_LINK_SYS = 6,    /**< Across NUMA nodes or sockets, or nothing nearer is known. */
} hdal_link_kind;

/** A link between two devices (hdal_device_link()). */
typedef struct {
  hdal_link_kind kind;     /**< How they are joined. */
  bool peer_access;        /**< The runtime says each may address the other's memory (both ways). */
  const char *fabric;      /**< "nvlink", "xgmi" or "xelink" when @c kind is ::HDAL_LINK_FABRIC; else NULL. */
  uint64_t bandwidth_mbps; /**< The fabric's bandwidth between them in MB/s, as the topology gives it; 0: not known. */
  unsigned fabric_links;   /**< How many fabric links join them (the 6 of "NV6"); 0: not known. */
} hdal_link;

/**
 * How two devices of one host are joined (docs/reference.md, "Links"): the
 * same hardware, a GPU fabric from hwloc's distance matrices
 * (NVLinkBandwidth, XGMIBandwidth, XeLinkBandwidth; GPUs that reach one
 * NVSwitch are joined by the fabric), else the PCI path between their PCI
 * objects in the context's topology with I/O objects, else their NUMA nodes;
 * and whether the runtime gives peer access.  Worked out on each call; safe
 * from any thread.
 * @param a a device.
 * @param b a device of @p a's context, other than @p a.
 * @param[out] out the link; zeroed on failure.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p a, @p b or @p out NULL, @p a is @p b, or of two contexts.
 * - ::HDAL_FAILED_PRECONDITION: the devices are on two hosts, or of another host than this process's.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory.
 */
HDAL_API hdal_error *hdal_device_link(const hdal_device *a, const hdal_device *b, hdal_link *out);

/**
 * The name of a link kind as hdal-ls --json writes it ("same", "fabric",
 * "pix", "pxb", "phb", "node", "sys").
 * @param kind a kind.
 * @return the name; NULL for a value that is no ::hdal_link_kind.
 */
HDAL_API const char *hdal_link_kind_name(hdal_link_kind kind);

/**
 * The name of the host the device's process runs on (docs/reference.md,
 * "Hosts and hardware"): its hostname, as the process's process table says it.
 * Devices of one host share its name, but two hosts may have one name (two
 * containers given the same hostname): hdal_device_host_index() tells them apart.
 * @param d a device.
 * @return the host name; NULL when not known (a table of an hdal before
 *         hosts, version 1 or 2, or a process that could not read its name).
 */
HDAL_API const char *hdal_device_host(const hdal_device *d);

/**
 * The host of the device's process, numbered densely in the context: 0 to
 * hdal_context_host_count() - 1, in the order of the lowest process index of
 * each host's devices, so the same on every process of a job.  Two processes
 * are on one host when their tables give the same host name and the same host
 * id (the kernel's boot id and the network namespace); a process whose table
 * gives no id (an hdal before hosts) is on a host of its own.
 * @param d a device.
 * @return the host index; -1 when @p d is NULL.
 */
HDAL_API int hdal_device_host_index(const hdal_device *d);

/**
 * How many hosts the context's devices are on.
 * @param ctx a context.
 * @return the number of host indices; 0 when @p ctx is NULL or has no device.
 */
HDAL_API size_t hdal_context_host_count(const hdal_context *ctx);

/**
 * The devices of the context that are the same hardware as @p d: one physical
 * device seen by several backends or by several processes of one host, never
 * of two hosts (docs/reference.md, "Hosts and hardware", gives the rule: a
 * shared PCI bus id or UUID; intersecting topology cpusets, where two devices
 * of host memory are the same only as one NUMA node of two processes).
 * Worked out once for the whole table on first need (O(n log n)), and again
 * after hdal_context_add_process(); safe from any thread.
 * @param d a device.
 * @param ids where the ids of the smallest @p max of them go, ascending (may
 *        be NULL when @p max is 0).
 * @param max how many ids @p ids holds.
 * @param count where how many devices are the same hardware as @p d goes
 *        (more than @p max when @p ids could not hold them all).
 * @return NULL on success; else an error, nothing written:
 * - ::HDAL_INVALID_ARGUMENT: @p d or @p count NULL ("hdal_device_same_hardware:
 *   device is NULL", "... count is NULL"), or @p ids NULL with @p max above 0
 *   ("hdal_device_same_hardware: ids is NULL, max 4").
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory working the links out.
 */
HDAL_API hdal_error *hdal_device_same_hardware(const hdal_device *d, int *ids, size_t max, size_t *count);

/**
 * The piece of hardware the device is, numbered densely in the context: 0 to
 * hdal_context_hardware_count() - 1, in the order of each piece's lowest device
 * id.  Devices with one index are the same hardware; a device that computes on
 * host CPUs without an identity of its own (PoCL's OpenCL CPU device), the same
 * hardware as several NUMA nodes, takes the index of the lowest one it meets.
 * Pieces never span hosts.
 * @param d a device.
 * @return the hardware index; -1 when @p d is NULL or hdal ran out of memory
 *         working the links out (hdal_device_same_hardware() then says so).
 */
HDAL_API int hdal_device_hardware_index(const hdal_device *d);

/**
 * How many distinct pieces of hardware the context's devices are: the devices
 * of a job counted once each, however many backends and processes see them.
 * @param ctx a context.
 * @return the number of hardware indices; 0 when @p ctx is NULL, has no
 *         device, or hdal ran out of memory working the links out.
 */
HDAL_API size_t hdal_context_hardware_count(const hdal_context *ctx);

/**
 * What an attribute's value is (hdal_device_attribute_type()).  The value
 * itself is always a string (hdal_device_attribute()); the type says how it reads,
 * and hdal_device_attribute_uint() and hdal_device_attribute_bool() give it read.
 */
typedef enum {
  HDAL_ATTRIBUTE_STRING = 0, /**< Any text. */
  HDAL_ATTRIBUTE_UINT = 1,   /**< An unsigned number in canonical decimal ("0", "42"; no sign, no leading zero), below 2^64. */
  HDAL_ATTRIBUTE_BOOL = 2,   /**< A boolean: "yes" or "no", whatever the backend (hdal before module ABI 5: CUDA's said "true" or "false"). */
} hdal_attribute_type;

/** The bits of a type-and-flags word that hold its ::hdal_attribute_type. */
#define HDAL_ATTRIBUTE_TYPE_MASK 0xffu

/**
 * Flag of an attribute that says where the device sits in the machine: the host
 * CPUs it computes on (::HDAL_ATTRIBUTE_CPUSET), its core and PU counts.  hdal-ls
 * shows such attributes of a NUMA node's CPU device with that node.
 */
#define HDAL_ATTRIBUTE_TOPOLOGY 0x100u

/**
 * The key of the attribute that lists the host CPUs a device computes on, in
 * hwloc's list format ("0-3,8"), flagged ::HDAL_ATTRIBUTE_TOPOLOGY: a NUMA
 * node's CPUs for a CPU device, the process's CPUs for an OpenCL device that
 * runs on the host CPU.  Two devices whose cpusets intersect compute on the
 * same processors.
 */
#define HDAL_ATTRIBUTE_CPUSET "cpuset"

/**
 * The key of the attribute that gives a device's PCI address, "dddd:bb:dd.f"
 * (lspci's form; hex digits in either case).  Devices of different backends
 * with the same PCI address are one piece of hardware.
 */
#define HDAL_ATTRIBUTE_PCI_BUS_ID "pci_bus_id"

/**
 * The key of the attribute that gives a device's UUID as its runtime reports
 * it ("GPU-" and 32 hex digits for CUDA, for example).  Devices with the same
 * UUID are one piece of hardware.
 */
#define HDAL_ATTRIBUTE_UUID "uuid"

/**
 * The key of the attribute that says what kind of processor a device is, in
 * its backend's words: "cpu", "gpu", "accelerator" (OpenCL gives it).  A
 * device without it is a "cpu" when its DLPack device type is kDLCPU and a
 * "gpu" when it is a GPU's (CUDA, ROCm, Vulkan, Metal, oneAPI, WebGPU): the
 * kinds the device selector matches (docs/reference.md, "Choosing devices").
 */
#define HDAL_ATTRIBUTE_DEVICE_TYPE "device_type"

/**
 * The number of attributes of the device.
 * @param d a device.
 * @return the count (see hdal_device_attribute()).
 */
HDAL_API size_t hdal_device_attribute_count(const hdal_device *d);

/**
 * One attribute of the device, by index: what its backend knows, such as
 * @c pci_bus_id, @c uuid, @c compute_capability, @c driver_version,
 * @c opencl_version, @c cpuset, @c cores, @c pus.
 * @param d a device.
 * @param i an index in [0, hdal_device_attribute_count()).
 * @param[out] key the attribute's name, owned by the device; may be NULL.
 * @param[out] value its value, owned by the device; may be NULL.
 * @return true, or false (and @p key, @p value untouched) when @p i is out of range.
 */
HDAL_API bool hdal_device_attribute(const hdal_device *d, size_t i, const char **key, const char **value);

/**
 * One attribute of the device, by name.
 * @param d a device.
 * @param key the attribute's name; NULL finds nothing.
 * @return its value, owned by the device; NULL when the device has none of that name.
 */
HDAL_API const char *hdal_device_attribute_get(const hdal_device *d, const char *key);

/**
 * The type of an attribute, by index, as its backend gave it.  A value that
 * does not read as the type its backend named is kept as ::HDAL_ATTRIBUTE_STRING.
 * @param d a device.
 * @param i an index in [0, hdal_device_attribute_count()).
 * @return its type; ::HDAL_ATTRIBUTE_STRING when @p i is out of range.
 */
HDAL_API hdal_attribute_type hdal_device_attribute_type(const hdal_device *d, size_t i);

/**
 * The flags of an attribute, by index.
 * @param d a device.
 * @param i an index in [0, hdal_device_attribute_count()).
 * @return its flags (::HDAL_ATTRIBUTE_TOPOLOGY or 0); 0 when @p i is out of range.
 */
HDAL_API unsigned hdal_device_attribute_flags(const hdal_device *d, size_t i);

/**
 * The number an attribute holds, by index: its value read as the core read it
 * when its backend added it, so that no reader parses the text again.
 * @param d a device.
 * @param i an index in [0, hdal_device_attribute_count()).
 * @param[out] value the number; may be NULL.
 * @return true when the attribute is an ::HDAL_ATTRIBUTE_UINT; false (and
 *         @p value untouched) when it is of another type or @p i is out of range.
 */
HDAL_API bool hdal_device_attribute_uint(const hdal_device *d, size_t i, uint64_t *value);

/**
 * The truth an attribute holds, by index ("yes" is true, "no" false).
 * @param d a device.
 * @param i an index in [0, hdal_device_attribute_count()).
 * @param[out] value the boolean; may be NULL.
 * @return true when the attribute is an ::HDAL_ATTRIBUTE_BOOL; false (and
 *         @p value untouched) when it is of another type or @p i is out of range.
 */
HDAL_API bool hdal_device_attribute_bool(const hdal_device *d, size_t i, bool *value);

/** @} */

/* ---- Device memory -------------------------------------------------------- */

/**
 * @defgroup hdal_memory Device memory
 * @brief The per-device memory pool: its statistics, its limit, giving cached memory back.
 *
 * Every allocation hdal makes on a device (a copying import, hdal_buffer_copy_to_device(),
 * a compacting or cross-device export, a module's own) goes through the device's pool.
 * A freed block is kept and serves a later request of the same size once the work queued
 * on it is done; CUDA devices whose driver has a stream-ordered allocator (11.2+) use the
 * device's default memory pool instead.  @c HDAL_MEMORY_POOL=0 turns caching off (for
 * memory checkers); @c HDAL_MEMORY_POOL_LIMIT or hdal_context_options::memory_pool_limit
 * caps each device: its @c bytes_in_use and their peak never pass the limit, however many
 * threads allocate at once.  An allocation the runtime refuses for want of memory gives the cached
 * memory back and is tried once more.  Zero-copy imports allocate nothing and are not
 * counted.  See docs/memory.md.
 *
 * Thread safety: a device's pool is shared by every thread using the device; these
 * functions may be called from any thread at once.
 * @{
 */

/** A device's memory statistics (hdal_device_memory_stats()).  Set @c struct_size before the call. */
typedef struct {
  size_t struct_size;         /**< sizeof(hdal_memory_stats) as the caller was compiled; fields past it are not written. */
  uint64_t bytes_in_use;      /**< Bytes held by live buffers. */
  uint64_t peak_bytes_in_use; /**< The most @c bytes_in_use has been. */
  uint64_t bytes_reserved;    /**< Bytes held from the runtime: in use plus cached. */
  uint64_t bytes_limit;       /**< The device's limit in bytes; 0: no limit. */
  uint64_t num_allocs;        /**< Allocations served. */
  uint64_t num_pool_hits;     /**< Of which served from cached memory. */
} hdal_memory_stats;

/**
 * The memory statistics of a device; a device that hdal never allocated on reports zeros
 * (and its limit).
 * @param d a device of this process.
 * @param[out] out filled up to @c out->struct_size.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d or @p out is NULL, or @c out->struct_size is too small.
 */
HDAL_API hdal_error *hdal_device_memory_stats(const hdal_device *d, hdal_memory_stats *out);

/**
 * Gives the device's cached memory back to its runtime, waiting for the work queued on it;
 * memory held by live buffers stays.
 * @param d a device.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d is NULL.
 */
HDAL_API hdal_error *hdal_device_trim(hdal_device *d);

/**
 * @defgroup hdal_streams Work streams
 * @brief Where hdal queues its own work on a device, for an application's work to join.
 *
 * The ordering rule.  hdal's transfers on a device (hdal_buffer_write(),
 * hdal_buffer_read(), hdal_buffer_copy_to_host(), hdal_buffer_copy_to_device(),
 * imports and exports that copy) go to the device's work stream
 * (hdal_device_work_stream()) and are complete when their call returns.  So
 * work an application queued on the work stream before the call is done
 * before the transfer touches the buffer (a kernel enqueued on hdal's OpenCL
 * queue, then hdal_buffer_read() sees its result), and work it queues after
 * the call sees what the transfer wrote.  On CUDA and ROCm the work stream is
 * the legacy default stream, which also comes after the work of every
 * blocking stream; work on another OpenCL queue, or on a CUDA or HIP stream
 * made non-blocking, is not ordered with hdal's: wait for it (clFinish(),
 * cuStreamSynchronize()) or name it as the @c stream of an import or export.
 * hdal_device_synchronize() waits for everything queued on the work stream.
 * Memory imported from another OpenCL context is moved through a queue hdal
 * makes in that context, outside this rule: name the producer's queue as the
 * import's @c stream.
 */

/**
 * @ingroup hdal_streams
 * The stream hdal's own work on a device goes to, as DLPack names streams for
 * its device type: 0 for the CPU and for CUDA and ROCm (their legacy default
 * stream: hdal's work completes before its calls return), the device's
 * @c cl_command_queue in hdal's own OpenCL context for OpenCL (made on first
 * use, owned by hdal, valid while the context lives).  What DLPack's exchange
 * API calls the current work stream (docs/dlpack.md).
 * @param d a device of this process.
 * @param[out] stream the stream; 0 on failure.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d or @p stream is NULL.
 * - ::HDAL_FAILED_PRECONDITION: @p d is not PjRt-compatible, not addressable,
 *   or its runtime was left behind by fork(); the runtime cannot make a queue.
 */
HDAL_API hdal_error *hdal_device_work_stream(hdal_device *d, intptr_t *stream);

/**
 * @ingroup hdal_streams
 * Waits until the work queued so far on the device's work stream is done:
 * the application's (kernels it enqueued on hdal_device_work_stream()'s
 * queue or stream) and hdal's.  OpenCL: clFinish() on hdal's queue (nothing
 * when it was never made); CUDA and ROCm: the default stream synchronised in
 * the device's primary context, so also the work queued before on blocking
 * streams; the CPU and Level Zero: nothing is ever left queued, it returns at
 * once.
 * @param d a device of this process.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d is NULL ("hdal_device_synchronize: device is NULL").
 * - ::HDAL_FAILED_PRECONDITION: @p d is not PjRt-compatible, not addressable,
 *   or its runtime was left behind by fork().
 * - the backend's own code when the wait fails (::HDAL_INTERNAL for a kernel
 *   that failed, for instance: the runtime's error, named).
 *
 * Thread safety: safe from any thread; it waits for the work queued before it
 * was called, and possibly for work other threads queue meanwhile.
 */
HDAL_API hdal_error *hdal_device_synchronize(const hdal_device *d);

/**
 * @defgroup hdal_native Native handles
 * @brief The runtime's own objects behind a device, for an application that
 * calls the runtime itself (its own kernels on hdal's buffers).
 *
 * hdal_device_native_handle() gives one object of the device's runtime, of a
 * kind named by ::hdal_native_handle, as an @c intptr_t to cast to the
 * runtime's type.  A device has the kinds of its backend's API: OpenCL its
 * platform, device, context and queue; CUDA its device, primary context and
 * stream; ROCm its HIP device and stream; Level Zero its driver, device and
 * context.  The CPU has none, and an IFRT-native device (Vulkan) is refused
 * as by every buffer call.
 *
 * Ownership: every handle is hdal's, made on first use where it is made
 * lazily (the OpenCL context and queue, the CUDA primary context's reference)
 * and valid while the context lives, until hdal_context_destroy() has
 * returned and the context's last buffer is released.  Do not release or
 * destroy it.  To keep one longer, take a reference of the runtime's own and
 * give it back yourself: clRetainContext() / clReleaseContext(),
 * clRetainCommandQueue() / clReleaseCommandQueue(),
 * cuDevicePrimaryCtxRetain() / cuDevicePrimaryCtxRelease().  Level Zero
 * counts no references: its context goes with hdal's.  Platform and device
 * ids, CUDA and HIP devices, and streams 0 are not objects that end.
 *
 * The queue and streams are the work streams (hdal_device_work_stream()), so
 * the ordering rule of @ref hdal_streams holds for work queued on them.
 * Level Zero has no kind of queue or command list: hdal's immediate command
 * list is its own (a list is not thread-safe, and hdal uses it under a lock),
 * and hdal's Level Zero work is done when its calls return; make lists of
 * your own in hdal's context, and finish their work before hdal reads the
 * memory (docs/levelzero.md).
 */

/**
 * @ingroup hdal_native
 * A kind of native handle (hdal_device_native_handle()): the runtime's type
 * that the @c intptr_t holds is named with each.  Grouped by API, by tens.
 */
typedef enum {
  HDAL_NATIVE_OPENCL_PLATFORM = 1,     /**< @c cl_platform_id: the device's platform. */
  HDAL_NATIVE_OPENCL_DEVICE = 2,       /**< @c cl_device_id: the device. */
  HDAL_NATIVE_OPENCL_CONTEXT = 3,      /**< @c cl_context: hdal's own context on the device alone, where it
                                            allocates (hdal_buffer_data()'s @c cl_mem of its buffers) and
                                            its queue lives; made on first use.  Memory imported from another
                                            context stays in that context. */
  HDAL_NATIVE_OPENCL_QUEUE = 4,        /**< @c cl_command_queue: the work stream, in that context (in-order);
                                            as hdal_device_work_stream() gives it. */
  HDAL_NATIVE_CUDA_DEVICE = 11,        /**< @c CUdevice: the device (cuDeviceGet() of its ordinal). */
  HDAL_NATIVE_CUDA_CONTEXT = 12,       /**< @c CUcontext: the device's primary context, where hdal allocates
                                            and works; retained by hdal on first use (then released with the
                                            context).  hdal pushes it around its own calls and never leaves
                                            it current: push or set it yourself. */
  HDAL_NATIVE_CUDA_STREAM = 13,        /**< @c CUstream: the work stream, 0 (the legacy default stream). */
  HDAL_NATIVE_HIP_DEVICE = 21,         /**< @c hipDevice_t: the device's ordinal, for hipSetDevice(). */
  HDAL_NATIVE_HIP_STREAM = 22,         /**< @c hipStream_t: the work stream, 0 (the null stream). */
  HDAL_NATIVE_LEVEL_ZERO_DRIVER = 31,  /**< @c ze_driver_handle_t: the device's driver. */
  HDAL_NATIVE_LEVEL_ZERO_DEVICE = 32,  /**< @c ze_device_handle_t: the device (a root device). */
  HDAL_NATIVE_LEVEL_ZERO_CONTEXT = 33, /**< @c ze_context_handle_t: hdal's context on the driver, shared by
                                            its devices, where hdal allocates (its buffers' USM). */
} hdal_native_handle;

/**
 * @ingroup hdal_native
 * A native handle of the device's runtime (the kinds and their ownership: @ref hdal_native).
 * @param d a device of this process.
 * @param which the kind, one of the device's backend's API.
 * @param[out] out the handle, to cast to the kind's type
 *   (<tt>(cl_context)out</tt>); 0 on failure.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p d or @p out is NULL
 *   ("hdal_device_native_handle: device is NULL"); @p which is no
 *   ::hdal_native_handle ("hdal_device_native_handle: unknown native handle
 *   kind 99").
 * - ::HDAL_NOT_FOUND: the device's backend has no handle of that kind, named
 *   with the device ("hdal_device_native_handle: device 0 (cpu) has no
 *   HDAL_NATIVE_OPENCL_CONTEXT").
 * - ::HDAL_FAILED_PRECONDITION: @p d is not PjRt-compatible, not addressable,
 *   or its runtime was left behind by fork(), as for hdal_device_work_stream();
 *   the runtime cannot make the OpenCL context or queue.
 * - the runtime's error, named, when it fails to make the handle
 *   (cuDevicePrimaryCtxRetain()).
 *
 * Thread safety: safe from any thread; a handle made on first use is made once.
 */
HDAL_API hdal_error *hdal_device_native_handle(const hdal_device *d, hdal_native_handle which, intptr_t *out);

/**
 * @ingroup hdal_native
 * The name of a kind of native handle, as hdal's messages spell it: the
 * enumerator's own ("HDAL_NATIVE_OPENCL_CONTEXT").  The Python package takes
 * a kind by this name less its prefix, lowercased ("opencl_context").
 * @param which a kind.
 * @return the name, static; NULL for a value that is no kind of this hdal.
 */
HDAL_API const char *hdal_native_handle_name(hdal_native_handle which);

/**
 * @ingroup hdal_devices
 * The device a DLPack device names in a context, as an export's @c dl_device
 * is found: the backend that owns the device type (host memory's for
 * @c kDLCUDAHost, @c kDLCUDAManaged and the like), then its device of that
 * DLPack device id, as the backend numbers them (docs/dlpack.md).
 * @param ctx a context.
 * @param dl a DLPack device.
 * @param[out] out the device; NULL on failure.
 * @return NULL, or an error the caller owns:
 * - ::HDAL_INVALID_ARGUMENT: @p ctx or @p out is NULL; no backend serves the
 *   device type ("No hdal backend serves DLPack device type kDLROCM (10), device
 *   id 0"); the backend has no device of that id, in its words ("DLPack device
 *   (kDLCPU, 3) is out of range: the CPU backend's devices are all (kDLCPU, 0)").
 */
HDAL_API hdal_error *hdal_context_device_for_dlpack(hdal_context *ctx, DLDevice dl, hdal_device **out);

/** @} */

/* ---- Capsules (PyCapsule-like holders of DLPack tensors) ----------------- */

/**
 * @defgroup hdal_capsules Capsules
 * @brief PyCapsule-like holders of DLPack tensors: consumed at most once.
 *
 * A capsule holds a pointer and a name, as a Python @c PyCapsule holding a
 * DLPack tensor does: "dltensor" (a @c DLManagedTensor) or "dltensor_versioned"
 * (a ::DLManagedTensorVersioned) while it owns the tensor; "used_dltensor" /
 * "used_dltensor_versioned" once a consumer took it.  hdal_buffer_from_dlpack()
 * consumes a capsule on success only; hdal_buffer_to_dlpack() makes one.
 * Destroying a capsule that still owns its tensor calls the tensor's deleter;
 * a consumed one does not.
 *
 * Thread safety: consumption is atomic: of several threads importing or
 * taking one capsule at once, one wins and the others see it consumed.
 * hdal_capsule_destroy() must not race with other calls on the capsule.
 * @{
 */

/** A named holder of a DLPack tensor.  Opaque; owned by the caller (hdal_capsule_destroy()). */
typedef struct hdal_capsule hdal_capsule;

/**
 * Wraps a legacy (unversioned) managed tensor in a capsule named "dltensor".
 * @param t the tensor; the capsule owns it from now on (its deleter runs when
 *        the capsule is destroyed unconsumed).
 * @return the capsule, owned by the caller; NULL when out of memory (then @p t
 *         is still the caller's).
 */
HDAL_API hdal_capsule *hdal_capsule_wrap(DLManagedTensor *t);

/**
 * Wraps a versioned managed tensor in a capsule named "dltensor_versioned".
 * @param t the tensor; the capsule owns it from now on.
 * @return the capsule, owned by the caller; NULL when out of memory (then @p t
 *         is still the caller's).
 */
HDAL_API hdal_capsule *hdal_capsule_wrap_versioned(DLManagedTensorVersioned *t);

/**
 * Makes a capsule of any name, for language bindings and tests.  Only the
 * standard names ("dltensor", "dltensor_versioned") make the capsule own its
 * pointer; with any other name, destroying it frees nothing but the capsule.
 * @param name the name, copied; NULL is a capsule without a name.
 * @param pointer the pointer held.
 * @return the capsule, owned by the caller; NULL when out of memory.
 */
HDAL_API hdal_capsule *hdal_capsule_new(const char *name, void *pointer);

/**
 * The capsule's current name.
 * @param c a capsule, or NULL.
 * @return the name, owned by the capsule ("dltensor", "used_dltensor", ...);
 *         NULL when @p c or its name is NULL.
 */
HDAL_API const char *hdal_capsule_name(const hdal_capsule *c);

/**
 * The pointer the capsule holds, consumed or not; ownership does not change.
 * @param c a capsule, or NULL.
 * @return the pointer; NULL when @p c is NULL.
 */
HDAL_API void *hdal_capsule_pointer(const hdal_capsule *c);

/**
 * Takes the tensor out of the capsule: the caller owns it from now on (and will
 * call its deleter), and the capsule is renamed as consumed ("used_dltensor",
 * "used_dltensor_versioned").  This is how a program or binding hands an
 * exported tensor to another library.
 * @param c a capsule, or NULL.
 * @return the @c DLManagedTensor or ::DLManagedTensorVersioned; NULL, and
 *         nothing changed, when @p c is NULL, already consumed, or of another name.
 */
HDAL_API void *hdal_capsule_take(hdal_capsule *c);

/**
 * Destroys a capsule.  A capsule still named "dltensor" or
 * "dltensor_versioned" calls its tensor's deleter (when the tensor and its
 * deleter are not NULL); a consumed one, or one of another name, does not.
 * @param c a capsule; NULL does nothing.
 */
HDAL_API void hdal_capsule_destroy(hdal_capsule *c);

/** @} */

/* ---- Buffers and DLPack --------------------------------------------------- */

/**
 * @defgroup hdal_buffers Buffers
 * @brief Arrays on a device: shape, strides, data type, copies; reference counted.
 *
 * A buffer is an n-dimensional array on one PjRt-compatible device, made by
 * hdal_buffer_from_dlpack() (a view of the imported memory, or a copy) or by
 * hdal_buffer_copy_to_device().  It is reference counted: the caller owns one
 * reference and drops it with hdal_buffer_release(); a tensor exported with
 * hdal_buffer_to_dlpack() holds another.  A buffer keeps its context's
 * internals alive, so it may outlive hdal_context_destroy().
 *
 * Thread safety: a buffer's fields never change after it is made; every
 * function of this group is safe from any thread, and retain/release are atomic.
 * @{
 */

/** An array on a device.  Opaque; reference counted. */
typedef struct hdal_buffer hdal_buffer;

/**
 * The device of a buffer.
 * @param b a buffer.
 * @return its device, owned by the context.
 */
HDAL_API hdal_device *hdal_buffer_device(const hdal_buffer *b);

/**
 * The number of dimensions.
 * @param b a buffer.
 * @return ndim, 0 for a scalar.
 */
HDAL_API int32_t hdal_buffer_ndim(const hdal_buffer *b);

/**
 * The shape.
 * @param b a buffer.
 * @return ndim sizes, owned by the buffer; NULL when ndim is 0.
 */
HDAL_API const int64_t *hdal_buffer_shape(const hdal_buffer *b);

/**
 * The strides, in elements (as DLPack counts them).
 * @param b a buffer.
 * @return ndim strides, owned by the buffer, never NULL for ndim > 0 (a view keeps
 *         the imported tensor's; a copy is compact row-major); NULL when ndim is 0.
 */
HDAL_API const int64_t *hdal_buffer_strides(const hdal_buffer *b);

/**
 * The element type.
 * @param b a buffer.
 * @return the DLPack data type.
 */
HDAL_API DLDataType hdal_buffer_dtype(const hdal_buffer *b);

/**
 * The address of the first element.
 * @param b a buffer.
 * @return a host pointer (CPU devices), a device pointer (CUDA), or a @c cl_mem
 *         that starts at the first element (OpenCL: a sub-buffer made once and
 *         owned by the buffer); NULL for an empty buffer, or when an OpenCL
 *         sub-buffer cannot be made.
 */
HDAL_API void *hdal_buffer_data(const hdal_buffer *b);

/**
 * Whether the buffer aliases imported memory (a zero-copy view).
 * @param b a buffer.
 * @return true for a view, false when hdal allocated its memory.
 */
HDAL_API bool hdal_buffer_is_view(const hdal_buffer *b);

/**
 * Whether the buffer is read-only: a view of a versioned tensor flagged
 * @c DLPACK_FLAG_BITMASK_READ_ONLY.
 * @param b a buffer.
 * @return true when read-only.
 */
HDAL_API bool hdal_buffer_is_read_only(const hdal_buffer *b);

/**
 * Copies the buffer's elements to host memory, compact row-major, whatever the
 * buffer's strides.
 * @param b a buffer.
 * @param dst host memory of @p nbytes bytes.
 * @param nbytes the buffer's compact size: product of the shape times the element size.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: @p b is NULL; @p nbytes is not the buffer's
 *   compact size; @p dst is NULL with @p nbytes not 0.
 * - ::HDAL_UNIMPLEMENTED: the backend has no read operation.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory (host staging).
 * - the backend's own code when its transfer fails (::HDAL_INTERNAL for a CUDA
 *   or OpenCL error, for instance).
 */
HDAL_API hdal_error *hdal_buffer_copy_to_host(const hdal_buffer *b, void *dst, size_t nbytes);

/**
 * Writes host memory into a byte range of a buffer, in place: @p size bytes
 * from @p src to bytes [@p offset, @p offset + @p size) of the buffer's
 * elements, counted as in its compact row-major copy (hdal_buffer_copy_to_host()'s
 * layout): offset 0 and size hdal_buffer_copy_to_host()'s @c nbytes write it
 * whole.  What a view's memory is, the producer's, is written.
 *
 * Ordering (@ref hdal_streams): the write goes to the device's work stream
 * after the work already queued there, and is complete when the call returns:
 * @p src may be reused at once, and work queued on the work stream afterwards
 * sees the bytes.
 *
 * @param b the buffer.
 * @param offset the first byte written.
 * @param src @p size bytes of host memory, read during the call only; may be NULL when @p size is 0.
 * @param size the number of bytes; 0 writes nothing.
 * @return NULL on success, else an error owned by the caller, and the buffer unchanged:
 * - ::HDAL_INVALID_ARGUMENT: @p b is NULL; @p src is NULL with @p size not 0
 *   ("hdal_buffer_write: src is NULL with size 16").
 * - ::HDAL_OUT_OF_RANGE: the range ends past the buffer ("hdal_buffer_write: 16
 *   bytes at offset 4000000 are past the end of the buffer (4000000 bytes)").
 * - ::HDAL_UNIMPLEMENTED: the buffer is a view whose elements are not in
 *   row-major order in memory (a transposed import), so a byte range of it is
 *   no range of its memory; the backend has no write operation.
 * - ::HDAL_FAILED_PRECONDITION: the buffer is read-only
 *   (hdal_buffer_is_read_only()); its device's runtime was left behind by fork().
 * - the backend's own code when its transfer fails (::HDAL_INTERNAL for an
 *   OpenCL or CUDA error, for instance).
 *
 * Thread safety: safe from any thread; writes of overlapping ranges from
 * several threads at once, or a write racing a read of the same bytes, leave
 * those bytes unspecified, as for any memory.
 */
HDAL_API hdal_error *hdal_buffer_write(hdal_buffer *b, size_t offset, const void *src, size_t size);

/**
 * Reads a byte range of a buffer into host memory: bytes [@p offset,
 * @p offset + @p size) of its elements, counted as in hdal_buffer_write(),
 * into @p dst.  Ordering as hdal_buffer_write(): the read comes after the work
 * already queued on the device's work stream and is complete when the call
 * returns.
 * @param b the buffer.
 * @param offset the first byte read.
 * @param dst @p size bytes of host memory; may be NULL when @p size is 0.
 * @param size the number of bytes; 0 reads nothing.
 * @return NULL on success, else an error owned by the caller, and @p dst untouched
 *         (but for a transfer that failed midway):
 * - ::HDAL_INVALID_ARGUMENT: @p b is NULL; @p dst is NULL with @p size not 0.
 * - ::HDAL_OUT_OF_RANGE: the range ends past the buffer (message as hdal_buffer_write()'s).
 * - ::HDAL_UNIMPLEMENTED: a view not in row-major order in memory (as
 *   hdal_buffer_write(); hdal_buffer_copy_to_host() reads any buffer whole);
 *   the backend has no read operation.
 * - ::HDAL_FAILED_PRECONDITION: the device's runtime was left behind by fork().
 * - the backend's own code when its transfer fails.
 *
 * Thread safety: safe from any thread.
 */
HDAL_API hdal_error *hdal_buffer_read(const hdal_buffer *b, size_t offset, void *dst, size_t size);

/**
 * Copies a buffer to a device (the same or another, of any backend), as a new
 * compact row-major buffer.
 * @param b a buffer.
 * @param dst the target device, of the buffer's context.
 * @param[out] out the new buffer (one reference, the caller's); NULL on failure.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: @p out, @p b or @p dst is NULL; @p dst belongs to
 *   another context.
 * - ::HDAL_FAILED_PRECONDITION: @p dst is not PjRt-compatible ("This operation
 *   is implemented for a PjRt-compatible backend only."), or not addressable by
 *   this process.
 * - ::HDAL_UNIMPLEMENTED: a backend lacks an operation the copy needs.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of host or device memory.
 * - the backend's own code when a transfer fails.
 */
HDAL_API hdal_error *hdal_buffer_copy_to_device(const hdal_buffer *b, hdal_device *dst, hdal_buffer **out);

/**
 * Allocates a compact row-major buffer on a device, through its memory pool
 * (docs/memory.md); its contents are unspecified.  What DLPack's exchange API
 * asks of a producer's allocator.
 * @param dev the device, PjRt-compatible and addressable by this process.
 * @param ndim the number of dimensions (0: a scalar).
 * @param shape @p ndim sizes, none negative (NULL when @p ndim is 0).
 * @param dtype the element type (any hdal imports).
 * @param[out] out the new buffer (one reference, the caller's); NULL on failure.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: @p out or @p dev is NULL; @p ndim is negative; a
 *   NULL or negative shape; a size that overflows (messages as an import's).
 * - ::HDAL_UNIMPLEMENTED: a data type hdal does not import (the import's message).
 * - ::HDAL_FAILED_PRECONDITION: @p dev is not PjRt-compatible or not addressable.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of host or device memory, or past the pool's limit.
 */
HDAL_API hdal_error *hdal_buffer_allocate(hdal_device *dev, int32_t ndim, const int64_t *shape, DLDataType dtype,
                                          hdal_buffer **out);

/**
 * Takes a reference on a buffer.
 * @param b a buffer; NULL does nothing.
 */
HDAL_API void hdal_buffer_retain(hdal_buffer *b);

/**
 * Drops a reference on a buffer.  The last one frees the buffer: its memory,
 * or, for a view, the imported tensor (its deleter runs then).
 * @param b a buffer; NULL does nothing.
 */
HDAL_API void hdal_buffer_release(hdal_buffer *b);

/** @} */

/**
 * @defgroup hdal_dlpack_io DLPack import and export
 * @brief Tensors in and out through capsules: routing, zero-copy views, copies.
 *
 * The full rules (check order, routing, when a view is made, ownership of the
 * tensor on every path) are in docs/dlpack.md.
 * @{
 */

/** When an import or export may, must or must not copy. */
typedef enum {
  HDAL_COPY_IF_NEEDED = 0, /**< A zero-copy view when the memory allows, else a copy (the default). */
  HDAL_COPY_ALWAYS = 1,    /**< Always copy. */
  HDAL_COPY_NEVER = 2,     /**< Never copy: fail when a copy would be needed. */
} hdal_copy_mode;

/** Options of hdal_buffer_from_dlpack().  Initialise with ::HDAL_IMPORT_OPTIONS_INIT. */
typedef struct {
  size_t struct_size;  /**< sizeof(hdal_import_options) as the caller was compiled. */
  hdal_copy_mode copy; /**< Copy mode; ::HDAL_COPY_IF_NEEDED by default. */
  bool has_stream;     /**< Whether @c stream is given. */
  intptr_t stream;     /**< The producer's stream: a @c CUstream / @c cudaStream_t, or a @c cl_command_queue;
                            hdal orders its work on the tensor after the work already on it. */
} hdal_import_options;

/**
 * Initialiser of ::hdal_import_options: @c struct_size set, ::HDAL_COPY_IF_NEEDED, no stream.
 * @code
 * hdal_import_options io = HDAL_IMPORT_OPTIONS_INIT;
 * io.copy = HDAL_COPY_NEVER;
 * err = hdal_buffer_from_dlpack(ctx, capsule, NULL, &io, &buf);
 * @endcode
 */
#define HDAL_IMPORT_OPTIONS_INIT {sizeof(hdal_import_options), HDAL_COPY_IF_NEEDED, false, 0}

/** Options of hdal_buffer_to_dlpack().  Initialise with ::HDAL_EXPORT_OPTIONS_INIT. */
typedef struct {
  size_t struct_size;        /**< sizeof(hdal_export_options) as the caller was compiled. */
  DLPackVersion max_version; /**< The highest DLPack version the consumer takes; {0,0}: a legacy "dltensor"
                                  capsule, major >= 1: "dltensor_versioned" of version 1.x. */
  bool has_dl_device;        /**< Whether @c dl_device is given. */
  DLDevice dl_device;        /**< The device the consumer wants the tensor on; another than the buffer's means a copy. */
  hdal_copy_mode copy;       /**< Copy mode; ::HDAL_COPY_IF_NEEDED by default. */
  bool has_stream;           /**< Whether @c stream is given. */
  intptr_t stream;           /**< The consumer's stream: it will use the tensor after the work already on it. */
} hdal_export_options;

/**
 * Initialiser of ::hdal_export_options: @c struct_size set, a legacy capsule,
 * the buffer's own device, ::HDAL_COPY_IF_NEEDED, no stream.
 * @code
 * hdal_export_options eo = HDAL_EXPORT_OPTIONS_INIT;
 * eo.max_version = (DLPackVersion){1, 1};
 * err = hdal_buffer_to_dlpack(buf, &eo, &capsule);
 * @endcode
 */
#define HDAL_EXPORT_OPTIONS_INIT \
  {sizeof(hdal_export_options), {0, 0}, false, {kDLCPU, 0}, HDAL_COPY_IF_NEEDED, false, 0}

/**
 * Imports a DLPack tensor as a buffer, zero-copy when the target device can
 * address its memory, else by a copy (docs/dlpack.md).
 *
 * On success, and only then, the capsule is renamed "used_dltensor" /
 * "used_dltensor_versioned" and the buffer owns the tensor: a view calls its
 * deleter at its last release, a copy as soon as the copy is complete.  On
 * failure the capsule keeps its name and the tensor is untouched, except for a
 * versioned tensor of an unsupported major version, which DLPack says to
 * delete: its deleter is called and the capsule counts as consumed.  The
 * caller destroys the capsule either way.
 *
 * Checks, in this order (messages of 1, 2, 3, 5 and 6 are jaxlib's):
 * 1. target device not PjRt-compatible: ::HDAL_FAILED_PRECONDITION,
 *    "DLPack is supported for PjRt-compatible backends only.";
 * 2. target device not addressable: ::HDAL_FAILED_PRECONDITION,
 *    "DLPack is only supported for devices addressable by the current process.";
 * 3. capsule name not "dltensor" nor "dltensor_versioned" (consumed, for one):
 *    ::HDAL_INVALID_ARGUMENT;
 * 4. a versioned tensor whose major version is not 1: ::HDAL_INVALID_ARGUMENT;
 * 5. ndim < 0: ::HDAL_INVALID_ARGUMENT;
 * 6. a data type hdal does not take (lanes != 1, an unknown code or width):
 *    ::HDAL_UNIMPLEMENTED;
 * 7. a bad shape or layout (negative dimension, NULL shape, element count,
 *    byte size or span that overflows, an address that wraps, NULL data with
 *    elements): ::HDAL_INVALID_ARGUMENT.
 *
 * @param ctx the context.
 * @param capsule a capsule holding the tensor.
 * @param device the target device; NULL: the device that the tensor's DLDevice
 *        routes to (checks 1 and 2 then apply to it).
 * @param opts options, or NULL for the defaults (see ::hdal_import_options).
 * @param[out] out the buffer (one reference, the caller's); NULL on failure.
 * @return NULL on success, else an error owned by the caller; besides the checks above:
 * - ::HDAL_INVALID_ARGUMENT: @p out, @p ctx or @p capsule is NULL;
 *   @p opts->struct_size too small or an invalid copy mode; @p device of
 *   another context; a capsule holding a NULL tensor; with @p device NULL, a
 *   DLDevice type no backend serves or an id out of range; with
 *   ::HDAL_COPY_NEVER, data not aligned to its element size, or memory the
 *   target device cannot address.
 * - ::HDAL_UNIMPLEMENTED: with ::HDAL_COPY_NEVER, a layout that is not compact
 *   up to a permutation (jaxlib's message); a backend lacks an operation the
 *   copy needs.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of host or device memory.
 * - the backend's own code when a transfer or a stream wait fails.
 *
 * Thread safety: safe from any thread; of several threads importing one
 * capsule at once, one succeeds and the others get check 3's error.
 */
HDAL_API hdal_error *hdal_buffer_from_dlpack(hdal_context *ctx, hdal_capsule *capsule, hdal_device *device,
                                             const hdal_import_options *opts, hdal_buffer **out);

/**
 * Imports a managed tensor that the caller holds without an ::hdal_capsule:
 * hdal_buffer_from_dlpack() for a language binding that took the tensor out
 * of its own capsule and claimed that capsule itself (hdal's Python package
 * does), without the hdal_capsule's allocation and atomic claim.  Checks,
 * copies, routing and messages are hdal_buffer_from_dlpack()'s; check 3 (the
 * capsule's name) is the caller's.
 *
 * Ownership as for a capsule's tensor: on success the buffer owns @p tensor (a
 * view calls its deleter at its last release, a copy as soon as the copy is
 * complete); a versioned tensor whose major version is not 1 is refused and
 * its deleter called, as DLPack says; on any other failure it is untouched and
 * still the caller's.
 *
 * @param ctx the context.
 * @param tensor a @c DLManagedTensorVersioned when @p versioned, else a @c DLManagedTensor.
 * @param versioned which of the two @p tensor is.
 * @param device the target device, or NULL (routed), as hdal_buffer_from_dlpack()'s.
 * @param opts options, or NULL for the defaults.
 * @param[out] out the buffer (one reference, the caller's); NULL on failure.
 * @return NULL, or hdal_buffer_from_dlpack()'s errors, its argument checks
 *   named for this function ("hdal_buffer_from_dlpack_tensor: tensor is NULL").
 *
 * Thread safety: safe from any thread; the caller makes sure that one tensor
 * is imported once.
 */
HDAL_API hdal_error *hdal_buffer_from_dlpack_tensor(hdal_context *ctx, void *tensor, bool versioned,
                                                    hdal_device *device, const hdal_import_options *opts,
                                                    hdal_buffer **out);

/**
 * Exports a buffer as a DLPack tensor in a new capsule, zero-copy unless a copy
 * is asked for or needed (another @c dl_device, a read-only buffer going out
 * as a legacy tensor with ::HDAL_COPY_ALWAYS).
 *
 * The capsule is "dltensor" for @c max_version {0,0}, else
 * "dltensor_versioned" with version 1.x, @c READ_ONLY for a read-only buffer
 * and @c IS_COPIED when the export copied.  The tensor keeps the buffer alive
 * (a reference) until its deleter runs; @c byte_offset is 0 and strides are
 * always set.  Importing it again on the same device is zero-copy.
 *
 * @param buf the buffer.
 * @param opts options, or NULL for the defaults (see ::hdal_export_options).
 * @param[out] out the capsule, owned by the caller (hdal_capsule_destroy(), which
 *        deletes the tensor unless a consumer took it); NULL on failure.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: @p out or @p buf is NULL; @p opts->struct_size
 *   too small or an invalid copy mode; a @c dl_device no backend serves or out
 *   of range; another @c dl_device with ::HDAL_COPY_NEVER.
 * - ::HDAL_FAILED_PRECONDITION: the buffer's device is not PjRt-compatible
 *   ("This operation is implemented for a PjRt-compatible backend only.");
 *   a read-only buffer asked as a legacy tensor without ::HDAL_COPY_ALWAYS;
 *   a target device not addressable.
 * - ::HDAL_UNIMPLEMENTED: a backend lacks an operation the copy needs.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of host or device memory.
 * - the backend's own code when a transfer or a stream wait fails.
 *
 * Thread safety: safe from any thread, on one buffer as well.
 */
HDAL_API hdal_error *hdal_buffer_to_dlpack(hdal_buffer *buf, const hdal_export_options *opts, hdal_capsule **out);

/**
 * As hdal_buffer_to_dlpack(), the managed tensor itself rather than a capsule
 * holding it, for a caller that hands it on at once (a Python capsule, DLPack's
 * C exchange API): a @c DLManagedTensorVersioned when @c opts->max_version.major
 * is 1 or more, else a @c DLManagedTensor (@p opts NULL: legacy).  The caller
 * owns the tensor: its deleter gives it back.
 * @param buf the buffer.
 * @param opts options, or NULL for the defaults.
 * @param[out] out the tensor; NULL on failure.
 * @return NULL, or the errors of hdal_buffer_to_dlpack() (named for this function).
 */
HDAL_API hdal_error *hdal_buffer_to_dlpack_tensor(hdal_buffer *buf, const hdal_export_options *opts, void **out);

/** @} */

/* ---- Processes ----------------------------------------------------------- */

/**
 * @defgroup hdal_processes Processes
 * @brief The device tables of cooperating processes: export one, add another's.
 *
 * A process exports its devices as a portable, versioned blob
 * (docs/dlpack.md, "process table"); another process adds it to its context
 * and sees those devices, not addressable, with global ids in device-table
 * order.  libhdal-mpi (@ref hdal_mpi) does this over MPI.
 * @{
 */

/**
 * Describes this process's devices as a blob for hdal_context_add_process().
 * @param ctx the context.
 * @param[out] blob the blob, owned by the caller (free()).
 * @param[out] len its size in bytes.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_INVALID_ARGUMENT: an argument is NULL.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory, or more devices than the format holds.
 *
 * Thread safety: safe from any thread.
 */
HDAL_API hdal_error *hdal_context_export_devices(const hdal_context *ctx, void **blob, size_t *len);

/**
 * Adds another process's devices to the context, from the blob that process
 * exported.  They are not addressable; devices are renumbered so that ids
 * follow the device-table order (by process index first).
 * @param ctx the context.
 * @param process_index the other process's index.
 * @param blob the blob; read only during the call.
 * @param len its size in bytes.
 * @return NULL on success, else an error owned by the caller, and the context unchanged:
 * - ::HDAL_INVALID_ARGUMENT: @p ctx is NULL, or @p blob NULL with @p len not 0;
 *   @p process_index negative; a malformed or truncated blob (the message says
 *   what and at which byte), a version this hdal does not read, two devices of
 *   one backend with the same local hardware id.
 * - ::HDAL_ALREADY_EXISTS: @p process_index is this process's own, or was already added.
 * - ::HDAL_RESOURCE_EXHAUSTED: out of memory.
 *
 * Thread safety: calls on one context are serialised, but the device ids and
 * table they renumber are read without a lock: do not call while other
 * threads enumerate the context's devices.
 */
HDAL_API hdal_error *hdal_context_add_process(hdal_context *ctx, int process_index, const void *blob, size_t len);

/** @} */

#ifdef __cplusplus
}
#endif
#endif /* HDAL_H */
