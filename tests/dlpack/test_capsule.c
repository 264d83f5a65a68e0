/* SPDX-License-Identifier: BSD-3-Clause */
/* Capsules: the PyCapsule-like "consumed at most once" protocol (docs/dlpack.md, "Capsules"). */
#include "dlpack_testutil.h"

START_TEST(wrap_names_and_pointer) {
  tt_tensor *t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  hdal_capsule *c = hdal_capsule_wrap(&t->legacy);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_ptr_eq(hdal_capsule_pointer(c), &t->legacy);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1); /* unconsumed: the deleter runs */

  t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  c = hdal_capsule_wrap_versioned(&t->versioned);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor_versioned");
  ck_assert_ptr_eq(hdal_capsule_pointer(c), &t->versioned);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 2);
}
END_TEST

START_TEST(take_consumes_once) {
  tt_tensor *t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  hdal_capsule *c = tt_legacy(t);
  ck_assert_ptr_eq(hdal_capsule_take(c), &t->legacy);
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  ck_assert_ptr_null(hdal_capsule_take(c)); /* already consumed: NULL, nothing changes */
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 0); /* consumed: the taker owns the tensor */
  t->legacy.deleter(&t->legacy);
  ck_assert_int_eq(tt_deleted, 1);

  t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  c = tt_versioned(t, 0);
  ck_assert_ptr_eq(hdal_capsule_take(c), &t->versioned);
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor_versioned");
  ck_assert_ptr_null(hdal_capsule_take(c));
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  t->versioned.deleter(&t->versioned);
  ck_assert_int_eq(tt_deleted, 2);
}
END_TEST

START_TEST(new_with_any_name) {
  int x = 42;
  hdal_capsule *c = hdal_capsule_new("my_binding_object", &x);
  ck_assert_str_eq(hdal_capsule_name(c), "my_binding_object");
  ck_assert_ptr_eq(hdal_capsule_pointer(c), &x);
  ck_assert_ptr_null(hdal_capsule_take(c)); /* not a DLPack tensor: nothing to hand over */
  ck_assert_str_eq(hdal_capsule_name(c), "my_binding_object");
  hdal_capsule_destroy(c); /* no deleter to call: it must not touch x */
  ck_assert_int_eq(x, 42);

  c = hdal_capsule_new(NULL, &x);
  ck_assert_ptr_null(hdal_capsule_name(c));
  hdal_capsule_destroy(c);

  /* A standard name given by hand behaves as the wrapper's. */
  tt_tensor *t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  c = hdal_capsule_new("dltensor", &t->legacy);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);

  /* A capsule created already consumed never calls a deleter. */
  t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  c = hdal_capsule_new("used_dltensor", &t->legacy);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  t->legacy.deleter(&t->legacy);
}
END_TEST

START_TEST(null_deleter_and_null_pointer) {
  tt_tensor *t = tt_make(NULL, false, 0, NULL, NULL, tt_f32, tt_cpu);
  t->legacy.deleter = NULL; /* allowed by DLPack */
  hdal_capsule_destroy(tt_legacy(t));
  ck_assert_int_eq(tt_deleted, 0);
  free(t);
  hdal_capsule *c = hdal_capsule_wrap(NULL);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_null(hdal_capsule_pointer(c));
  hdal_capsule_destroy(c);
  hdal_capsule_destroy(NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("capsule");
  TCase *tc = tcase_create("capsule");
  tcase_add_test(tc, wrap_names_and_pointer);
  tcase_add_test(tc, take_consumes_once);
  tcase_add_test(tc, new_with_any_name);
  tcase_add_test(tc, null_deleter_and_null_pointer);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
