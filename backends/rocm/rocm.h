/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — state shared by its files (discovery, runtime loading, buffers). */
#ifndef HDAL_ROCM_H
#define HDAL_ROCM_H

#include <stdbool.h>
#include <hdal/backend.h>
#include "hip_runtime.h"
#include "../gpu.h"


/* A device is the GPU layer's alone: its ordinal, and the default memory pool
 * (hipMallocAsync on the null stream). */
/* A device: the GPU layer's, and where it is on PCI, for the kernel driver's links (kfd.c). */
typedef struct {
  hdal__gpu_device gpu;
  bool has_pci;
  unsigned domain, bus, slot, function;
} hdal__rocm_device;

typedef struct hdal__rocm_state {
  hdal__gpu gpu; /* host, the devices (hdal__rocm_device) */
  void *lib;     /* dlopen handle of the runtime */
  hdal__hip_runtime rt;
  int runtime_version, driver_version;
  int abi; /* 5 or 6: the ROCm ABI the runtime speaks (hip_runtime.h) */
  const hdal__hip_props_layout *props;
} hdal__rocm_state;

/* runtime.c */
/* Opens the runtime (HDAL_ROCM_LIBRARY, else libamdhip64.so and its versioned
 * sonames), resolves every entry point, asks the version and binds the
 * declarations of that ABI.  *path: the file opened (static or the variable's). */
HDAL__HIDDEN hdal_error *hdal__rocm_runtime_open(hdal__rocm_state *s, hdal_backend_discovery *disc, const char **path);
/* "hipErrorOutOfMemory (2): out of memory" */
HDAL__HIDDEN void hdal__rocm_describe(const hdal__hip_runtime *rt, hipError_t r, char *buf, size_t len);
/* The hdal_code of a hipError_t. */
HDAL__HIDDEN hdal_code hdal__rocm_code_of(hipError_t r);
/* An error for a failed runtime call: "<what>: <describe>", with the code that fits. */
#define hdal__rocm_error(s, r, ...) hdal__gpu_error(&(s)->gpu, (r), __VA_ARGS__)

/* Whether the runtime has every entry point of the stream-ordered allocator. */
HDAL__HIDDEN bool hdal__rocm_has_mempools(const hdal__hip_runtime *rt);

/* kfd.c: whether the amdgpu kernel driver's topology (/sys/class/kfd/kfd/topology, under HDAL_FSROOT) has an
 * XGMI link between the two devices: true with out's fabric, bandwidth (0 where not given) set. */
HDAL__HIDDEN bool hdal__rocm_kfd_fabric(const hdal__rocm_device *a, const hdal__rocm_device *b, hdal_link *out);

/* rocm_buffer.c: the runtime's entry points behind the GPU layer's buffer operations. */
HDAL__HIDDEN extern const hdal__gpu_driver hdal__rocm_gpu_driver;

#endif /* HDAL_ROCM_H */
