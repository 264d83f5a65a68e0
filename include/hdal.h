/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — Heterogeneous Device Abstraction Layer: the public API.
 *
 * Every fallible call returns an hdal_error*: NULL on success, else an error the
 * caller frees with hdal_error_destroy() (the PJRT C API convention).
 * Option structs start with struct_size: set it to sizeof the struct you were
 * compiled with, so that later versions can add fields.
 */
#ifndef HDAL_H
#define HDAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hdal/dlpack.h>
#include <hdal/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HDAL_BUILDING) && defined(HDAL_HAVE_VISIBILITY)
#define HDAL_API __attribute__((visibility("default")))
#else
#define HDAL_API
#endif

/* ---- Errors -------------------------------------------------------------- */

/* Numbered as absl::StatusCode. */
typedef enum {
  HDAL_OK = 0,
  HDAL_CANCELLED = 1,
  HDAL_UNKNOWN = 2,
  HDAL_INVALID_ARGUMENT = 3,
  HDAL_DEADLINE_EXCEEDED = 4,
  HDAL_NOT_FOUND = 5,
  HDAL_ALREADY_EXISTS = 6,
  HDAL_PERMISSION_DENIED = 7,
  HDAL_RESOURCE_EXHAUSTED = 8,
  HDAL_FAILED_PRECONDITION = 9,
  HDAL_ABORTED = 10,
  HDAL_OUT_OF_RANGE = 11,
  HDAL_UNIMPLEMENTED = 12,
  HDAL_INTERNAL = 13,
  HDAL_UNAVAILABLE = 14,
  HDAL_DATA_LOSS = 15,
  HDAL_UNAUTHENTICATED = 16,
} hdal_code;

typedef struct hdal_error hdal_error;

HDAL_API hdal_code hdal_error_code(const hdal_error *err);
HDAL_API const char *hdal_error_message(const hdal_error *err);
HDAL_API void hdal_error_destroy(hdal_error *err); /* NULL is fine */
HDAL_API const char *hdal_code_name(hdal_code code);

/* ---- Version ------------------------------------------------------------- */

HDAL_API const char *hdal_version_string(void); /* "0.1.0" */

/* ---- Context, backends, devices ----------------------------------------- */

typedef struct hdal_context hdal_context;
typedef struct hdal_device hdal_device;

typedef enum {
  HDAL_RUNTIME_PJRT = 1,        /* a buffer runtime serves the device in this process */
  HDAL_RUNTIME_IFRT_NATIVE = 2, /* listed, but no PjRt-style buffer runtime serves it */
} hdal_runtime_class;

typedef struct {
  size_t struct_size;
  const char *backends;     /* as HDAL_BACKENDS ("cpu,opencl", "-cuda"); NULL: the variable, else all */
  const char *backend_path; /* as HDAL_BACKEND_PATH, searched before the install dir; NULL: the variable */
  /* This process's place among cooperating processes (section 8; set by
   * libhdal-mpi from the rank).  process_count 0: a single process, index 0. */
  int process_index;
  int process_count;
} hdal_context_options;

#define HDAL_CONTEXT_OPTIONS_INIT {sizeof(hdal_context_options), NULL, NULL, 0, 0}

HDAL_API hdal_error *hdal_context_create(const hdal_context_options *opts, hdal_context **out);
HDAL_API void hdal_context_destroy(hdal_context *ctx);
HDAL_API int hdal_context_process_index(const hdal_context *ctx);
HDAL_API int hdal_context_process_count(const hdal_context *ctx);
HDAL_API size_t hdal_context_device_count(const hdal_context *ctx);
HDAL_API hdal_device *hdal_context_device(const hdal_context *ctx, size_t index);
HDAL_API size_t hdal_context_backend_count(const hdal_context *ctx);
HDAL_API const char *hdal_context_backend_name(const hdal_context *ctx, size_t i);
HDAL_API const char *hdal_context_backend_status(const hdal_context *ctx, size_t i);

HDAL_API int hdal_device_id(const hdal_device *d);
HDAL_API const char *hdal_device_platform(const hdal_device *d);
HDAL_API const char *hdal_device_kind(const hdal_device *d);
HDAL_API int hdal_device_local_hardware_id(const hdal_device *d);
HDAL_API int hdal_device_process_index(const hdal_device *d);
HDAL_API bool hdal_device_is_addressable(const hdal_device *d);
HDAL_API hdal_runtime_class hdal_device_runtime_class(const hdal_device *d);
HDAL_API const char *hdal_device_runtime_class_reason(const hdal_device *d);
HDAL_API DLDevice hdal_device_dlpack_device(const hdal_device *d);
HDAL_API uint64_t hdal_device_memory_bytes(const hdal_device *d);
HDAL_API int hdal_device_numa_node(const hdal_device *d);
HDAL_API size_t hdal_device_attribute_count(const hdal_device *d);
HDAL_API bool hdal_device_attribute(const hdal_device *d, size_t i, const char **key, const char **value);
HDAL_API const char *hdal_device_attribute_get(const hdal_device *d, const char *key);

/* ---- Capsules (PyCapsule-like holders of DLPack tensors) ----------------- */

typedef struct hdal_capsule hdal_capsule;

HDAL_API hdal_capsule *hdal_capsule_wrap(DLManagedTensor *t);                    /* "dltensor" */
HDAL_API hdal_capsule *hdal_capsule_wrap_versioned(DLManagedTensorVersioned *t); /* "dltensor_versioned" */
HDAL_API hdal_capsule *hdal_capsule_new(const char *name, void *pointer);
HDAL_API const char *hdal_capsule_name(const hdal_capsule *c);
HDAL_API void *hdal_capsule_pointer(const hdal_capsule *c);
HDAL_API void *hdal_capsule_take(hdal_capsule *c);
HDAL_API void hdal_capsule_destroy(hdal_capsule *c);

/* ---- Buffers and DLPack --------------------------------------------------- */

typedef struct hdal_buffer hdal_buffer;

typedef enum {
  HDAL_COPY_IF_NEEDED = 0,
  HDAL_COPY_ALWAYS = 1,
  HDAL_COPY_NEVER = 2,
} hdal_copy_mode;

typedef struct {
  size_t struct_size;
  hdal_copy_mode copy;
  bool has_stream;
  intptr_t stream; /* cudaStream_t / CUstream, or cl_command_queue */
} hdal_import_options;

#define HDAL_IMPORT_OPTIONS_INIT {sizeof(hdal_import_options), HDAL_COPY_IF_NEEDED, false, 0}

typedef struct {
  size_t struct_size;
  DLPackVersion max_version; /* {0,0}: legacy "dltensor" */
  bool has_dl_device;
  DLDevice dl_device;
  hdal_copy_mode copy;
  bool has_stream;
  intptr_t stream;
} hdal_export_options;

#define HDAL_EXPORT_OPTIONS_INIT {sizeof(hdal_export_options), {0, 0}, false, {kDLCPU, 0}, HDAL_COPY_IF_NEEDED, false, 0}

HDAL_API hdal_error *hdal_buffer_from_dlpack(hdal_context *ctx, hdal_capsule *capsule, hdal_device *device,
                                             const hdal_import_options *opts, hdal_buffer **out);
HDAL_API hdal_error *hdal_buffer_to_dlpack(hdal_buffer *buf, const hdal_export_options *opts, hdal_capsule **out);

HDAL_API hdal_device *hdal_buffer_device(const hdal_buffer *b);
HDAL_API int32_t hdal_buffer_ndim(const hdal_buffer *b);
HDAL_API const int64_t *hdal_buffer_shape(const hdal_buffer *b);
HDAL_API const int64_t *hdal_buffer_strides(const hdal_buffer *b);
HDAL_API DLDataType hdal_buffer_dtype(const hdal_buffer *b);
HDAL_API void *hdal_buffer_data(const hdal_buffer *b);
HDAL_API bool hdal_buffer_is_view(const hdal_buffer *b);
HDAL_API bool hdal_buffer_is_read_only(const hdal_buffer *b);
HDAL_API hdal_error *hdal_buffer_copy_to_host(const hdal_buffer *b, void *dst, size_t nbytes);
HDAL_API hdal_error *hdal_buffer_copy_to_device(const hdal_buffer *b, hdal_device *dst, hdal_buffer **out);
HDAL_API void hdal_buffer_retain(hdal_buffer *b);
HDAL_API void hdal_buffer_release(hdal_buffer *b);

/* ---- Processes ----------------------------------------------------------- */

HDAL_API hdal_error *hdal_context_export_devices(const hdal_context *ctx, void **blob, size_t *len);
HDAL_API hdal_error *hdal_context_add_process(hdal_context *ctx, int process_index, const void *blob, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HDAL_H */
