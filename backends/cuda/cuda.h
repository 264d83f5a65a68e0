/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — state shared by its files (discovery, driver loading, buffers). */
#ifndef HDAL_CUDA_H
#define HDAL_CUDA_H

#include <pthread.h>
#include <stdbool.h>
#include <hdal/backend.h>
#include "cuda_driver.h"
#include "../gpu.h"


typedef struct {
  hdal__gpu_device gpu; /* ordinal, and the default memory pool (cuMemAllocAsync on the legacy stream) */
  CUdevice dev;
  pthread_mutex_t lock; /* guards ctx */
  CUcontext ctx;        /* the primary context, retained on first use; released by finalize */
} hdal__cuda_device;

typedef struct hdal__cuda_state {
  hdal__gpu gpu; /* host, the devices (hdal__cuda_device) */
  void *lib;     /* dlopen handle of the driver */
  hdal__cuda_driver drv;
  int driver_version;
} hdal__cuda_state;

/* driver.c */
/* Opens the driver library and resolves every entry point the backend uses,
 * through cuGetProcAddress when the driver has it, by versioned name otherwise. */
HDAL__HIDDEN hdal_error *hdal__cuda_driver_open(const hdal_backend_host *host, hdal_backend_discovery *disc,
                                                const char *path, void **lib, hdal__cuda_driver *drv);
/* "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" */
HDAL__HIDDEN void hdal__cuda_describe(const hdal__cuda_driver *drv, CUresult r, char *buf, size_t len);
/* The hdal_code of a CUresult. */
HDAL__HIDDEN hdal_code hdal__cuda_code_of(CUresult r);
/* An error for a failed driver call: "<what>: <describe>", with the code that fits. */
#define hdal__cuda_error(s, r, ...) hdal__gpu_error(&(s)->gpu, (r), __VA_ARGS__)

/* cuda_buffer.c: the driver's entry points behind the GPU layer's buffer operations. */
HDAL__HIDDEN extern const hdal__gpu_driver hdal__cuda_gpu_driver;

#endif /* HDAL_CUDA_H */
