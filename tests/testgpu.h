/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the GPU backends' suites (CUDA and ROCm alike): the fake runtime
 * chosen, devices found by platform, float32 tensors whose deleter is counted,
 * imports and their values checked through the host. */
#ifndef HDAL_TESTGPU_H
#define HDAL_TESTGPU_H

#include <unistd.h>
#include "testutil.h"

/* Points hdal at fake runtime `lib` (a module of HDAL_TEST_MODULES) through
 * `env` (HDAL_CUDA_LIBRARY, HDAL_ROCM_LIBRARY), on a small synthetic machine. */
static inline void test_use_fake_runtime(const char *env, const char *lib) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.so", getenv("HDAL_TEST_MODULES"), lib);
  setenv(env, path, 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
}

/* The device of `platform` with local hardware id `local`, or NULL. */
static inline hdal_device *test_platform_device(hdal_context *ctx, const char *platform, int local) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_local_hardware_id(d) == local) return d;
  }
  return NULL;
}

static inline size_t test_platform_device_count(hdal_context *ctx, const char *platform) {
  size_t n = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    n += !strcmp(hdal_device_platform(hdal_context_device(ctx, i)), platform);
  return n;
}

/* A context of `backends` made with stderr caught: what creating it wrote. */
static inline char *test_stderr_of_create(const char *backends, hdal_context **ctx) {
  char tmpl[] = "/tmp/hdal-test-stderr-XXXXXX";
  int fd = mkstemp(tmpl);
  ck_assert_int_ge(fd, 0);
  unlink(tmpl);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  *ctx = test_context_with(backends);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  static char buf[8192];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

/* Calls of the deleters of test_wrap()'s tensors; Check forks each test, so
 * it starts at 0 in each. */
static int test_deleted;

typedef struct {
  DLManagedTensor m;
  int64_t shape[2], strides[2];
} test_tensor;

static inline void test_count_deleter(DLManagedTensor *m) {
  test_deleted++;
  free(m->manager_ctx);
}

/* A float32 tensor of shape rows x cols (cols 0: 1-d of rows) on `dev` at `data`. */
static inline hdal_capsule *test_wrap(DLDevice dev, void *data, int64_t rows, int64_t cols, const int64_t *strides) {
  test_tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->shape[0] = rows;
  t->shape[1] = cols;
  if (strides) memcpy(t->strides, strides, sizeof t->strides);
  t->m.manager_ctx = t;
  t->m.deleter = test_count_deleter;
  t->m.dl_tensor = (DLTensor){.data = data,
                              .device = dev,
                              .ndim = cols ? 2 : 1,
                              .dtype = {kDLFloat, 32, 1},
                              .shape = t->shape,
                              .strides = strides ? t->strides : NULL};
  hdal_capsule *c = hdal_capsule_wrap(&t->m);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* The buffer's first n floats, read through the host, are `expected`. */
static inline void test_assert_values(const hdal_buffer *b, size_t n, const float *expected) {
  float got[64];
  ck_assert_uint_le(n, 64);
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, n * sizeof(float)));
  for (size_t i = 0; i < n; i++) ck_assert_msg(got[i] == expected[i], "element %zu: %g, expected %g", i, got[i], expected[i]);
}

/* ... are first, first+1, ... */
static inline void test_assert_iota(const hdal_buffer *b, size_t n, float first) {
  float e[64];
  ck_assert_uint_le(n, 64);
  for (size_t i = 0; i < n; i++) e[i] = first + (float)i;
  test_assert_values(b, n, e);
}

/* The capsule imported with copy mode `mode` (and consumed). */
static inline hdal_buffer *test_import(hdal_context *ctx, hdal_capsule *c, hdal_device *d, hdal_copy_mode mode) {
  hdal_import_options o = {.struct_size = sizeof o, .copy = mode};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, &o, &b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  return b;
}

#endif
