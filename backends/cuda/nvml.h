/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — the subset of NVML (nvml.h, the NVIDIA Management Library) the module uses for
 * NVLink (nvml.c), declared here: nothing of NVML is needed to build, and libnvidia-ml.so.1 is opened
 * with dlopen on the first fabric query, never linked.  The layouts and values are NVML's own. */
#ifndef HDAL_CUDA_NVML_H
#define HDAL_CUDA_NVML_H

#include <stdbool.h>

typedef int nvmlReturn_t; /* an enum in nvml.h */
typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlPciInfo_t as of NVML 9 (the _v2 calls): busIdLegacy first, busId "00000000:34:00.0". */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

enum {
  NVML_SUCCESS = 0,
  NVML_FEATURE_ENABLED = 1,           /* nvmlEnableState_t */
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 2, /* nvmlIntNvLinkDeviceType_t: GPU 0, IBMNPU 1, SWITCH 2, UNKNOWN 0xff */
  NVML_NVLINK_MAX_LINKS = 18,
};

/* The entry points, resolved by name; nvmlDeviceGetNvLinkRemoteDeviceType may be NULL (older NVML). */
typedef struct {
  nvmlReturn_t (*nvmlInit_v2)(void);
  nvmlReturn_t (*nvmlShutdown)(void);
  nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2)(const char *pciBusId, nvmlDevice_t *device);
  nvmlReturn_t (*nvmlDeviceGetNvLinkState)(nvmlDevice_t device, unsigned int link, int *isActive);
  nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2)(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci);
  nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType)(nvmlDevice_t device, unsigned int link, int *type);
} hdal__nvml;

#endif /* HDAL_CUDA_NVML_H */
