/* SPDX-License-Identifier: BSD-3-Clause */
/* The HIP runtime calls hdal's tests make themselves (to allocate device and
 * pinned memory and streams), resolved from the runtime under test: the fake
 * (HDAL_ROCM_LIBRARY) or, under tests/gpu/, the real one.  The fake's own
 * hooks (fakehip_*) are NULL with a real runtime. */
#ifndef HDAL_TESTHIP_H
#define HDAL_TESTHIP_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;

#define TEST_HIP_STREAM_NON_BLOCKING 1u
#define TEST_HIP_MEMCPY_HOST_TO_DEVICE 1
#define TEST_HIP_MEMCPY_DEVICE_TO_HOST 2

typedef struct {
  void *lib;
  const char *path;
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipGetDeviceCount)(int *);
  hipError_t (*hipRuntimeGetVersion)(int *);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipGetDevice)(int *);
  hipError_t (*hipMalloc)(void **, size_t);
  hipError_t (*hipFree)(void *);
  hipError_t (*hipHostMalloc)(void **, size_t, unsigned);
  hipError_t (*hipHostFree)(void *);
  hipError_t (*hipMemcpy)(void *, const void *, size_t, int);
  hipError_t (*hipMemcpyAsync)(void *, const void *, size_t, int, hipStream_t);
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t *, unsigned);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  /* the fake's hooks */
  size_t (*fakehip_live_allocations)(void);
  unsigned (*fakehip_calls)(const char *entry);
  void (*fakehip_null_launch)(void); /* slow work on the null stream (FAKEHIP_SLOW_NULL) */
} test_hip;

/* The runtime hdal will load: HDAL_ROCM_LIBRARY, else the first of the
 * backend's names that opens (docs/rocm.md). */
static inline void *test_hip_dlopen(const char **path) {
  static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  const char *p = getenv("HDAL_ROCM_LIBRARY");
  if (p && *p) {
    *path = p;
    return dlopen(p, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    *path = names[i];
    if (h) return h;
  }
  return NULL;
}

/* Opens the runtime under test; false when it or one of the calls is missing. */
static inline bool test_hip_open(test_hip *c) {
  static const struct {
    const char *name;
    size_t offset;
    bool hook;
  } syms[] = {
#define TEST_HIP_SYM(field, hook) {#field, offsetof(test_hip, field), hook}
      TEST_HIP_SYM(hipInit, false),
      TEST_HIP_SYM(hipGetDeviceCount, false),
      TEST_HIP_SYM(hipRuntimeGetVersion, false),
      TEST_HIP_SYM(hipSetDevice, false),
      TEST_HIP_SYM(hipGetDevice, false),
      TEST_HIP_SYM(hipMalloc, false),
      TEST_HIP_SYM(hipFree, false),
      TEST_HIP_SYM(hipHostMalloc, false),
      TEST_HIP_SYM(hipHostFree, false),
      TEST_HIP_SYM(hipMemcpy, false),
      TEST_HIP_SYM(hipMemcpyAsync, false),
      TEST_HIP_SYM(hipStreamCreateWithFlags, false),
      TEST_HIP_SYM(hipStreamDestroy, false),
      TEST_HIP_SYM(hipStreamSynchronize, false),
      TEST_HIP_SYM(fakehip_live_allocations, true),
      TEST_HIP_SYM(fakehip_calls, true),
      TEST_HIP_SYM(fakehip_null_launch, true),
#undef TEST_HIP_SYM
  };
  *c = (test_hip){0};
  c->lib = test_hip_dlopen(&c->path);
  if (!c->lib) return false;
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *fn = dlsym(c->lib, syms[i].name);
    if (!fn && !syms[i].hook) return false;
    *(void **)((char *)c + syms[i].offset) = fn;
  }
  return true;
}

/* The GPU suites' HIP face (testhip.c, tests/gpusuite/gpusuite.h): the
 * runtime it opened. */
extern test_hip hip;

#endif /* HDAL_TESTHIP_H */
