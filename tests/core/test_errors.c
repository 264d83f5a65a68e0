/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors: codes, names and messages (docs/reference.md, "Errors"). */
#include "testutil.h"

START_TEST(code_names_follow_absl) {
  static const char *const expected[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
      "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  for (int c = 0; c <= 16; c++) ck_assert_str_eq(hdal_code_name((hdal_code)c), expected[c]);
  ck_assert_int_eq(HDAL_INVALID_ARGUMENT, 3);
  ck_assert_int_eq(HDAL_FAILED_PRECONDITION, 9);
  ck_assert_int_eq(HDAL_UNIMPLEMENTED, 12);
  ck_assert_int_eq(HDAL_UNAUTHENTICATED, 16);
  ck_assert_str_eq(hdal_code_name((hdal_code)17), "UNKNOWN");
  ck_assert_str_eq(hdal_code_name((hdal_code)-1), "UNKNOWN");
}
END_TEST

START_TEST(causes_are_none_unless_the_library_says) {
  ck_assert_int_eq(HDAL_CAUSE_NONE, 0);
  ck_assert_int_eq(HDAL_CAUSE_COPY_REFUSED, 1);
  ck_assert_int_eq(hdal_error_cause(NULL), HDAL_CAUSE_NONE);
  hdal_error *e = hdal_error_create(HDAL_INVALID_ARGUMENT, "copying is disabled (HDAL_COPY_NEVER)");
  ck_assert_int_eq(hdal_error_cause(e), HDAL_CAUSE_NONE); /* a cause is data, never read from a message */
  hdal_error_destroy(e);
}
END_TEST

START_TEST(error_carries_code_and_message_without_prefix) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu;rm -rf"};
  hdal_context *ctx = (hdal_context *)0x1;
  hdal_error *e = hdal_context_create(&o, &ctx);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_null(ctx);
  ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
  ck_assert_str_eq(hdal_error_message(e),
                   "invalid backend list \"cpu;rm -rf\": expected names separated by commas, each optionally "
                   "preceded by '-' (e.g. \"cpu,opencl\" or \"-cuda\")");
  hdal_error_destroy(e);
  hdal_error_destroy(NULL); /* harmless */
}
END_TEST

START_TEST(options_struct_size_checked) {
  hdal_context_options o = {.struct_size = 1};
  hdal_context *ctx;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: struct_size 1 is too small");
  ck_assert_error(hdal_context_create(NULL, NULL), HDAL_INVALID_ARGUMENT, "hdal_context_create: out is NULL");
}
END_TEST

START_TEST(version_string_is_the_package_version) { ck_assert_str_eq(hdal_version_string(), PACKAGE_VERSION); }
END_TEST

int main(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tcase_create("errors");
  tcase_add_test(tc, code_names_follow_absl);
  tcase_add_test(tc, causes_are_none_unless_the_library_says);
  tcase_add_test(tc, error_carries_code_and_message_without_prefix);
  tcase_add_test(tc, options_struct_size_checked);
  tcase_add_test(tc, version_string_is_the_package_version);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
