/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack import: the fast path of the common zero-copy import (lib/dlpack_import.c)
 * answers exactly as the stages do.  A stream option (0, on a CPU device:
 * nothing to wait for) sends an import through the stages alone; the same
 * tensor without one goes through the fast path, which either makes the view
 * or declines to the stages.  Every outcome must be the same: error code,
 * message and cause, or the buffer (device, shape, strides, dtype, view,
 * read-only, data), the deleter calls and the capsule's name. */
#include <inttypes.h>
#include "dlpack_testutil.h"

static hdal_context *ctx;
static hdal_device *cpu;
static void setup(void) {
  ctx = test_context_with("cpu");
  cpu = tt_cpu_device(ctx);
}
static void teardown(void) { hdal_context_destroy(ctx); }

/* The memory the tensors point into: copies read it, views do not. */
static _Alignas(64) char mem[1 << 20];
#define MID (mem + (1 << 19))

static long deleted;
static void count_legacy(DLManagedTensor *m) { (void)m, deleted++; }
static void count_versioned(DLManagedTensorVersioned *m) { (void)m, deleted++; }

typedef struct {
  char text[2048];
} outcome;

#define OUT(...)                                                        \
  do {                                                                  \
    size_t used_ = strlen(o->text);                                     \
    snprintf(o->text + used_, sizeof o->text - used_, __VA_ARGS__);     \
  } while (0)

/* One import of m (legacy) or mv (versioned) on `target` (NULL: routed), through
 * the fast path (stages == false) or the stages alone; what came of it. */
static void import_one(DLManagedTensor *m, DLManagedTensorVersioned *mv, bool versioned, bool null_owner,
                       hdal_device *target, hdal_copy_mode mode, bool stages, outcome *o) {
  hdal_import_options io = HDAL_IMPORT_OPTIONS_INIT;
  io.copy = mode;
  if (stages) io.has_stream = true, io.stream = 0;
  const hdal_import_options *opts = !stages && mode == HDAL_COPY_IF_NEEDED ? NULL : &io;
  void *owner = null_owner ? NULL : versioned ? (void *)mv : (void *)m;
  hdal_capsule *c = versioned ? hdal_capsule_wrap_versioned(owner) : hdal_capsule_wrap(owner);
  ck_assert_ptr_nonnull(c);
  long before = deleted;
  hdal_buffer *b = NULL;
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, target, opts, &b);
  o->text[0] = 0;
  OUT("capsule %s, deleter %ld: ", hdal_capsule_name(c) ? hdal_capsule_name(c) : "(null)", deleted - before);
  if (e) {
    ck_assert_ptr_null(b);
    OUT("%s (cause %d): %s", hdal_code_name(hdal_error_code(e)), (int)hdal_error_cause(e), hdal_error_message(e));
    hdal_error_destroy(e);
    hdal_capsule_take(c); /* destroy() runs no deleter: the tensor is the test's */
  } else {
    DLDataType dt = hdal_buffer_dtype(b);
    OUT("device %d, dtype %d/%d/%d, view %d, read-only %d, data %td, dims", hdal_device_id(hdal_buffer_device(b)),
        dt.code, dt.bits, dt.lanes, hdal_buffer_is_view(b), hdal_buffer_is_read_only(b),
        hdal_buffer_is_view(b) ? (char *)hdal_buffer_data(b) - mem : -1);
    for (int32_t i = 0; i < hdal_buffer_ndim(b); i++)
      OUT(" %" PRId64 ":%" PRId64, hdal_buffer_shape(b)[i], hdal_buffer_strides(b)[i]);
    hdal_buffer_release(b);
  }
  hdal_capsule_destroy(c);
}

/* Both ways; the outcomes must be the same. */
static void same_both_ways(DLManagedTensor *m, DLManagedTensorVersioned *mv, bool versioned, bool null_owner,
                           hdal_device *target, hdal_copy_mode mode) {
  outcome fast, stages;
  import_one(m, mv, versioned, null_owner, target, mode, false, &fast);
  import_one(m, mv, versioned, null_owner, target, mode, true, &stages);
  ck_assert_str_eq(fast.text, stages.text);
}

static void tensor(DLManagedTensor *m, DLManagedTensorVersioned *mv, void *data, DLDevice dev, int32_t nd,
                   DLDataType dt, int64_t *shape, int64_t *strides, uint64_t offset, uint64_t flags) {
  *m = (DLManagedTensor){.dl_tensor = {.data = data, .device = dev, .ndim = nd, .dtype = dt, .shape = shape,
                                       .strides = strides, .byte_offset = offset},
                         .deleter = count_legacy};
  *mv = (DLManagedTensorVersioned){.version = {1, 1}, .flags = flags, .dl_tensor = m->dl_tensor,
                                   .deleter = count_versioned};
}

static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
  rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
  return rs;
}
static int pick(int n) { return (int)(rnd() % (uint64_t)n); }

/* Random tensors: shapes with 0, 1, negative and huge dimensions, row-major,
 * perturbed, permuted and NULL strides, many dtypes, NULL, unaligned and
 * wrapping addresses, every copy mode, explicit and routed targets, legacy
 * and versioned capsules (read-only, unknown major version, NULL tensor). */
START_TEST(random_tensors_same_both_ways) {
  static const int64_t dims[] = {1, 1, 2, 3, 4, 0, -1, 5, (int64_t)1 << 20, (int64_t)1 << 30, INT64_MAX,
                                 (int64_t)1 << 57};
  static const DLDataType dts[] = {
      {kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLFloat, 16, 1},      {kDLInt, 32, 1},     {kDLFloat, 32, 2},
      {kDLFloat, 12, 1}, {kDLFloat4_e2m1fn, 4, 1}, {kDLFloat, 64, 0}, {kDLComplex, 128, 1}, {kDLComplex, 64, 1},
      {kDLBool, 8, 1},   {kDLBfloat, 16, 1}, {kDLFloat8_e5m2, 8, 1}, {kDLUInt, 8, 1},     {kDLInt, 128, 1},
      {kDLFloat8_e5m2, 16, 1}, {kDLOpaqueHandle, 64, 1}, {kDLFloat6_e2m3fn, 8, 1}};
  static const int32_t types[] = {kDLCPU, kDLCPU, kDLCPU, kDLCUDAHost, kDLCUDA, 99};
  for (int it = 0; it < 20000; it++) {
    int64_t shape[8], strides[8];
    int32_t nd = pick(10) == 0 ? -1 : pick(7);
    bool big = pick(4) == 0;
    for (int i = 0; i < 8; i++) shape[i] = dims[big ? pick(12) : pick(5)];
    int skind = pick(5);
    int64_t s = 1;
    for (int i = 7; i >= 0; i--) {
      strides[i] = i < nd ? s : 0;
      if (i < nd && shape[i] > 1 && __builtin_mul_overflow(s, shape[i], &s)) s = INT64_MAX; /* huge, not wrapped */
    }
    if (skind == 1 && nd > 0) {
      int k = pick(nd);
      int64_t v;
      if (!__builtin_add_overflow(strides[k], pick(3) - 1, &v)) strides[k] = v; /* a stride off by one, not wrapped */
    }
    if (skind == 2 && nd > 0) strides[pick(nd)] = pick(100) - 50;
    if (skind == 3 && nd > 1) {
      int64_t x = strides[0];
      strides[0] = strides[nd - 1], strides[nd - 1] = x;
    }
    DLDataType dt = pick(3) ? dts[pick(2)] : dts[pick((int)(sizeof dts / sizeof dts[0]))];
    int dk = pick(10);
    void *data = dk == 0   ? NULL
                 : dk == 1 ? (void *)(uintptr_t)(UINTPTR_MAX - 64 * (uintptr_t)pick(4))
                           : MID + (pick(4) == 0 ? pick(8) : 0);
    uint64_t off = pick(4) == 0 ? (uint64_t)pick(16) : 0;
    if (pick(30) == 0) off = UINT64_MAX - (uint64_t)pick(3);
    DLManagedTensor m;
    DLManagedTensorVersioned mv;
    tensor(&m, &mv, data, (DLDevice){types[pick(6)], pick(8) == 0}, nd, dt, pick(20) ? shape : NULL,
           skind == 4 ? NULL : strides, off, (uint64_t)pick(4));
    if (pick(10) == 0) mv.version.major = 2;
    hdal_copy_mode mode = pick(3) == 0 ? HDAL_COPY_NEVER : pick(4) == 0 ? HDAL_COPY_ALWAYS : HDAL_COPY_IF_NEEDED;
    /* A copy reads the tensor: only where it lies inside mem. */
    bool safe = dk >= 2 && off < 64 && nd >= 0 && m.dl_tensor.shape;
    int64_t reach = 0;
    for (int i = 0; i < nd && safe; i++) {
      if (shape[i] <= 0) break;
      int64_t st = skind == 4 ? 1 : strides[i] < 0 ? -strides[i] : strides[i];
      if (shape[i] > (1 << 12) || st > (1 << 12) || (reach += (shape[i] - 1) * st) > (1 << 12)) safe = false;
    }
    if (!safe) mode = HDAL_COPY_NEVER;
    same_both_ways(&m, &mv, pick(2), pick(40) == 0, pick(2) ? cpu : NULL, mode);
  }
}
END_TEST

/* Every DLPack device type on the CPU device given: a view of host memory's
 * types (kDLCPU, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost), a refusal of the
 * others, as the CPU backend's can_alias answers. */
START_TEST(every_device_type_same_both_ways) {
  int64_t shape[2] = {3, 4};
  for (int32_t type = 0; type < 40; type++) {
    DLManagedTensor m;
    DLManagedTensorVersioned mv;
    for (int mode = 0; mode < 2; mode++) {
      tensor(&m, &mv, MID, (DLDevice){type, 0}, 2, tt_f32, shape, NULL, 0, 0);
      same_both_ways(&m, &mv, false, false, cpu, mode ? HDAL_COPY_NEVER : HDAL_COPY_IF_NEEDED);
    }
    outcome o;
    import_one(&m, &mv, false, false, cpu, HDAL_COPY_NEVER, false, &o);
    bool host = type == kDLCPU || type == kDLCUDAHost || type == kDLCUDAManaged || type == kDLROCMHost;
    ck_assert_msg((strstr(o.text, "view 1") != NULL) == host, "type %d: %s", type, o.text);
  }
}
END_TEST

/* Every dtype: check 6 and the element size, whichever path takes them. */
START_TEST(every_dtype_same_both_ways) {
  int64_t shape[3] = {2, 1, 3}, strides[3] = {3, 7, 1};
  for (int code = 0; code < 24; code++)
    for (int bits = 0; bits <= 256; bits = bits < 8 ? bits + 1 : bits * 2)
      for (int lanes = 0; lanes < 3; lanes++) {
        DLManagedTensor m;
        DLManagedTensorVersioned mv;
        tensor(&m, &mv, MID, tt_cpu, 3, (DLDataType){(uint8_t)code, (uint8_t)bits, (uint16_t)lanes}, shape,
               strides, 0, lanes == 2 ? DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED : 0);
        same_both_ways(&m, &mv, lanes == 2, false, NULL, HDAL_COPY_IF_NEEDED);
      }
}
END_TEST

/* Element counts and spans at the fast path's bounds (2^56 elements) and the
 * stages' (63 bits of elements, the address space): views of memory that is
 * never read. */
START_TEST(counts_at_the_bounds_same_both_ways) {
  static const int64_t firsts[] = {(int64_t)1 << 28, ((int64_t)1 << 28) + 1, (int64_t)1 << 29, (int64_t)1 << 31,
                                   (int64_t)1 << 32, (int64_t)1 << 35};
  static const DLDataType dts[] = {{kDLUInt, 8, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLComplex, 128, 1}};
  for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++)
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++)
      for (int with_strides = 0; with_strides < 2; with_strides++) {
        int64_t shape[2] = {firsts[i], (int64_t)1 << 28}, strides[2] = {(int64_t)1 << 28, 1};
        DLManagedTensor m;
        DLManagedTensorVersioned mv;
        tensor(&m, &mv, MID, tt_cpu, 2, dts[k], shape, with_strides ? strides : NULL, 0, 0);
        same_both_ways(&m, &mv, false, false, cpu, HDAL_COPY_NEVER);
        same_both_ways(&m, &mv, true, false, NULL, HDAL_COPY_NEVER);
      }
}
END_TEST

int main(void) {
  Suite *s = suite_create("import_fastpath");
  TCase *tc = tcase_create("fastpath");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, random_tensors_same_both_ways);
  tcase_add_test(tc, every_device_type_same_both_ways);
  tcase_add_test(tc, every_dtype_same_both_ways);
  tcase_add_test(tc, counts_at_the_bounds_same_both_ways);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
