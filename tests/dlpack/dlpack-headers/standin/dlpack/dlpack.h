/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for the <dlpack/dlpack.h> of one DLPack release, for hdal's test
 * dlpack-headers.sh only; the release is chosen by HDAL_STANDIN_DLPACK
 * (major * 100 + minor: 6, 8, 100, 101, 102, 103).  Written from the DLPack
 * specification for the test: the version macros, names, values and layout
 * that release's header has, as far as hdal or the test's consumer can touch
 * them, each marked with the release that added it; not the real header. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#ifndef HDAL_STANDIN_DLPACK
#error "dlpack-headers.sh names the release with -DHDAL_STANDIN_DLPACK"
#endif
#define V HDAL_STANDIN_DLPACK

#if V < 100 /* 0.x: 60 is 0.6; the ABI version came with 0.8 */
#define DLPACK_VERSION (HDAL_STANDIN_DLPACK * 10)
#if V >= 8
#define DLPACK_ABI_VERSION 1
#endif
#else
#define DLPACK_MAJOR_VERSION (HDAL_STANDIN_DLPACK / 100)
#define DLPACK_MINOR_VERSION (HDAL_STANDIN_DLPACK % 100)
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if V >= 100
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
#endif

/* From 0.7 on, C++ sees a 32-bit enum. */
#if defined(__cplusplus) && V >= 7
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
#if V >= 7
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
#endif
#if V >= 100
  kDLMAIA = 17,
#endif
#if V >= 102
  kDLTrn = 18,
#endif
} DLDeviceType;

/* 0.6 spells the two counts int; int32_t from 0.7 on. */
#if V >= 7
typedef int32_t hdal_standin_int;
#else
typedef int hdal_standin_int;
#endif

typedef struct {
  DLDeviceType device_type;
  hdal_standin_int device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
#if V >= 8
  kDLBool = 6U,
#endif
#if V >= 101
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
#endif
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void *data;
  DLDevice device;
  hdal_standin_int ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#if V >= 100
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#if V >= 101
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#endif

/* 1.0 and 1.1 declare the struct tag only; the typedef came with 1.2. */
#if V >= 102
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
#endif
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
};
#endif

#if V >= 102 /* the C exchange API */
typedef int (*DLPackManagedTensorAllocator)(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                                            void (*SetError)(void *error_ctx, const char *kind, const char *message));
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void *py_object, DLManagedTensorVersioned **out);
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void *py_object, DLTensor *out);
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id, void **out_current_stream);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned *tensor, void **out_py_object);

typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;

typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;
#endif

#undef V
#ifdef __cplusplus
}
#endif
#endif
