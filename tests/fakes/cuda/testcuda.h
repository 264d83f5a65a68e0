/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA driver calls hdal's tests make themselves (to allocate device,
 * pinned and managed memory and streams), resolved from the driver under test:
 * the fake driver (HDAL_CUDA_LIBRARY) or, under tests/gpu/, the real one.
 * The fake's own hooks (fakecuda_*) are NULL with a real driver. */
#ifndef HDAL_TESTCUDA_H
#define HDAL_TESTCUDA_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct {
  unsigned char bytes[16];
} CUuuid;

#define TEST_CU_STREAM_NON_BLOCKING 1u
#define TEST_CU_MEM_ATTACH_GLOBAL 1u

typedef struct {
  void *lib;
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocHost)(void **, size_t);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  /* the fake's hooks */
  size_t (*fakecuda_live_allocations)(void);
  int (*fakecuda_primary_refs)(int ordinal);
  unsigned (*fakecuda_calls)(const char *entry);
  int (*fakecuda_context_depth)(void);
  void (*fakecuda_legacy_launch)(void);
} test_cuda;

/* The driver hdal will load: HDAL_CUDA_LIBRARY, else libcuda.so.1. */
static inline const char *test_cuda_library(void) {
  const char *p = getenv("HDAL_CUDA_LIBRARY");
  return p && *p ? p : "libcuda.so.1";
}

/* Opens the driver under test; false when it or one of the calls is missing. */
static inline bool test_cuda_open(test_cuda *c) {
  static const struct {
    const char *name;
    size_t offset;
    bool hook;
  } syms[] = {
#define TEST_CUDA_SYM(field, name, hook) {name, offsetof(test_cuda, field), hook}
      TEST_CUDA_SYM(cuInit, "cuInit", false),
      TEST_CUDA_SYM(cuDeviceGetCount, "cuDeviceGetCount", false),
      TEST_CUDA_SYM(cuDeviceGet, "cuDeviceGet", false),
      TEST_CUDA_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false),
      TEST_CUDA_SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", false),
      TEST_CUDA_SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2", false),
      TEST_CUDA_SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2", false),
      TEST_CUDA_SYM(cuMemAlloc, "cuMemAlloc_v2", false),
      TEST_CUDA_SYM(cuMemFree, "cuMemFree_v2", false),
      TEST_CUDA_SYM(cuMemAllocHost, "cuMemAllocHost_v2", false),
      TEST_CUDA_SYM(cuMemFreeHost, "cuMemFreeHost", false),
      TEST_CUDA_SYM(cuMemAllocManaged, "cuMemAllocManaged", false),
      TEST_CUDA_SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2", false),
      TEST_CUDA_SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2", false),
      TEST_CUDA_SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", false),
      TEST_CUDA_SYM(cuStreamCreate, "cuStreamCreate", false),
      TEST_CUDA_SYM(cuStreamDestroy, "cuStreamDestroy_v2", false),
      TEST_CUDA_SYM(cuStreamSynchronize, "cuStreamSynchronize", false),
      TEST_CUDA_SYM(fakecuda_live_allocations, "fakecuda_live_allocations", true),
      TEST_CUDA_SYM(fakecuda_primary_refs, "fakecuda_primary_refs", true),
      TEST_CUDA_SYM(fakecuda_calls, "fakecuda_calls", true),
      TEST_CUDA_SYM(fakecuda_context_depth, "fakecuda_context_depth", true),
      TEST_CUDA_SYM(fakecuda_legacy_launch, "fakecuda_legacy_launch", true),
#undef TEST_CUDA_SYM
  };
  *c = (test_cuda){0};
  c->lib = dlopen(test_cuda_library(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!c->lib) return false;
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *fn = dlsym(c->lib, syms[i].name);
    if (!fn && !syms[i].hook) return false;
    *(void **)((char *)c + syms[i].offset) = fn;
  }
  return true;
}

/* The GPU suites' CUDA face (testcuda.c, tests/gpusuite/gpusuite.h): the
 * driver it opened, and GPU `ordinal`'s primary context made current until
 * test_cuda_leave.  The face holds each context it retains until the process
 * exits, as an application does: the last release destroys a primary context
 * with every allocation made in it, so a test that released it would hand
 * hdal freed memory (as it did on a real H200 before the fake driver modelled
 * that). */
extern test_cuda cu;
CUresult test_cuda_enter(int ordinal);
CUresult test_cuda_leave(int ordinal);

#endif /* HDAL_TESTCUDA_H */
