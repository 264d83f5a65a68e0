/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake OpenCL vendor (cl_khr_icd) for the suite: one OpenCL 1.2 platform whose
 * devices PoCL cannot give, so that the backend's IFRT-native classification and
 * PCI bus ids are tested through the real ICD loader:
 *   0  GPU, not available, PCI 0000:3b:00.0 (cl_khr_pci_bus_info), vendor id 0x10de
 *   1  custom device type, vendor id 0x1d0f
 *   2  GPU whose clCreateContext fails, PCI 0000:af:00.0 (cl_nv_device_attribute_query), vendor id 0x10de
 *   3  accelerator, serves contexts, PCI 0000:17:00.0 (cl_amd_device_attribute_query), vendor id 0x1002
 * The GPUs play NVIDIA's (their vendor id, NVIDIA's PCI query on device 2): with the fake CUDA driver at
 * the same PCI addresses they are the OpenCL face of its GPUs, as NVIDIA's ICD would list them.
 * Only what discovery calls is implemented; every other entry stays NULL. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_icd.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

struct _cl_platform_id {
  cl_icd_dispatch *dispatch;
};
struct _cl_device_id {
  cl_icd_dispatch *dispatch;
  int index;
};
struct _cl_context {
  cl_icd_dispatch *dispatch;
  cl_uint refs;
  cl_device_id device;
};

enum { NDEV = 4 };
static cl_icd_dispatch dispatch;
static struct _cl_platform_id platform = {&dispatch};
static struct _cl_device_id devices[NDEV] = {{&dispatch, 0}, {&dispatch, 1}, {&dispatch, 2}, {&dispatch, 3}};

static cl_int answer(const void *v, size_t n, size_t size, void *out, size_t *size_ret) {
  if (size_ret) *size_ret = n;
  if (out) {
    if (size < n) return CL_INVALID_VALUE;
    memcpy(out, v, n);
  }
  return CL_SUCCESS;
}

static cl_int str(const char *s, size_t size, void *out, size_t *size_ret) {
  return answer(s, strlen(s) + 1, size, out, size_ret);
}

static cl_int CL_API_CALL get_platform_info(cl_platform_id p, cl_platform_info what, size_t size, void *out,
                                            size_t *size_ret) {
  switch (what) {
  case CL_PLATFORM_PROFILE: return str("FULL_PROFILE", size, out, size_ret);
  case CL_PLATFORM_VERSION: return str("OpenCL 1.2 hdal-fake", size, out, size_ret);
  case CL_PLATFORM_NAME: return str("hdal fake platform", size, out, size_ret);
  case CL_PLATFORM_VENDOR: return str("hdal test suite", size, out, size_ret);
  case CL_PLATFORM_EXTENSIONS: return str("cl_khr_icd", size, out, size_ret);
  case CL_PLATFORM_ICD_SUFFIX_KHR: return str("HDALFAKE", size, out, size_ret);
  default: return CL_INVALID_VALUE;
  }
}

static cl_int CL_API_CALL get_device_ids(cl_platform_id p, cl_device_type type, cl_uint n, cl_device_id *out,
                                         cl_uint *n_ret) {
  if (n_ret) *n_ret = NDEV;
  for (cl_uint i = 0; out && i < n && i < NDEV; i++) out[i] = &devices[i];
  return CL_SUCCESS;
}

static const struct {
  const char *name, *extensions;
  cl_device_type type;
  cl_bool available;
  cl_uint vendor_id;
} spec[NDEV] = {
    {"Fake GPU (unavailable)", "cl_khr_pci_bus_info", CL_DEVICE_TYPE_GPU, CL_FALSE, 0x10de},
    {"Fake custom device", "", CL_DEVICE_TYPE_CUSTOM, CL_TRUE, 0x1d0f},
    {"Fake GPU (no context)", "cl_nv_device_attribute_query", CL_DEVICE_TYPE_GPU, CL_TRUE, 0x10de},
    {"Fake accelerator", "cl_amd_device_attribute_query", CL_DEVICE_TYPE_ACCELERATOR, CL_TRUE, 0x1002},
};

static cl_int CL_API_CALL get_device_info(cl_device_id d, cl_device_info what, size_t size, void *out,
                                          size_t *size_ret) {
  int i = d->index;
  cl_ulong u64;
  cl_uint u32;
  switch (what) {
  case CL_DEVICE_NAME: return str(spec[i].name, size, out, size_ret);
  case CL_DEVICE_VENDOR: return str("hdal", size, out, size_ret);
  case CL_DEVICE_VERSION: return str("OpenCL 1.2 fake", size, out, size_ret);
  case CL_DEVICE_OPENCL_C_VERSION: return str("OpenCL C 1.2 fake", size, out, size_ret);
  case CL_DRIVER_VERSION: return str("0.0.1", size, out, size_ret);
  case CL_DEVICE_EXTENSIONS: return str(spec[i].extensions, size, out, size_ret);
  case CL_DEVICE_TYPE: return answer(&spec[i].type, sizeof spec[i].type, size, out, size_ret);
  case CL_DEVICE_AVAILABLE: return answer(&spec[i].available, sizeof(cl_bool), size, out, size_ret);
  case CL_DEVICE_VENDOR_ID: return answer(&spec[i].vendor_id, sizeof(cl_uint), size, out, size_ret);
  case CL_DEVICE_PLATFORM: return answer(&(cl_platform_id){&platform}, sizeof(cl_platform_id), size, out, size_ret);
  case CL_DEVICE_MAX_COMPUTE_UNITS: u32 = 8u * (cl_uint)(i + 1); return answer(&u32, sizeof u32, size, out, size_ret);
  case CL_DEVICE_MEM_BASE_ADDR_ALIGN: u32 = 4096; return answer(&u32, sizeof u32, size, out, size_ret);
  case CL_DEVICE_HOST_UNIFIED_MEMORY: u32 = CL_FALSE; return answer(&u32, sizeof u32, size, out, size_ret);
  case CL_DEVICE_GLOBAL_MEM_SIZE: u64 = (cl_ulong)(i + 1) << 30; return answer(&u64, sizeof u64, size, out, size_ret);
  case CL_DEVICE_MAX_MEM_ALLOC_SIZE: u64 = (cl_ulong)(i + 1) << 28; return answer(&u64, sizeof u64, size, out, size_ret);
  case CL_DEVICE_PCI_BUS_INFO_KHR:
    if (i != 0) return CL_INVALID_VALUE;
    return answer(&(cl_device_pci_bus_info_khr){0, 0x3b, 0, 0}, sizeof(cl_device_pci_bus_info_khr), size, out,
                  size_ret);
  case 0x4008: /* CL_DEVICE_PCI_BUS_ID_NV */
    if (i != 2) return CL_INVALID_VALUE;
    u32 = 0xaf;
    return answer(&u32, sizeof u32, size, out, size_ret);
  case 0x4009: /* CL_DEVICE_PCI_SLOT_ID_NV */
    if (i != 2) return CL_INVALID_VALUE;
    u32 = 0;
    return answer(&u32, sizeof u32, size, out, size_ret);
  case CL_DEVICE_TOPOLOGY_AMD: {
    if (i != 3) return CL_INVALID_VALUE;
    cl_device_topology_amd t = {.pcie = {.type = CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD, .bus = 0x17, .device = 0, .function = 0}};
    return answer(&t, sizeof t, size, out, size_ret);
  }
  default: return CL_INVALID_VALUE; /* an OpenCL 1.2 device: no SVM query, among others */
  }
}

static cl_context CL_API_CALL create_context(const cl_context_properties *props, cl_uint n, const cl_device_id *ds,
                                             void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                                             void *user, cl_int *err) {
  cl_int e = CL_SUCCESS;
  struct _cl_context *c = NULL;
  if (n != 1 || !ds) e = CL_INVALID_VALUE;
  else if (!spec[ds[0]->index].available) e = CL_DEVICE_NOT_AVAILABLE;
  else if (ds[0]->index == 2) e = CL_OUT_OF_HOST_MEMORY;
  else if (!(c = calloc(1, sizeof *c))) e = CL_OUT_OF_HOST_MEMORY;
  else *c = (struct _cl_context){&dispatch, 1, ds[0]};
  if (err) *err = e;
  return c;
}

static cl_int CL_API_CALL retain_context(cl_context c) {
  c->refs++;
  return CL_SUCCESS;
}

static cl_int CL_API_CALL release_context(cl_context c) {
  if (--c->refs == 0) free(c);
  return CL_SUCCESS;
}

static cl_int CL_API_CALL device_noop(cl_device_id d) { return CL_SUCCESS; }

EXPORT cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *out, cl_uint *n_ret) {
  dispatch.clGetPlatformInfo = get_platform_info;
  dispatch.clGetDeviceIDs = get_device_ids;
  dispatch.clGetDeviceInfo = get_device_info;
  dispatch.clCreateContext = create_context;
  dispatch.clRetainContext = retain_context;
  dispatch.clReleaseContext = release_context;
  dispatch.clRetainDevice = device_noop;
  dispatch.clReleaseDevice = device_noop;
  if (n_ret) *n_ret = 1;
  if (out && n) out[0] = &platform;
  return CL_SUCCESS;
}

EXPORT cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p, cl_platform_info what, size_t size, void *out,
                                            size_t *size_ret) {
  return get_platform_info(p, what, size, out, size_ret);
}

EXPORT void *CL_API_CALL clGetExtensionFunctionAddress(const char *name) {
  if (!strcmp(name, "clIcdGetPlatformIDsKHR")) return (void *)clIcdGetPlatformIDsKHR;
  return NULL;
}
