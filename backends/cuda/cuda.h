/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — state shared by its files (discovery, driver loading, buffers). */
#ifndef HDAL_CUDA_H
#define HDAL_CUDA_H

#include <pthread.h>
#include <stdbool.h>
#include <hdal/backend.h>
#include "cuda_driver.h"


struct hdal__cuda_state;

typedef struct {
  struct hdal__cuda_state *s;
  int ordinal; /* CUDA's device ordinal: the local hardware id and DLPack device_id */
  CUdevice dev;
  pthread_mutex_t lock; /* guards ctx */
  CUcontext ctx;        /* the primary context, retained on first use; released by finalize */
  CUmemoryPool mempool; /* the device's default memory pool once hdal's pool asked for it (docs/memory.md) */
  bool async;           /* allocations go through cuMemAllocAsync/cuMemFreeAsync on the legacy stream */
} hdal__cuda_device;

typedef struct hdal__cuda_state {
  const hdal_backend_host *host;
  void *lib; /* dlopen handle of the driver */
  hdal__cuda_driver drv;
  int driver_version;
  int ndevices;
  hdal__cuda_device *devices;
} hdal__cuda_state;

/* driver.c */
/* Opens the driver library and resolves every entry point the backend uses,
 * through cuGetProcAddress when the driver has it, by versioned name otherwise. */
HDAL__HIDDEN hdal_error *hdal__cuda_driver_open(const hdal_backend_host *host, hdal_backend_discovery *disc,
                                                const char *path, void **lib, hdal__cuda_driver *drv);
/* "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" */
HDAL__HIDDEN void hdal__cuda_describe(const hdal__cuda_driver *drv, CUresult r, char *buf, size_t len);
/* An error for a failed driver call: "<what>: <describe>", with the code that fits. */
HDAL__HIDDEN hdal_error *hdal__cuda_error(const hdal__cuda_state *s, CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cuda_buffer.c */
HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__cuda_buffer_ops;

#endif /* HDAL_CUDA_H */
