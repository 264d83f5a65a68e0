/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — the driver-API subset it uses, declared here.
 *
 * No CUDA header or library is needed to build hdal: these declarations follow
 * the driver API's documented C ABI (64-bit CUdeviceptr, the _v2 entry points),
 * and the functions are found at run time in libcuda.so.1.  Only what the
 * backend calls is declared.
 */
#ifndef HDAL_CUDA_DRIVER_H
#define HDAL_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult; /* an enum in the driver's header: int-sized */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct {
  unsigned char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
};

enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

enum {
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};

enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3, CU_MEMORYTYPE_UNIFIED = 4 };
enum { CU_EVENT_DISABLE_TIMING = 2 };
enum { CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 };
enum { CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5 };

/* cuGetProcAddress (driver 11.3+; the 4-argument form every later driver keeps). */
typedef CUresult (*hdal__cuGetProcAddress_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags);

/* The entry points, resolved once per context (see driver.c for the names). */
typedef struct {
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult r, const char **name);
  CUresult (*cuGetErrorString)(CUresult r, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
  CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice dev);
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);
  CUresult (*cuCtxPushCurrent)(CUcontext ctx);
  CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyPeer)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                size_t bytes, CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned int flags);
  CUresult (*cuEventCreate)(CUevent *event, unsigned int flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuPointerGetAttribute)(void *data, int attribute, CUdeviceptr ptr);
  CUresult (*cuPointerGetAttributes)(unsigned int n, int *attributes, void **data, CUdeviceptr ptr);
  /* Optional (NULL when the driver lacks them): fences, and the stream-ordered allocator (11.2+). */
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool *pool, CUdevice dev);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool pool, int attribute, void *value);
  CUresult (*cuMemPoolGetAttribute)(CUmemoryPool pool, int attribute, void *value);
  CUresult (*cuMemPoolTrimTo)(CUmemoryPool pool, size_t min_bytes_to_keep);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *ptr, size_t bytes, CUstream stream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr ptr, CUstream stream);
  /* Optional too: peer access between two devices (hdal_device_link); NULL: none reported. */
  CUresult (*cuDeviceCanAccessPeer)(int *can, CUdevice dev, CUdevice peer);
  CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags);
} hdal__cuda_driver;

#endif /* HDAL_CUDA_DRIVER_H */
