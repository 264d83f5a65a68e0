/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack import: layouts — zero-copy views for compact layouts up to a
 * permutation, copies that compact everything else (docs/dlpack.md, "Import"). */
#include <inttypes.h>
#include "dlpack_testutil.h"

#define MSG_STRIDES(D, S)                                                                                        \
  "Only DLPack tensors with trivial (compact) striding are supported; i.e., tensors whose striding represents " \
  "a transposition of the underlying buffer but not broadcasting. Dimensions were: " D ", strides were " S "."

static hdal_context *ctx;
static void setup(void) { ctx = test_context_with("cpu"); }
static void teardown(void) { hdal_context_destroy(ctx); }

/* Reference gather: element (i0, i1, ...) in row-major order from base with strides. */
static void reference(float *out, const float *base, int nd, const int64_t *shape, const int64_t *strides) {
  int64_t idx[16] = {0}, n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int i = 0; i < nd; i++) off += idx[i] * strides[i];
    out[k] = base[off];
    for (int i = nd - 1; i >= 0; i--) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
}

/* The first index where a and b differ; n when they do not (one assertion for
 * millions of elements keeps the suite fast under valgrind). */
static int64_t first_difference(const float *a, const float *b, int64_t n) {
  int64_t k = 0;
  while (k < n && a[k] == b[k]) k++;
  return k;
}

/* Imports a float32 tensor over `mem` (element 0 at mem + first) and checks view or copy and values. */
static void import_and_check(float *mem, int64_t first, int nd, const int64_t *shape, const int64_t *strides,
                             bool expect_view, const hdal_import_options *opts) {
  tt_tensor *t = tt_make(mem, false, nd, shape, strides, tt_f32, tt_cpu);
  t->legacy.dl_tensor.byte_offset = (uint64_t)first * sizeof(float);
  hdal_capsule *c = tt_legacy(t);
  int before = tt_deleted;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, opts, &b));
  ck_assert_int_eq(hdal_buffer_is_view(b), expect_view);
  if (expect_view) {
    ck_assert_ptr_eq(hdal_buffer_data(b), mem + first); /* byte_offset honoured */
    ck_assert_int_eq(tt_deleted, before);
  } else {
    ck_assert_ptr_ne(hdal_buffer_data(b), mem + first);
    ck_assert_int_eq(tt_deleted, before + 1);
  }
  ck_assert_int_eq(hdal_buffer_ndim(b), nd);
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    ck_assert_int_eq(hdal_buffer_shape(b)[i], shape[i]);
    n *= shape[i];
  }
  if (nd) ck_assert_ptr_nonnull(hdal_buffer_strides(b));
  float *want = malloc((size_t)(n ? n : 1) * sizeof *want), *got = malloc((size_t)(n ? n : 1) * sizeof *got);
  int64_t rm[16];
  for (int i = nd - 1, s = 1; i >= 0; s *= (int)shape[i], i--) rm[i] = s;
  reference(want, mem + first, nd, shape, strides ? strides : rm);
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, (size_t)n * sizeof *got));
  int64_t k = first_difference(got, want, n);
  ck_assert_msg(k == n, "element %" PRId64 ": %g != %g", k, k < n ? got[k] : 0.0, k < n ? want[k] : 0.0);
  if (!expect_view) { /* a copy is compact row-major */
    const float *data = hdal_buffer_data(b);
    k = first_difference(data, want, n);
    ck_assert_msg(k == n, "buffer element %" PRId64 ": %g != %g", k, k < n ? data[k] : 0.0, k < n ? want[k] : 0.0);
    for (int i = 0; i < nd; i++) ck_assert_int_eq(hdal_buffer_strides(b)[i], rm[i]);
  }
  free(want);
  free(got);
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, before + 1);
}

START_TEST(row_major_and_null_strides_are_views) {
  float *m = tt_iota(64);
  int64_t shape[3] = {2, 3, 4}, strides[3] = {12, 4, 1};
  import_and_check(m, 0, 3, shape, strides, true, NULL);
  import_and_check(m, 0, 3, shape, NULL, true, NULL);
  import_and_check(m, 5, 3, shape, NULL, true, NULL); /* byte_offset */
  free(m);
}
END_TEST

START_TEST(permutations_are_views) {
  float *m = tt_iota(64);
  int64_t shape2[2] = {4, 6}, colmajor[2] = {1, 4};
  import_and_check(m, 0, 2, shape2, colmajor, true, NULL);
  int64_t shape3[3] = {2, 3, 4}, perm[3] = {1, 8, 2}; /* minor to major: 0, 2, 1 */
  import_and_check(m, 3, 3, shape3, perm, true, &tt_never);
  /* the buffer keeps the tensor's strides */
  hdal_capsule *c = tt_legacy(tt_make(m, false, 2, shape2, colmajor, tt_f32, tt_cpu));
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert_int_eq(hdal_buffer_strides(b)[0], 1);
  ck_assert_int_eq(hdal_buffer_strides(b)[1], 4);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  free(m);
}
END_TEST

START_TEST(size_one_dimensions_take_any_stride) {
  float *m = tt_iota(64);
  int64_t shape[4] = {1, 3, 1, 4}, strides[4] = {-7, 4, 999, 1};
  import_and_check(m, 0, 4, shape, strides, true, &tt_never);
  free(m);
}
END_TEST

START_TEST(zero_size_and_zero_d) {
  int64_t shape[3] = {2, 0, 3}, junk[3] = {-1, 0, 12345}; /* strides not read when a dimension is 0 */
  tt_tensor *t = tt_make(NULL, false, 3, shape, junk, tt_f32, tt_cpu);
  hdal_capsule *c = tt_legacy(t);
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_null(hdal_buffer_data(b));
  ck_assert_ok(hdal_buffer_copy_to_host(b, NULL, 0));
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  /* a zero-size copy */
  c = tt_legacy(tt_make(NULL, false, 3, shape, junk, tt_f32, tt_cpu));
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_always, &b));
  ck_assert(!hdal_buffer_is_view(b));
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 2);

  float *m = tt_iota(4);
  import_and_check(m, 2, 0, NULL, NULL, true, NULL); /* 0-d: one element */
  import_and_check(m, 3, 0, NULL, NULL, false, &tt_always);
  free(m);
}
END_TEST

START_TEST(broadcast_padded_negative_are_copied) {
  float *m = tt_iota(256);
  int64_t shape[2] = {4, 5};
  int64_t broadcast[2] = {0, 1}, padded[2] = {8, 1}, negative[2] = {-5, 1}, reversed[2] = {5, -1};
  import_and_check(m, 0, 2, shape, broadcast, false, NULL);
  import_and_check(m, 0, 2, shape, padded, false, NULL);
  import_and_check(m, 15, 2, shape, negative, false, NULL); /* rows backwards from element 15 */
  import_and_check(m, 4, 2, shape, reversed, false, NULL);
  int64_t shape4[4] = {3, 4, 5, 6}, strides4[4] = {1, 3 * 6 * 5 + 7, 3, 15}; /* padded permutation */
  float *big = tt_iota(4 * 97 + 200);
  import_and_check(big, 0, 4, shape4, strides4, false, NULL);
  free(big);
  free(m);
}
END_TEST

START_TEST(copy_never_gives_jaxlib_stride_message) {
  float *m = tt_iota(64);
  hdal_buffer *b;
  struct {
    int64_t shape[2], strides[2];
    const char *msg;
  } cases[] = {
      {{4, 5}, {0, 1}, MSG_STRIDES("[4,5]", "[0,1]")},
      {{4, 5}, {8, 1}, MSG_STRIDES("[4,5]", "[8,1]")},
      {{4, 5}, {-5, 1}, MSG_STRIDES("[4,5]", "[-5,1]")},
      {{2, 2}, {1, 1}, MSG_STRIDES("[2,2]", "[1,1]")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tt_tensor *t = tt_make(m, false, 2, cases[i].shape, cases[i].strides, tt_f32, tt_cpu);
    t->legacy.dl_tensor.byte_offset = 20 * sizeof(float);
    hdal_capsule *c = tt_legacy(t);
    ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b), HDAL_UNIMPLEMENTED, cases[i].msg,
                          HDAL_CAUSE_COPY_REFUSED);
    ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
    ck_assert_int_eq(tt_deleted, (int)i);
    hdal_capsule_destroy(c);
  }
  free(m);
}
END_TEST

START_TEST(misaligned_is_copied_or_refused) {
  char *raw = malloc(4 * 10 + 1);
  float v[10];
  for (int i = 0; i < 10; i++) v[i] = (float)i * 1.5f;
  memcpy(raw + 1, v, sizeof v);
  int64_t shape[1] = {10};
  hdal_capsule *c = tt_legacy(tt_make(raw + 1, false, 1, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b;
  char msg[200];
  snprintf(msg, sizeof msg, "Can't create a view of buffer with unaligned data, ptr: %#" PRIxPTR " is not aligned to 4 bytes. ",
           (uintptr_t)(raw + 1));
  ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b), HDAL_INVALID_ARGUMENT, msg,
                        HDAL_CAUSE_COPY_REFUSED);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(tt_deleted, 0);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b)); /* IF_NEEDED: a copy */
  ck_assert_int_eq(tt_deleted, 1);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_int_eq((uintptr_t)hdal_buffer_data(b) % 4, 0);
  float out[10];
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, sizeof out));
  ck_assert_mem_eq(out, v, sizeof v);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  free(raw);
}
END_TEST

static void expect_layout_error(int nd, const int64_t *shape, const int64_t *strides, void *data, uint64_t offset,
                                DLDataType dt, const char *msg) {
  tt_tensor *t = tt_make(data, false, nd, shape, strides, dt, tt_cpu);
  t->legacy.dl_tensor.byte_offset = offset;
  hdal_capsule *c = tt_legacy(t);
  hdal_buffer *b = (hdal_buffer *)1;
  int before = tt_deleted;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(tt_deleted, before);
  hdal_capsule_destroy(c);
}

START_TEST(overflows_and_bad_addresses) {
  float *m = tt_iota(16);
  int64_t big[3] = {INT64_C(1) << 40, INT64_C(1) << 30, 4};
  expect_layout_error(3, big, NULL, m, 0, tt_f32,
                      "DLPack tensor's element count overflows: dimensions were [1099511627776,1073741824,4]");
  int64_t bytes[1] = {INT64_C(1) << 62};
  expect_layout_error(1, bytes, NULL, m, 0, tt_f32,
                      "DLPack tensor's byte size overflows: dimensions were [4611686018427387904]");
  int64_t shape[2] = {3, 4}, huge_stride[2] = {INT64_MAX / 2, 1};
  expect_layout_error(2, shape, huge_stride, m, 0, tt_f32,
                      "DLPack tensor's byte span overflows: dimensions were [3,4], strides were [4611686018427387903,1]");
  /* The highest element offset is INT64_MAX itself: the span, one element
   * past it, is 2^63 elements, for bytes as for floats (without the checked
   * "+ 1" the bytes wrapped into a span of 2^63 bytes that was accepted). */
  int64_t top[2] = {3, 2};
  expect_layout_error(2, top, huge_stride, m, 0, tt_f32,
                      "DLPack tensor's byte span overflows: dimensions were [3,2], strides were [4611686018427387903,1]");
  expect_layout_error(2, top, huge_stride, m, 0, (DLDataType){kDLUInt, 8, 1},
                      "DLPack tensor's byte span overflows: dimensions were [3,2], strides were [4611686018427387903,1]");
  int64_t neg[2] = {-3, 4};
  expect_layout_error(2, neg, NULL, m, 0, tt_f32, "DLPack tensor has a negative dimension: shape[0] is -3");
  expect_layout_error(2, shape, NULL, NULL, 0, tt_f32, "DLPack tensor has NULL data but 12 elements");
  char msg[300];
  snprintf(msg, sizeof msg, "DLPack tensor's address wraps around: data %p + byte_offset %" PRIu64, (void *)m,
           UINT64_MAX - 8);
  expect_layout_error(2, shape, NULL, m, UINT64_MAX - 8, tt_f32, msg);
  /* Negative strides reaching below address 0. */
  int64_t back[1] = {-1};
  int64_t four[1] = {4};
  void *low = (void *)(uintptr_t)8;
  snprintf(msg, sizeof msg,
           "DLPack tensor's address range wraps around: data %p + byte_offset 0 spans bytes [-12, 4) around it", low);
  expect_layout_error(1, four, back, low, 0, tt_f32, msg);
  int64_t one[1] = {1};
  expect_layout_error(1, one, NULL, (void *)(uintptr_t)(UINTPTR_MAX - 1), 0, tt_f32,
                      "DLPack tensor's address range wraps around: data 0xfffffffffffffffe + byte_offset 0 spans "
                      "bytes [0, 4) around it");
  tt_tensor *t = tt_make(m, false, 2, shape, NULL, tt_f32, tt_cpu);
  t->legacy.dl_tensor.shape = NULL;
  hdal_capsule *c = tt_legacy(t);
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor has 2 dimensions but a NULL shape");
  hdal_capsule_destroy(c);
  free(m);
}
END_TEST

START_TEST(transposed_copy_to_host_large) {
  /* Exercises the tiled kernels, ragged edges included. */
  const int64_t R = 203, C = 517;
  float *m = tt_iota((size_t)(R * C));
  int64_t shape[2] = {R, C}, colmajor[2] = {1, R};
  import_and_check(m, 0, 2, shape, colmajor, true, NULL);
  import_and_check(m, 0, 2, shape, colmajor, false, &tt_always);
  int64_t shape3[3] = {3, 40, 33}, perm3[3] = {40 * 33, 1, 40}; /* batch of transposes */
  import_and_check(m, 0, 3, shape3, perm3, true, NULL);
  free(m);
}
END_TEST

START_TEST(transposes_of_every_edge) {
  /* Both sides below, at and past the kernels' 8 and 16, then one past 8 MiB
   * copied into an aligned buffer of hdal's (streaming stores). */
  static const int64_t sizes[] = {1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 33, 64, 65};
  size_t ns = sizeof sizes / sizeof sizes[0];
  float *m = tt_iota(65 * 65);
  for (size_t a = 0; a < ns; a++)
    for (size_t b = 0; b < ns; b++) {
      int64_t shape[2] = {sizes[a], sizes[b]}, colmajor[2] = {1, sizes[a]};
      import_and_check(m, 0, 2, shape, colmajor, true, NULL);
    }
  free(m);
  const int64_t R = 1544, C = 1560; /* 9.2 MiB; C % 16 == 8 */
  m = tt_iota((size_t)(R * C));
  int64_t shape[2] = {R, C}, colmajor[2] = {1, R};
  import_and_check(m, 0, 2, shape, colmajor, false, &tt_always);
  free(m);
}
END_TEST

START_TEST(other_element_sizes_compact) {
  /* uint8, int16, float64 and complex128 transposes and broadcasts, checked against a byte-level reference. */
  DLDataType types[] = {{kDLUInt, 8, 1}, {kDLInt, 16, 1}, {kDLFloat, 64, 1}, {kDLComplex, 128, 1}, {kDLInt, 32, 1}};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    size_t es = types[k].bits / 8;
    int64_t shape[2] = {13, 9}, strides[2] = {1, 13};
    unsigned char *m = malloc(13 * 9 * es);
    for (size_t i = 0; i < 13 * 9 * es; i++) m[i] = (unsigned char)(i * 7 + k);
    for (int pass = 0; pass < 2; pass++) {
      if (pass) strides[1] = 0; /* broadcast along dim 1 */
      hdal_capsule *c = tt_legacy(tt_make(m, false, 2, shape, strides, types[k], tt_cpu));
      hdal_buffer *b;
      ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_always, &b));
      const unsigned char *d = hdal_buffer_data(b);
      for (int64_t i = 0; i < 13; i++)
        for (int64_t j = 0; j < 9; j++)
          ck_assert_mem_eq(d + (size_t)(i * 9 + j) * es, m + (size_t)(i * strides[0] + j * strides[1]) * es, es);
      hdal_buffer_release(b);
      hdal_capsule_destroy(c);
    }
    free(m);
  }
}
END_TEST

START_TEST(float4_packed) {
  /* 4-bit elements: row-major is a view, a transposition is copied and packed low nibble first. */
  DLDataType f4 = {kDLFloat4_e2m1fn, 4, 1};
  uint8_t packed[3] = {0x10, 0x32, 0x54}; /* elements 0..5 */
  int64_t shape[2] = {2, 3}, colmajor[2] = {1, 2};
  hdal_capsule *c = tt_legacy(tt_make(packed, false, 2, shape, NULL, f4, tt_cpu));
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b));
  ck_assert_ptr_eq(hdal_buffer_data(b), packed);
  uint8_t out[3];
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, 3));
  ck_assert_mem_eq(out, packed, 3);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  /* (i, j) = element i + 2j: rows 0 2 4 / 1 3 5 */
  c = tt_legacy(tt_make(packed, false, 2, shape, colmajor, f4, tt_cpu));
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, 3));
  uint8_t want[3] = {0x20, 0x14, 0x53};
  ck_assert_mem_eq(out, want, 3);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  /* padded (one element per byte, versioned flag): packed on import */
  uint8_t padded[6] = {0, 1, 2, 3, 4, 5};
  tt_tensor *t = tt_make(padded, false, 2, shape, NULL, f4, tt_cpu);
  c = tt_versioned(t, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b), HDAL_INVALID_ARGUMENT,
                        "Can't create a view of a padded sub-byte DLPack tensor: hdal keeps 4-bit elements packed "
                        "in row-major order, and copying is disabled (HDAL_COPY_NEVER)",
                        HDAL_CAUSE_COPY_REFUSED);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, 3));
  ck_assert_mem_eq(out, packed, 3);
  hdal_buffer_release(b);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 3);
}
END_TEST

int main(void) {
  Suite *s = suite_create("import_layout");
  TCase *tc = tcase_create("layout");
  unsetenv("HDAL_BACKENDS");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, row_major_and_null_strides_are_views);
  tcase_add_test(tc, permutations_are_views);
  tcase_add_test(tc, size_one_dimensions_take_any_stride);
  tcase_add_test(tc, zero_size_and_zero_d);
  tcase_add_test(tc, broadcast_padded_negative_are_copied);
  tcase_add_test(tc, copy_never_gives_jaxlib_stride_message);
  tcase_add_test(tc, misaligned_is_copied_or_refused);
  tcase_add_test(tc, overflows_and_bad_addresses);
  tcase_add_test(tc, transposed_copy_to_host_large);
  tcase_add_test(tc, transposes_of_every_edge);
  tcase_add_test(tc, other_element_sizes_compact);
  tcase_add_test(tc, float4_packed);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
