/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — loading the driver at run time and naming its errors.
 *
 * Entry points are resolved with cuGetProcAddress when the driver exports it
 * (11.3+), asking for the API as of CUDA_API_VERSION, which yields the same
 * functions as the versioned names below; an older driver, or a symbol that
 * cuGetProcAddress does not give, is looked up by its versioned name.  The
 * unversioned names of a real driver are the CUDA 3.x ABIs (32-bit pointers,
 * legacy semantics) and must never be used.
 */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "../library_file.h"

/* The API version the declarations in cuda_driver.h describe. */
#define CUDA_API_VERSION 11030

typedef struct {
  const char *name;      /* the name cuGetProcAddress knows */
  const char *versioned; /* the exported symbol with the ABI we declare */
  size_t offset;
  bool optional; /* left NULL when missing: the backend does without */
} entry;

#define ENTRY(fn, sym) {#fn, sym, offsetof(hdal__cuda_driver, fn), false}
#define OPTIONAL(fn, sym) {#fn, sym, offsetof(hdal__cuda_driver, fn), true}
static const entry entries[] = {
    ENTRY(cuInit, "cuInit"),
    ENTRY(cuDriverGetVersion, "cuDriverGetVersion"),
    ENTRY(cuGetErrorName, "cuGetErrorName"),
    ENTRY(cuGetErrorString, "cuGetErrorString"),
    ENTRY(cuDeviceGetCount, "cuDeviceGetCount"),
    ENTRY(cuDeviceGet, "cuDeviceGet"),
    ENTRY(cuDeviceGetName, "cuDeviceGetName"),
    ENTRY(cuDeviceGetUuid, "cuDeviceGetUuid"),
    ENTRY(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    ENTRY(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
    ENTRY(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
    ENTRY(cuMemAlloc, "cuMemAlloc_v2"),
    ENTRY(cuMemFree, "cuMemFree_v2"),
    ENTRY(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
    ENTRY(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    ENTRY(cuMemcpyPeer, "cuMemcpyPeer"),
    ENTRY(cuMemcpyPeerAsync, "cuMemcpyPeerAsync"),
    ENTRY(cuStreamSynchronize, "cuStreamSynchronize"),
    ENTRY(cuStreamWaitEvent, "cuStreamWaitEvent"),
    ENTRY(cuEventCreate, "cuEventCreate"),
    ENTRY(cuEventRecord, "cuEventRecord"),
    ENTRY(cuEventDestroy, "cuEventDestroy_v2"),
    ENTRY(cuPointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(cuPointerGetAttributes, "cuPointerGetAttributes"),
    OPTIONAL(cuEventQuery, "cuEventQuery"),
    OPTIONAL(cuEventSynchronize, "cuEventSynchronize"),
    OPTIONAL(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"),
    OPTIONAL(cuMemPoolSetAttribute, "cuMemPoolSetAttribute"),
    OPTIONAL(cuMemPoolGetAttribute, "cuMemPoolGetAttribute"),
    OPTIONAL(cuMemPoolTrimTo, "cuMemPoolTrimTo"),
    OPTIONAL(cuMemAllocAsync, "cuMemAllocAsync"),
    OPTIONAL(cuMemFreeAsync, "cuMemFreeAsync"),
    OPTIONAL(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
    OPTIONAL(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
};

hdal_error *hdal__cuda_driver_open(const hdal_backend_host *host, hdal_backend_discovery *disc, const char *path,
                                   void **lib, hdal__cuda_driver *drv) {
  /* RTLD_NODELETE (hdal__library_open): the driver registers exit handlers. */
  char why[HDAL__LIBRARY_WHY_MAX];
  void *h = hdal__library_open(path, why);
  if (!h) return host->error_new(HDAL_UNAVAILABLE, "%s", why);
  hdal__cuGetProcAddress_fn gpa;
  *(void **)&gpa = dlsym(h, "cuGetProcAddress");
  host->debug(disc, "%s: resolving entry points %s", path,
              gpa ? "through cuGetProcAddress" : "by versioned name (no cuGetProcAddress)");
  memset(drv, 0, sizeof *drv);
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *fn = NULL;
    if (gpa && gpa(entries[i].name, &fn, CUDA_API_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS)
      fn = NULL;
    if (!fn) fn = dlsym(h, entries[i].versioned);
    if (!fn && entries[i].optional) continue;
    if (!fn) {
      dlclose(h);
      return host->error_new(HDAL_UNAVAILABLE, "%s: the driver has no entry point %s", path, entries[i].versioned);
    }
    memcpy((char *)drv + entries[i].offset, &fn, sizeof fn);
  }
  *lib = h;
  return NULL;
}

void hdal__cuda_describe(const hdal__cuda_driver *drv, CUresult r, char *buf, size_t len) {
  const char *name = NULL, *text = NULL;
  if (drv->cuGetErrorName && drv->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (drv->cuGetErrorString && drv->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
  if (name && text)
    snprintf(buf, len, "%s (%d): %s", name, r, text);
  else
    snprintf(buf, len, "%s (%d)", name ? name : "CUresult", r);
}

hdal_code hdal__cuda_code_of(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: return HDAL_RESOURCE_EXHAUSTED;
  case CUDA_ERROR_INVALID_VALUE:
  case CUDA_ERROR_INVALID_HANDLE:
  case CUDA_ERROR_INVALID_DEVICE: return HDAL_INVALID_ARGUMENT;
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_INVALID_CONTEXT: return HDAL_FAILED_PRECONDITION;
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
  case CUDA_ERROR_NO_DEVICE: return HDAL_UNAVAILABLE;
  default: return HDAL_INTERNAL;
  }
}
