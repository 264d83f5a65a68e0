/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — state shared by its files (discovery, runtime loading, buffers). */
#ifndef HDAL_ROCM_H
#define HDAL_ROCM_H

#include <stdbool.h>
#include <hdal/backend.h>
#include "hip_runtime.h"


struct hdal__rocm_state;

typedef struct {
  struct hdal__rocm_state *s;
  int ordinal; /* HIP's device ordinal: the local hardware id and DLPack device_id */
  bool async;   /* allocations come from the device's default memory pool (hipMallocAsync) */
  hipMemPool_t mempool;
} hdal__rocm_device;

typedef struct hdal__rocm_state {
  const hdal_backend_host *host;
  void *lib; /* dlopen handle of the runtime */
  hdal__hip_runtime rt;
  int runtime_version, driver_version;
  int abi; /* 5 or 6: the ROCm ABI the runtime speaks (hip_runtime.h) */
  const hdal__hip_props_layout *props;
  int ndevices;
  hdal__rocm_device *devices;
} hdal__rocm_state;

/* runtime.c */
/* Opens the runtime (HDAL_ROCM_LIBRARY, else libamdhip64.so and its versioned
 * sonames), resolves every entry point, asks the version and binds the
 * declarations of that ABI.  *path: the file opened (static or the variable's). */
HDAL__HIDDEN hdal_error *hdal__rocm_runtime_open(hdal__rocm_state *s, hdal_backend_discovery *disc, const char **path);
/* "hipErrorOutOfMemory (2): out of memory" */
HDAL__HIDDEN void hdal__rocm_describe(const hdal__hip_runtime *rt, hipError_t r, char *buf, size_t len);
/* An error for a failed runtime call: "<what>: <describe>", with the code that fits. */
HDAL__HIDDEN hdal_error *hdal__rocm_error(const hdal__rocm_state *s, hipError_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the runtime has every entry point of the stream-ordered allocator. */
HDAL__HIDDEN bool hdal__rocm_has_mempools(const hdal__hip_runtime *rt);

/* rocm_buffer.c */
HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__rocm_buffer_ops;
/* Gives back what the devices' default memory pools cache for hdal (at finalize). */
HDAL__HIDDEN void hdal__rocm_pools_trim(hdal__rocm_state *s);

#endif /* HDAL_ROCM_H */
