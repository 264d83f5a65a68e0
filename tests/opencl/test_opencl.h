/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the OpenCL suites: skipping without PoCL, the set-up of
 * a context on PoCL and of a kernel of the test's own on hdal's objects, and
 * direct OpenCL calls that give the suites their expected values.  Nothing here runs
 * OpenCL in the test runner's parent: call them inside START_TEST bodies. */
#ifndef HDAL_TEST_OPENCL_H
#define HDAL_TEST_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdint.h>
#include <unistd.h>
#include "testutil.h"

#define ck_assert_cl(expr)                                                  \
  do {                                                                      \
    cl_int ck_cl_ = (expr);                                                 \
    ck_assert_msg(ck_cl_ == CL_SUCCESS, "%s: OpenCL error %d", #expr, ck_cl_); \
  } while (0)

/* Whether the suite's PoCL vendor directory was generated (PoCL is installed). */
static inline bool opencl_have_pocl(void) {
  const char *vendors = getenv("OCL_ICD_VENDORS"), *devices = getenv("POCL_DEVICES");
  char icd[4096];
  snprintf(icd, sizeof icd, "%s/pocl.icd", vendors ? vendors : "");
  return vendors && devices && access(icd, R_OK) == 0;
}

/* Whether the suite's fake vendor (tests/fakes/cl/fakecl.c) has its vendor directory. */
static inline bool opencl_have_fake(void) {
  const char *dir = getenv("HDAL_TEST_ICD");
  char icd[4096];
  snprintf(icd, sizeof icd, "%s/fake/fake.icd", dir ? dir : "");
  return dir && access(icd, R_OK) == 0;
}

/* Exits 77 (skip) unless the suite's PoCL vendor directory was generated. */
static inline void opencl_require_pocl(void) {
  if (!opencl_have_pocl()) {
    printf("SKIP: no PoCL ICD for the suite (OCL_ICD_VENDORS=%s); see tests/fakes/cl/make-vendors.sh\n",
           getenv("OCL_ICD_VENDORS") ? getenv("OCL_ICD_VENDORS") : "(unset)");
    exit(77);
  }
}

/* The suite's PoCL as an application meets it (the test exits 77 without
 * PoCL): a context of the CPU and OpenCL backends, and its first OpenCL
 * device in *dev. */
static inline hdal_context *opencl_pocl_context(hdal_device **dev) {
  opencl_require_pocl();
  hdal_context *ctx = test_context_with("cpu,opencl");
  *dev = test_first_device(ctx, "opencl");
  ck_assert_ptr_nonnull(*dev);
  return ctx;
}

/* hdal's OpenCL object of kind `which` on `d` (hdal_device_native_handle), asserted. */
static inline intptr_t opencl_native(hdal_device *d, hdal_native_handle which) {
  intptr_t h = 0;
  ck_assert_ok(hdal_device_native_handle(d, which, &h));
  ck_assert(h != 0);
  return h;
}

/* Kernel `name` of `source`, built for `d` in hdal's context on it (the
 * device's native handles), as an application builds its own; the program
 * in *prog, to release after the kernel. */
static inline cl_kernel opencl_build_kernel(hdal_device *d, const char *source, const char *name, cl_program *prog) {
  cl_context c = (cl_context)opencl_native(d, HDAL_NATIVE_OPENCL_CONTEXT);
  cl_device_id id = (cl_device_id)opencl_native(d, HDAL_NATIVE_OPENCL_DEVICE);
  cl_int e;
  *prog = clCreateProgramWithSource(c, 1, &source, NULL, &e);
  ck_assert_cl(e);
  ck_assert_cl(clBuildProgram(*prog, 1, &id, NULL, NULL, NULL));
  cl_kernel k = clCreateKernel(*prog, name, &e);
  ck_assert_cl(e);
  return k;
}

/* Word `i` of POCL_DEVICES (the driver of PoCL's device i), in buf. */
static inline const char *pocl_driver(size_t i, char *buf, size_t size) {
  const char *p = getenv("POCL_DEVICES");
  for (size_t k = 0;; k++) {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    ck_assert_msg(n > 0, "POCL_DEVICES has no word %zu", i);
    if (k == i) {
      snprintf(buf, size, "%.*s", (int)n, p);
      return buf;
    }
    p += n;
  }
}

/* The major version in PoCL's CL_PLATFORM_VERSION, "OpenCL <x.y> PoCL <M.m>...". */
static inline int pocl_major_version(cl_platform_id platform) {
  char v[256];
  int major = 0;
  ck_assert_cl(clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof v, v, NULL));
  ck_assert_msg(sscanf(v, "OpenCL %*d.%*d PoCL %d.", &major) == 1, "not PoCL's version: %s", v);
  return major;
}

/* The name PoCL gives the devices of `driver` (a POCL_DEVICES word): the
 * driver's name up to PoCL 3; PoCL 4 renamed basic to cpu-minimal and pthread
 * to cpu, and still takes the old names in POCL_DEVICES (docs/packaging.md). */
static inline const char *pocl_device_name(const char *driver, int major) {
  if (major >= 4 && !strcmp(driver, "basic")) return "cpu-minimal";
  if (major >= 4 && !strcmp(driver, "pthread")) return "cpu";
  return driver;
}

static inline size_t pocl_device_count(void) {
  size_t n = 0;
  for (const char *p = getenv("POCL_DEVICES"); *p;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " ");
    n += len > 0;
    p += len;
  }
  return n;
}

/* The OpenCL devices in the ICD loader's order, as hdal numbers them. */
static inline cl_uint cl_all_devices(cl_device_id *out, cl_uint max) {
  cl_platform_id ps[8];
  cl_uint np = 0, total = 0;
  ck_assert_cl(clGetPlatformIDs(8, ps, &np));
  for (cl_uint i = 0; i < np && i < 8; i++) {
    cl_uint n = 0;
    cl_int e = clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, max - total, out + total, &n);
    if (e == CL_DEVICE_NOT_FOUND) continue;
    ck_assert_cl(e);
    total += n < max - total ? n : max - total;
  }
  return total;
}

static inline char *cl_device_str(cl_device_id d, cl_device_info what) {
  static char buf[4][1024];
  static int next;
  char *s = buf[next++ % 4];
  ck_assert_cl(clGetDeviceInfo(d, what, sizeof buf[0], s, NULL));
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\n')) s[--n] = '\0';
  return s;
}

static inline cl_ulong cl_device_ulong(cl_device_id d, cl_device_info what) {
  cl_ulong v = 0;
  ck_assert_cl(clGetDeviceInfo(d, what, sizeof v, &v, NULL));
  return v;
}

static inline cl_uint cl_device_uint(cl_device_id d, cl_device_info what) {
  cl_uint v = 0;
  ck_assert_cl(clGetDeviceInfo(d, what, sizeof v, &v, NULL));
  return v;
}

/* A context of the caller's own on one device (not hdal's). */
static inline cl_context cl_own_context(cl_device_id d) {
  cl_int e;
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  ck_assert_cl(e);
  return c;
}

static inline cl_uint cl_mem_refcount(cl_mem m) {
  cl_uint n = 0;
  ck_assert_cl(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

#endif
