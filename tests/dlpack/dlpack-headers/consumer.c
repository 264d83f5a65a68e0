/* SPDX-License-Identifier: BSD-3-Clause */
/* A consumer of <hdal.h> for dlpack-headers.sh: compiled (not run) against the
 * stand-in <dlpack/dlpack.h> of each DLPack release, as C and as C++.  It uses
 * what a DLPack 1.3 consumer uses, and checks at compile time that values and
 * layout are the specification's whatever the header hdal was given.
 * EXPECT_HEADER_VERSION: the stand-in's version as HDAL_DLPACK_HEADER_VERSION
 * reads it (6 for 0.6, 100 for 1.0). */
#include <hdal.h>
#include <hdal/backend.h>
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
#define CHECK(cond, what) static_assert(cond, what)
#else
#define CHECK(cond, what) _Static_assert(cond, what)
#endif

#ifndef EXPECT_HEADER_VERSION
#error "compile with -DEXPECT_HEADER_VERSION=N"
#endif
CHECK(HDAL_DLPACK_HEADER_VERSION == EXPECT_HEADER_VERSION, "the stand-in header is the one hdal read");
#if EXPECT_HEADER_VERSION < 100
CHECK(HDAL_DLPACK_COMPAT == 1, "a 0.x header: the versioned tensor is hdal's");
#elif defined(HDAL_DLPACK_COMPAT)
#error "HDAL_DLPACK_COMPAT with a 1.x header"
#endif

/* Device types, data type codes and flags: the specification's values. */
CHECK(kDLCPU == 1 && kDLCUDA == 2 && kDLOpenCL == 4 && kDLROCM == 10 && kDLCUDAManaged == 13, "device types of 0.6");
CHECK(kDLOneAPI == 14 && kDLWebGPU == 15 && kDLHexagon == 16, "device types of 0.7");
CHECK(kDLMAIA == 17, "device type of 1.0");
CHECK(kDLTrn == 18, "device type of 1.2");
CHECK(kDLInt == 0 && kDLUInt == 1 && kDLFloat == 2 && kDLBfloat == 4 && kDLComplex == 5, "type codes of 0.6");
CHECK(kDLBool == 6, "type code of 0.8");
CHECK(kDLFloat8_e3m4 == 7 && kDLFloat8_e4m3 == 8 && kDLFloat8_e4m3b11fnuz == 9 && kDLFloat8_e4m3fn == 10 &&
          kDLFloat8_e4m3fnuz == 11 && kDLFloat8_e5m2 == 12 && kDLFloat8_e5m2fnuz == 13 && kDLFloat8_e8m0fnu == 14,
      "float8 codes of 1.1");
CHECK(kDLFloat6_e2m3fn == 15 && kDLFloat6_e3m2fn == 16 && kDLFloat4_e2m1fn == 17, "float6 and float4 codes of 1.1");
CHECK(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2 &&
          DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED == 4,
      "flags");

/* Layout: DLPackVersion, DLTensor, DLManagedTensorVersioned. */
#define PTR sizeof(void *)
CHECK(sizeof(DLPackVersion) == 8 && offsetof(DLPackVersion, major) == 0 && offsetof(DLPackVersion, minor) == 4,
      "DLPackVersion");
CHECK(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4, "DLDevice, DLDataType");
CHECK(offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == PTR && offsetof(DLTensor, ndim) == PTR + 8 &&
          offsetof(DLTensor, dtype) == PTR + 12 && offsetof(DLTensor, shape) == (PTR + 16 + PTR - 1) / PTR * PTR &&
          offsetof(DLTensor, strides) == offsetof(DLTensor, shape) + PTR &&
          offsetof(DLTensor, byte_offset) % 8 == 0 && offsetof(DLTensor, byte_offset) >= offsetof(DLTensor, strides) + PTR,
      "DLTensor");
CHECK(offsetof(DLManagedTensorVersioned, version) == 0 && offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
          offsetof(DLManagedTensorVersioned, deleter) == 8 + PTR &&
          offsetof(DLManagedTensorVersioned, flags) == (8 + 2 * PTR + 7) / 8 * 8 &&
          offsetof(DLManagedTensorVersioned, dl_tensor) == offsetof(DLManagedTensorVersioned, flags) + 8 &&
          sizeof(DLManagedTensorVersioned) == offsetof(DLManagedTensorVersioned, dl_tensor) + sizeof(DLTensor),
      "DLManagedTensorVersioned");
#if defined(__x86_64__) || defined(__aarch64__)
CHECK(sizeof(DLTensor) == 48 && sizeof(DLManagedTensorVersioned) == 80, "LP64 sizes");
#endif

/* The C exchange API table. */
CHECK(sizeof(DLPackExchangeAPIHeader) == 8 + PTR && offsetof(DLPackExchangeAPIHeader, prev_api) == 8,
      "DLPackExchangeAPIHeader");
CHECK(offsetof(DLPackExchangeAPI, header) == 0 &&
          offsetof(DLPackExchangeAPI, managed_tensor_allocator) == sizeof(DLPackExchangeAPIHeader) &&
          offsetof(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync) == sizeof(DLPackExchangeAPIHeader) + PTR &&
          offsetof(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync) == sizeof(DLPackExchangeAPIHeader) + 2 * PTR &&
          offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync) == sizeof(DLPackExchangeAPIHeader) + 3 * PTR &&
          offsetof(DLPackExchangeAPI, current_work_stream) == sizeof(DLPackExchangeAPIHeader) + 4 * PTR &&
          sizeof(DLPackExchangeAPI) == sizeof(DLPackExchangeAPIHeader) + 5 * PTR,
      "DLPackExchangeAPI");

static void consumer_deleter(DLManagedTensorVersioned *self) { (void)self; }
static int consumer_stream(DLDeviceType type, int32_t id, void **out) {
  (void)type;
  (void)id;
  *out = NULL;
  return 0;
}
static int consumer_allocate(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                             void (*set_error)(void *error_ctx, const char *kind, const char *message)) {
  (void)prototype;
  *out = NULL;
  set_error(error_ctx, "MemoryError", "not in this test");
  return -1;
}

int main(void) {
  static int64_t shape[1] = {4}, strides[1] = {1};
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = HDAL_DLPACK_MAJOR;
  m.version.minor = HDAL_DLPACK_MINOR;
  m.deleter = consumer_deleter;
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  m.dl_tensor.device.device_type = (DLDeviceType)kDLOneAPI;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype.code = kDLFloat8_e4m3fn;
  m.dl_tensor.dtype.bits = 8;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  m.dl_tensor.strides = strides;
  DLDataType flag;
  flag.code = kDLBool;
  flag.bits = 8;
  flag.lanes = 1;
  DLPackExchangeAPI api;
  memset(&api, 0, sizeof api);
  api.header.version = m.version;
  api.header.prev_api = NULL;
  api.managed_tensor_allocator = consumer_allocate;
  api.current_work_stream = consumer_stream;
  DLManagedTensorVersioned *p = &m;
  p->deleter(p);
  return hdal_dlpack_device_type_name(m.dl_tensor.device.device_type) == NULL || flag.code != 6 ||
         api.header.version.major != 1;
}
