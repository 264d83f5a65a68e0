/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — the HIP runtime API subset it uses, declared here.
 *
 * No ROCm header or library is needed to build hdal: these declarations follow
 * the HIP runtime's documented C ABI, and the functions are found at run time
 * in libamdhip64.so.  Two ABIs are in the field and differ where nothing
 * would notice (docs/rocm.md): ROCm 6.0 renumbered hipMemoryType and moved
 * hipGetDeviceProperties to hipGetDevicePropertiesR0600 with another struct.
 * The module asks the runtime its version and reads each the way it writes.
 */
#ifndef HDAL_HIP_RUNTIME_H
#define HDAL_HIP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t; /* an enum in HIP's header: int-sized */
typedef int hipDevice_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct {
  char bytes[16];
} hipUUID;

enum {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorDeinitialized = 4,
  hipErrorInsufficientDriver = 35,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidContext = 201,
  hipErrorInvalidHandle = 400,
  hipErrorNotReady = 600, /* hipEventQuery: the work before the event is not done yet */
  hipErrorNotSupported = 801,
};

/* hipMemcpyDefault: the runtime tells host from device memory by address (ROCm
 * has one address space), so pinned host memory behind a device handle works. */
enum { hipMemcpyDefault = 4 };
enum { hipEventDisableTiming = 2 };
/* hipMemPoolAttr: CUDA's numbers, in both ABIs. */
enum { hipMemPoolAttrReleaseThreshold = 4, hipMemPoolAttrReservedMemCurrent = 5 };

/* hipRuntimeGetVersion: major * 10000000 + minor * 100000 + patch. */
#define HDAL_HIP_VERSION_MAJOR(v) ((v) / 10000000)
#define HDAL_HIP_VERSION_MINOR(v) ((v) / 100000 % 100)
#define HDAL_HIP_VERSION_PATCH(v) ((v) % 100000)

/* hipPointerAttribute_t: one layout in both ABIs (the first member was
 * renamed, from memoryType to type, along with its values). */
typedef struct {
  int type;
  int device;
  void *devicePointer;
  void *hostPointer;
  int isManaged;
  unsigned allocationFlags;
} hdal__hip_pointer_attributes;

/* hipMemoryType, ROCm 5.x: Host 0, Device 1, Array 2, Unified 3; memory the
 * runtime does not know is an error of hipPointerGetAttributes. */
enum { HIP5_MEMORY_HOST = 0, HIP5_MEMORY_DEVICE = 1 };
/* ROCm 6.0 and later: Unregistered 0 (unknown memory is no error), Host 1,
 * Device 2, Managed 3, Array 10, Unified 11. */
enum { HIP6_MEMORY_UNREGISTERED = 0, HIP6_MEMORY_HOST = 1, HIP6_MEMORY_DEVICE = 2, HIP6_MEMORY_MANAGED = 3 };

/* hipDeviceProp_t is read at the offsets of the members the module uses: the
 * ROCm 5.x struct (hipGetDeviceProperties, 792 bytes) and the 6.0 one
 * (hipGetDevicePropertiesR0600, 1472 bytes).  The buffer handed over is larger
 * than either, so a runtime that writes a little more harms nothing. */
typedef struct {
  const char *get_properties; /* the entry point that fills this layout */
  size_t multi_processor_count;
  size_t gcn_arch_name; /* char[256] */
} hdal__hip_props_layout;
#define HDAL_HIP_PROPS_BUFFER 4096

/* The entry points, resolved once per context (see runtime.c for the names). */
typedef struct {
  hipError_t (*hipInit)(unsigned int flags);
  hipError_t (*hipRuntimeGetVersion)(int *version);
  hipError_t (*hipDriverGetVersion)(int *version);
  const char *(*hipGetErrorName)(hipError_t r);
  const char *(*hipGetErrorString)(hipError_t r);
  hipError_t (*hipGetDeviceCount)(int *count);
  hipError_t (*hipDeviceGet)(hipDevice_t *dev, int ordinal);
  hipError_t (*hipDeviceGetName)(char *name, int len, hipDevice_t dev);
  hipError_t (*hipDeviceGetUuid)(hipUUID *uuid, hipDevice_t dev);
  hipError_t (*hipDeviceGetPCIBusId)(char *bus_id, int len, int ordinal);
  hipError_t (*hipDeviceTotalMem)(size_t *bytes, hipDevice_t dev);
  hipError_t (*hipGetDevice)(int *ordinal);
  hipError_t (*hipSetDevice)(int ordinal);
  hipError_t (*hipMalloc)(void **ptr, size_t bytes);
  hipError_t (*hipFree)(void *ptr);
  hipError_t (*hipMemcpy)(void *dst, const void *src, size_t bytes, int kind);
  hipError_t (*hipMemcpyAsync)(void *dst, const void *src, size_t bytes, int kind, hipStream_t stream);
  hipError_t (*hipMemcpyPeer)(void *dst, int dst_ordinal, const void *src, int src_ordinal, size_t bytes);
  hipError_t (*hipMemcpyPeerAsync)(void *dst, int dst_ordinal, const void *src, int src_ordinal, size_t bytes,
                                   hipStream_t stream);
  hipError_t (*hipStreamSynchronize)(hipStream_t stream);
  hipError_t (*hipStreamWaitEvent)(hipStream_t stream, hipEvent_t event, unsigned int flags);
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t *event, unsigned int flags);
  hipError_t (*hipEventRecord)(hipEvent_t event, hipStream_t stream);
  hipError_t (*hipEventDestroy)(hipEvent_t event);
  hipError_t (*hipPointerGetAttributes)(hdal__hip_pointer_attributes *attributes, const void *ptr);
  /* The stream-ordered allocator (ROCm 5.1 and later, either ABI): optional,
   * NULL when the runtime lacks it, and then hdal's pool serves (docs/memory.md). */
  hipError_t (*hipDeviceGetDefaultMemPool)(hipMemPool_t *pool, int ordinal);
  hipError_t (*hipMemPoolSetAttribute)(hipMemPool_t pool, int attr, void *value);
  hipError_t (*hipMemPoolGetAttribute)(hipMemPool_t pool, int attr, void *value);
  hipError_t (*hipMemPoolTrimTo)(hipMemPool_t pool, size_t keep);
  hipError_t (*hipMallocAsync)(void **ptr, size_t bytes, hipStream_t stream);
  hipError_t (*hipFreeAsync)(void *ptr, hipStream_t stream);
  /* Optional too: hdal's pool fences with them (docs/memory.md); without
   * them, a block freed into it goes back to the runtime at once. */
  hipError_t (*hipEventQuery)(hipEvent_t event);
  hipError_t (*hipEventSynchronize)(hipEvent_t event);
  /* Optional: peer access between two devices (hdal_device_link); NULL: none reported. */
  hipError_t (*hipDeviceCanAccessPeer)(int *can, int ordinal, int peer_ordinal);
  hipError_t (*hipDeviceEnablePeerAccess)(int peer_ordinal, unsigned flags);
  /* Resolved after the version is known: the layout's own entry point. */
  hipError_t (*hipGetDeviceProperties)(void *props, int ordinal);
} hdal__hip_runtime;

#endif /* HDAL_HIP_RUNTIME_H */
