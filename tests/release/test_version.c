/* SPDX-License-Identifier: BSD-3-Clause */
/* The version macros of <hdal/version.h> (through <hdal.h>) and the options
 * initialisers: what the headers say agrees with the library, and an
 * initialised options struct means what NULL options mean. */
#include "dlpack_testutil.h"

/* Usable in #if, as a compile-time feature test is. */
#if !HDAL_VERSION_CHECK(0, 0, 0) || HDAL_VERSION_CHECK(HDAL_VERSION_MAJOR + 1, 0, 0)
#error "HDAL_VERSION_CHECK is wrong in #if"
#endif

START_TEST(macros_agree_with_the_library) {
  char s[64];
  snprintf(s, sizeof s, "%d.%d.%d", HDAL_VERSION_MAJOR, HDAL_VERSION_MINOR, HDAL_VERSION_PATCH);
  ck_assert_str_eq(s, hdal_version_string());
  ck_assert_str_eq(HDAL_VERSION_STRING, hdal_version_string());
  ck_assert_str_eq(HDAL_VERSION_STRING, PACKAGE_VERSION); /* configure's, from VERSION too */
}
END_TEST

START_TEST(version_check_compares_fields) {
  const int M = HDAL_VERSION_MAJOR, m = HDAL_VERSION_MINOR, p = HDAL_VERSION_PATCH;
  ck_assert(HDAL_VERSION_CHECK(M, m, p));
  ck_assert(!HDAL_VERSION_CHECK(M, m, p + 1));
  ck_assert(!HDAL_VERSION_CHECK(M, m + 1, 0));
  ck_assert(!HDAL_VERSION_CHECK(M + 1, 0, 0));
  if (p > 0) ck_assert(HDAL_VERSION_CHECK(M, m, p - 1));
  if (m > 0) ck_assert(HDAL_VERSION_CHECK(M, m - 1, p + 100));
  if (M > 0) ck_assert(HDAL_VERSION_CHECK(M - 1, m + 100, p + 100));
  ck_assert(HDAL_VERSION_CHECK(0, 0, 0));
}
END_TEST

START_TEST(context_options_init) {
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  ck_assert_uint_eq(o.struct_size, sizeof o);
  ck_assert_ptr_null(o.backends);
  ck_assert_ptr_null(o.backend_path);
  ck_assert_int_eq(o.process_index, 0);
  ck_assert_int_eq(o.process_count, 0);
  o.backends = "cpu";
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_int_eq(strncmp(test_backend_status(ctx, "cpu"), "ok: ", 4), 0);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, i)), "cpu");
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(import_options_init) {
  const hdal_import_options o = HDAL_IMPORT_OPTIONS_INIT;
  ck_assert_uint_eq(o.struct_size, sizeof o);
  ck_assert_int_eq(o.copy, HDAL_COPY_IF_NEEDED);
  ck_assert(!o.has_stream);
  ck_assert_int_eq(o.stream, 0);
  /* As NULL options: a host array on the CPU device is imported without a copy. */
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[] = {4};
  tt_tensor *t = tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_capsule *c = tt_legacy(t);
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(export_options_init) {
  const hdal_export_options o = HDAL_EXPORT_OPTIONS_INIT;
  ck_assert_uint_eq(o.struct_size, sizeof o);
  ck_assert_uint_eq(o.max_version.major, 0);
  ck_assert_uint_eq(o.max_version.minor, 0);
  ck_assert(!o.has_dl_device);
  ck_assert_int_eq(o.copy, HDAL_COPY_IF_NEEDED);
  ck_assert(!o.has_stream);
  /* As NULL options: a legacy "dltensor" capsule over the buffer's own memory. */
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[] = {4};
  float *data = tt_iota(4);
  tt_tensor *t = tt_make(data, true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_capsule *in = tt_legacy(t), *out;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, in, NULL, NULL, &b));
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &out));
  ck_assert_str_eq(hdal_capsule_name(out), "dltensor");
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert_ptr_eq(m->dl_tensor.data, data);
  hdal_capsule_destroy(out);
  hdal_capsule_destroy(in);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("version");
  TCase *tc = tcase_create("version");
  tcase_add_test(tc, macros_agree_with_the_library);
  tcase_add_test(tc, version_check_compares_fields);
  tcase_add_test(tc, context_options_init);
  tcase_add_test(tc, import_options_init);
  tcase_add_test(tc, export_options_init);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
