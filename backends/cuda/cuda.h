/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — state shared by its files (discovery, driver loading, buffers). */
#ifndef HDAL_CUDA_H
#define HDAL_CUDA_H

#include <pthread.h>
#include <stdbool.h>
#include <hdal/backend.h>
#include "cuda_driver.h"
#include "nvml.h"
#include "../gpu.h"


typedef struct {
  hdal__gpu_device gpu; /* ordinal, and the default memory pool (cuMemAllocAsync on the legacy stream) */
  CUdevice dev;
  pthread_mutex_t lock; /* guards ctx */
  CUcontext ctx;        /* the primary context, retained on first use; released by finalize */
  char pci[16];         /* its PCI bus id, "0000:34:00.0" (the pci_bus_id attribute): NVML knows it by it */
} hdal__cuda_device;

typedef struct hdal__cuda_state {
  hdal__gpu gpu; /* host, the devices (hdal__cuda_device) */
  void *lib;     /* dlopen handle of the driver */
  hdal__cuda_driver drv;
  int driver_version;
  pthread_mutex_t nvml_lock; /* guards nvml_tried, nvml_lib and nvml: NVML, opened on the first fabric query */
  bool nvml_tried;
  void *nvml_lib; /* dlopen handle of NVML, initialised; NULL: NVML unavailable */
  hdal__nvml nvml;
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

/* nvml.c: NVLink, as NVML says it (docs/cuda.md, "Links"). */
/* Whether NVLink joins a and b, directly or through NVSwitches: true with out->fabric "nvlink",
 * out->fabric_links (the direct links, else the fewer of the two GPUs' links to the switches) and
 * out->bandwidth_mbps 0.  NVML is opened and initialised on the first call of the state, once. */
HDAL__HIDDEN bool hdal__cuda_nvml_fabric(hdal__cuda_state *s, const hdal__cuda_device *a, const hdal__cuda_device *b,
                                         hdal_link *out);
/* Shuts NVML down if the state opened it (at finalize). */
HDAL__HIDDEN void hdal__cuda_nvml_close(hdal__cuda_state *s);

/* cuda_buffer.c: the driver's entry points behind the GPU layer's buffer operations. */
HDAL__HIDDEN extern const hdal__gpu_driver hdal__cuda_gpu_driver;

#endif /* HDAL_CUDA_H */
