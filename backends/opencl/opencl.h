/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal OpenCL backend — state shared by discovery and the buffer operations.
 *
 * Everything here is private to the module: it speaks to the core only through
 * the descriptor and the host table of include/hdal/backend.h.
 */
#ifndef HDAL_OPENCL_H
#define HDAL_OPENCL_H

/* The 3.0 headers declare every query used here; clCreateCommandQueue (1.2) is
 * used on purpose, since 1.x platforms lack its successor. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <hdal/backend.h>


/* A queue on `dev` in a context hdal did not create (an imported cl_mem's). */
typedef struct hdal__ocl_foreign_queue {
  cl_context context;
  cl_command_queue queue;
  struct hdal__ocl_foreign_queue *next;
} hdal__ocl_foreign_queue;

typedef struct {
  const hdal_backend_host *host;
  cl_platform_id platform;
  cl_device_id id;
  int flat_index;       /* the DLPack device_id and local hardware id */
  bool servable;        /* PjRt-compatible */
  uint64_t max_alloc;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  uint64_t base_align;  /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
  bool serialise_transfers; /* a PoCL device: transfers one at a time (opencl_buffer.c) */
  pthread_mutex_t lock; /* guards the lazily created members below */
  cl_context context;   /* hdal's own, one device */
  cl_command_queue queue;
  hdal__ocl_foreign_queue *foreign;
} hdal__ocl_device;

typedef struct {
  const hdal_backend_host *host;
  hdal__ocl_device **devices;
  size_t ndevices;
} hdal__ocl_state;

/* "CL_INVALID_VALUE" etc.; "CL_UNKNOWN_ERROR" for codes it does not know. */
HDAL__HIDDEN const char *hdal__ocl_error_name(cl_int err);
/* An hdal error for a failed OpenCL call: "what: CL_NAME (code)", with the code
 * mapped (out of memory -> HDAL_RESOURCE_EXHAUSTED, bad handles -> INVALID_ARGUMENT). */
HDAL__HIDDEN hdal_error *hdal__ocl_error(const hdal_backend_host *host, const char *what, cl_int err);

/* What PoCL cannot do concurrently (discovery, making and releasing contexts
 * and queues) runs under this process-wide lock (opencl.c). */
HDAL__HIDDEN void hdal__ocl_runtime_lock(void);
HDAL__HIDDEN void hdal__ocl_runtime_unlock(void);

/* NULL, or why the runtimes must not be started in this process: PoCL would
 * abort it (too little memory in hwloc's topology or RLIMIT_DATA; preflight.c). */
HDAL__HIDDEN hdal_error *hdal__ocl_preflight(const hdal_backend_host *host, hdal_backend_discovery *disc);

/* hdal's context on the device, created on first need (thread-safe). */
HDAL__HIDDEN cl_int hdal__ocl_device_context(hdal__ocl_device *d, cl_context *out);
HDAL__HIDDEN void hdal__ocl_device_free(hdal__ocl_device *d);

HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__ocl_buffer_ops;

#endif /* HDAL_OPENCL_H */
