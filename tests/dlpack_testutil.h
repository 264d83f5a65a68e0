/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack tensors for hdal's import/export suites: managed tensors whose
 * deleters are counted, over caller-chosen memory. */
#ifndef HDAL_DLPACK_TESTUTIL_H
#define HDAL_DLPACK_TESTUTIL_H

#include <stdatomic.h>
#include "testutil.h"

static atomic_int tt_deleted; /* deleter calls in this test (each test runs in its own process) */

typedef struct {
  DLManagedTensor legacy;
  DLManagedTensorVersioned versioned;
  int64_t shape[16], strides[16];
  void *owned; /* freed by the deleter */
} tt_tensor;

static void tt_legacy_deleter(DLManagedTensor *m) {
  tt_tensor *t = m->manager_ctx;
  atomic_fetch_add(&tt_deleted, 1);
  free(t->owned);
  free(t);
}

static void tt_versioned_deleter(DLManagedTensorVersioned *m) {
  tt_tensor *t = m->manager_ctx;
  atomic_fetch_add(&tt_deleted, 1);
  free(t->owned);
  free(t);
}

static const DLDataType tt_f32 = {kDLFloat, 32, 1};
static const DLDevice tt_cpu = {kDLCPU, 0};

/* A tensor over `data` (owned: freed by the deleter); strides NULL for none. */
static inline tt_tensor *tt_make(void *data, bool owned, int ndim, const int64_t *shape, const int64_t *strides,
                          DLDataType dtype, DLDevice dev) {
  tt_tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_le(ndim, 16);
  for (int i = 0; i < ndim && ndim > 0; i++) {
    t->shape[i] = shape[i];
    if (strides) t->strides[i] = strides[i];
  }
  t->owned = owned ? data : NULL;
  DLTensor dl = {.data = data, .device = dev, .ndim = ndim, .dtype = dtype, .shape = t->shape,
                 .strides = strides ? t->strides : NULL, .byte_offset = 0};
  t->legacy.dl_tensor = dl;
  t->legacy.manager_ctx = t;
  t->legacy.deleter = tt_legacy_deleter;
  t->versioned.version = (DLPackVersion){1, 1};
  t->versioned.dl_tensor = dl;
  t->versioned.manager_ctx = t;
  t->versioned.deleter = tt_versioned_deleter;
  return t;
}

static inline hdal_capsule *tt_legacy(tt_tensor *t) {
  hdal_capsule *c = hdal_capsule_wrap(&t->legacy);
  ck_assert_ptr_nonnull(c);
  return c;
}

static inline hdal_capsule *tt_versioned(tt_tensor *t, uint64_t flags) {
  t->versioned.flags = flags;
  hdal_capsule *c = hdal_capsule_wrap_versioned(&t->versioned);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* A float32 array 0, 1, 2, ... of n elements (malloc'd). */
static inline float *tt_iota(size_t n) {
  float *v = malloc(n ? n * sizeof *v : 1);
  ck_assert_ptr_nonnull(v);
  for (size_t i = 0; i < n; i++) v[i] = (float)i;
  return v;
}

/* The first CPU device of a context. */
static inline hdal_device *tt_cpu_device(hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!strcmp(hdal_device_platform(hdal_context_device(ctx, i)), "cpu")) return hdal_context_device(ctx, i);
  ck_abort_msg("no CPU device");
  return NULL;
}

static const hdal_import_options tt_never = {.struct_size = sizeof(hdal_import_options), .copy = HDAL_COPY_NEVER};
static const hdal_import_options tt_always = {.struct_size = sizeof(hdal_import_options), .copy = HDAL_COPY_ALWAYS};

#endif
