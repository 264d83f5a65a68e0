/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffers and DLPack export (docs/dlpack.md, "Buffers" and "Export"). */
#include "dlpack_testutil.h"

static hdal_context *ctx;
static void setup(void) {
  /* Two CPU devices (two NUMA nodes) of a machine described to hwloc. */
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
}
static void teardown(void) { hdal_context_destroy(ctx); }

static hdal_buffer *import_view(float *data, int nd, const int64_t *shape, const int64_t *strides, uint64_t flags,
                                bool versioned, uint64_t byte_offset) {
  tt_tensor *t = tt_make(data, true, nd, shape, strides, tt_f32, tt_cpu);
  t->legacy.dl_tensor.byte_offset = t->versioned.dl_tensor.byte_offset = byte_offset;
  hdal_capsule *c = versioned ? tt_versioned(t, flags) : tt_legacy(t);
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert(hdal_buffer_is_view(b));
  hdal_capsule_destroy(c);
  return b;
}


START_TEST(legacy_export_shares_memory) {
  int64_t shape[2] = {3, 4};
  float *data = tt_iota(20);
  hdal_buffer *b = import_view(data, 2, shape, NULL, 0, false, 8 * sizeof(float));
  hdal_capsule *c;
  ck_assert_ok(hdal_buffer_to_dlpack(b, NULL, &c));
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  DLManagedTensor *m = hdal_capsule_pointer(c);
  ck_assert_ptr_eq(m->dl_tensor.data, data + 8); /* byte_offset folded into data */
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  ck_assert_int_eq(m->dl_tensor.ndim, 2);
  ck_assert_int_eq(m->dl_tensor.shape[0], 3);
  ck_assert_int_eq(m->dl_tensor.shape[1], 4);
  ck_assert_ptr_nonnull(m->dl_tensor.strides);
  ck_assert_int_eq(m->dl_tensor.strides[0], 4);
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCPU);
  ck_assert_int_eq(m->dl_tensor.dtype.code, kDLFloat);
  /* the export keeps the buffer alive */
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 0);
  ck_assert_float_eq(((float *)m->dl_tensor.data)[11], 19.0f);
  hdal_capsule_destroy(c); /* unconsumed: its deleter drops the last reference */
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

START_TEST(versioned_export_flags_and_version) {
  int64_t shape[1] = {6};
  hdal_buffer *b = import_view(tt_iota(6), 1, shape, NULL, 0, false, 0);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 0}};
  hdal_capsule *c;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor_versioned");
  DLManagedTensorVersioned *m = hdal_capsule_pointer(c);
  ck_assert_uint_eq(m->version.major, 1);
  ck_assert_uint_eq(m->version.minor, 0); /* never above what the consumer asked for */
  ck_assert_uint_eq(m->flags, 0);
  ck_assert_ptr_eq(m->dl_tensor.data, hdal_buffer_data(b));
  hdal_capsule_destroy(c);
  o.max_version = (DLPackVersion){3, 7};
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
  m = hdal_capsule_pointer(c);
  ck_assert_uint_eq(m->version.major, 1);
  ck_assert_uint_eq(m->version.minor, HDAL_DLPACK_MINOR);
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

/* The tensor without a capsule: legacy or versioned as asked, the buffer kept alive until its deleter runs. */
START_TEST(tensor_export_without_a_capsule) {
  int64_t shape[1] = {6};
  hdal_buffer *b = import_view(tt_iota(6), 1, shape, NULL, 0, false, 0);
  void *t;
  ck_assert_ok(hdal_buffer_to_dlpack_tensor(b, NULL, &t));
  DLManagedTensor *legacy = t;
  ck_assert_ptr_eq(legacy->dl_tensor.data, hdal_buffer_data(b));
  ck_assert_int_eq(legacy->dl_tensor.strides[0], 1);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 3}};
  ck_assert_ok(hdal_buffer_to_dlpack_tensor(b, &o, &t));
  DLManagedTensorVersioned *v = t;
  ck_assert_uint_eq(v->version.major, 1);
  ck_assert_uint_eq(v->version.minor, 3);
  ck_assert_ptr_eq(v->dl_tensor.data, hdal_buffer_data(b));
  hdal_buffer_release(b);
  legacy->deleter(legacy);
  ck_assert_int_eq(tt_deleted, 0); /* the versioned tensor still holds it */
  v->deleter(v);
  ck_assert_int_eq(tt_deleted, 1);
  ck_assert_error(hdal_buffer_to_dlpack_tensor(NULL, NULL, &t), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_to_dlpack_tensor: buffer is NULL");
  ck_assert_ptr_null(t);
  ck_assert_error(hdal_buffer_to_dlpack_tensor(NULL, NULL, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_to_dlpack_tensor: out is NULL");
}
END_TEST

START_TEST(round_trip_is_zero_copy) {
  int64_t shape[2] = {5, 7}, colmajor[2] = {1, 5};
  float *data = tt_iota(35);
  hdal_buffer *b = import_view(data, 2, shape, colmajor, 0, false, 0);
  for (int versioned = 0; versioned < 2; versioned++) {
    hdal_export_options o = {.struct_size = sizeof o, .max_version = {versioned ? 1 : 0, 0}};
    hdal_capsule *c;
    ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
    hdal_buffer *again;
    ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, hdal_buffer_device(b), &tt_never, &again));
    ck_assert_ptr_eq(hdal_buffer_data(again), data);
    ck_assert_int_eq(hdal_buffer_strides(again)[0], 1);
    ck_assert_int_eq(hdal_buffer_strides(again)[1], 5);
    hdal_capsule_destroy(c);
    hdal_buffer_release(again);
  }
  ck_assert_int_eq(tt_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

START_TEST(read_only_round_trip_and_legacy_refusal) {
  int64_t shape[1] = {4};
  float *data = tt_iota(4);
  hdal_buffer *b = import_view(data, 1, shape, NULL, DLPACK_FLAG_BITMASK_READ_ONLY, true, 0);
  ck_assert(hdal_buffer_is_read_only(b));
  hdal_capsule *c = (hdal_capsule *)1;
  ck_assert_error(hdal_buffer_to_dlpack(b, NULL, &c), HDAL_FAILED_PRECONDITION,
                  "Can't export a read-only buffer as a legacy DLPack tensor (\"dltensor\" cannot say read-only): "
                  "ask for max_version 1.0 or later, or copy with HDAL_COPY_ALWAYS");
  ck_assert_ptr_null(c);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 1}};
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
  DLManagedTensorVersioned *m = hdal_capsule_pointer(c);
  ck_assert_uint_eq(m->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  ck_assert_ptr_eq(m->dl_tensor.data, data);
  hdal_buffer *again;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &again));
  ck_assert(hdal_buffer_is_read_only(again));
  ck_assert_ptr_eq(hdal_buffer_data(again), data);
  hdal_capsule_destroy(c);
  hdal_buffer_release(again);
  /* Legacy with a copy is allowed: the copy is the consumer's to write. */
  hdal_export_options always = {.struct_size = sizeof always, .copy = HDAL_COPY_ALWAYS};
  ck_assert_ok(hdal_buffer_to_dlpack(b, &always, &c));
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  DLManagedTensor *lm = hdal_capsule_pointer(c);
  ck_assert_ptr_ne(lm->dl_tensor.data, data);
  ck_assert_mem_eq(lm->dl_tensor.data, data, 4 * sizeof(float));
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

START_TEST(copied_export_is_flagged) {
  int64_t shape[2] = {3, 3};
  float *data = tt_iota(9);
  hdal_buffer *b = import_view(data, 2, shape, NULL, 0, false, 0);
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 1}, .copy = HDAL_COPY_ALWAYS};
  hdal_capsule *c;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
  DLManagedTensorVersioned *m = hdal_capsule_pointer(c);
  ck_assert_uint_eq(m->flags, DLPACK_FLAG_BITMASK_IS_COPIED);
  ck_assert_ptr_ne(m->dl_tensor.data, data);
  ck_assert_mem_eq(m->dl_tensor.data, data, sizeof(float) * 9);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1); /* the copy does not hold the source */
  hdal_capsule_destroy(c);
}
END_TEST

START_TEST(export_dl_device_option) {
  int64_t shape[1] = {3};
  hdal_buffer *b = import_view(tt_iota(3), 1, shape, NULL, 0, false, 0);
  hdal_export_options o = {.struct_size = sizeof o, .has_dl_device = true, .dl_device = {kDLCPU, 0}};
  hdal_capsule *c;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c)); /* its own device: no copy */
  ck_assert_ptr_eq(((DLManagedTensor *)hdal_capsule_pointer(c))->dl_tensor.data, hdal_buffer_data(b));
  hdal_capsule_destroy(c);
  o.dl_device = (DLDevice){kDLCUDA, 0};
  ck_assert_error(hdal_buffer_to_dlpack(b, &o, &c), HDAL_INVALID_ARGUMENT,
                  "No hdal backend serves DLPack device type kDLCUDA (2), device id 0");
  hdal_buffer_release(b);
}
END_TEST

START_TEST(copy_to_host_checks_size_and_transposes) {
  int64_t shape[2] = {2, 3}, colmajor[2] = {1, 2};
  hdal_buffer *b = import_view(tt_iota(6), 2, shape, colmajor, 0, false, 0);
  float out[6];
  ck_assert_error(hdal_buffer_copy_to_host(b, out, 5 * sizeof(float)), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_copy_to_host: the buffer holds 24 bytes (compact), the destination 20");
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, sizeof out));
  float want[6] = {0, 2, 4, 1, 3, 5};
  ck_assert_mem_eq(out, want, sizeof want);
  hdal_buffer_release(b);
}
END_TEST

START_TEST(copy_to_device_between_cpu_devices) {
  int64_t shape[2] = {2, 3}, colmajor[2] = {1, 2};
  float *data = tt_iota(6);
  hdal_buffer *b = import_view(data, 2, shape, colmajor, 0, false, 0);
  hdal_device *d1 = hdal_context_device(ctx, 1);
  ck_assert_ptr_eq(hdal_buffer_device(b), hdal_context_device(ctx, 0)); /* the first CPU device */
  hdal_buffer *c;
  ck_assert_ok(hdal_buffer_copy_to_device(b, d1, &c));
  ck_assert_ptr_eq(hdal_buffer_device(c), d1);
  ck_assert(!hdal_buffer_is_view(c));
  ck_assert_ptr_ne(hdal_buffer_data(c), data);
  const float *cd = hdal_buffer_data(c);
  float want[6] = {0, 2, 4, 1, 3, 5};
  ck_assert_mem_eq(cd, want, sizeof want);
  ck_assert_int_eq(hdal_buffer_strides(c)[0], 3);
  ck_assert_int_eq(hdal_buffer_strides(c)[1], 1);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_buffer_release(c);
  /* Importing onto the second device directly is zero-copy: it addresses all host memory. */
  int64_t s1[1] = {6};
  hdal_capsule *cap = tt_legacy(tt_make(tt_iota(6), true, 1, s1, NULL, tt_f32, tt_cpu));
  void *p = hdal_capsule_pointer(cap);
  hdal_buffer *v;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, d1, &tt_never, &v));
  ck_assert_ptr_eq(hdal_buffer_data(v), ((DLManagedTensor *)p)->dl_tensor.data);
  ck_assert_ptr_eq(hdal_buffer_device(v), d1);
  hdal_buffer_release(v);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(tt_deleted, 2);
}
END_TEST

START_TEST(copy_to_device_refuses_remote) {
  test_add_process_copy(ctx, 1);
  int64_t shape[1] = {3};
  hdal_buffer *b = import_view(tt_iota(3), 1, shape, NULL, 0, false, 0), *c = (hdal_buffer *)1;
  hdal_device *remote = hdal_context_device(ctx, 2);
  ck_assert(!hdal_device_is_addressable(remote));
  ck_assert_error(hdal_buffer_copy_to_device(b, remote, &c), HDAL_FAILED_PRECONDITION,
                  "hdal_buffer_copy_to_device: device 2 (cpu) is not addressable by the current process");
  ck_assert_ptr_null(c);
  hdal_buffer_release(b);
}
END_TEST

START_TEST(large_copy_uses_own_mapping) {
  /* Above the mapping threshold: allocation, population and release of a mapping. */
  size_t n = (size_t)3 << 20;
  int64_t shape[2] = {1024, 3072}, colmajor[2] = {1, 1024};
  float *data = tt_iota(n);
  hdal_buffer *b = import_view(data, 2, shape, colmajor, 0, false, 0), *c;
  ck_assert_ok(hdal_buffer_copy_to_device(b, hdal_context_device(ctx, 1), &c));
  const float *cd = hdal_buffer_data(c);
  ck_assert_int_eq((uintptr_t)cd % 64, 0);
  for (size_t i = 0; i < 1024; i += 97)
    for (size_t j = 0; j < 3072; j += 101) ck_assert_float_eq(cd[i * 3072 + j], data[j * 1024 + i]);
  hdal_buffer_release(c);
  hdal_buffer_release(b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("export");
  TCase *tc = tcase_create("export");
  unsetenv("HDAL_BACKENDS");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, legacy_export_shares_memory);
  tcase_add_test(tc, versioned_export_flags_and_version);
  tcase_add_test(tc, tensor_export_without_a_capsule);
  tcase_add_test(tc, round_trip_is_zero_copy);
  tcase_add_test(tc, read_only_round_trip_and_legacy_refusal);
  tcase_add_test(tc, copied_export_is_flagged);
  tcase_add_test(tc, export_dl_device_option);
  tcase_add_test(tc, copy_to_host_checks_size_and_transposes);
  tcase_add_test(tc, copy_to_device_between_cpu_devices);
  tcase_add_test(tc, copy_to_device_refuses_remote);
  tcase_add_test(tc, large_copy_uses_own_mapping);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
