/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls's JSON writer (tools/json.c): layout, nesting, and strings that
 * stay JSON whatever bytes a driver puts in a name. */
#include "../tools/json.c"
#include "testutil.h"

static char *written(void (*fn)(json_writer *)) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  json_writer w;
  json_begin(&w, f);
  fn(&w);
  ck_assert_int_eq(json_end(&w), 0);
  fclose(f);
  return buf;
}

static void nested(json_writer *w) {
  json_string(w, "name", "cpu");
  json_int(w, "n", -3);
  json_bool(w, "ok", true);
  json_string(w, "none", NULL);
  json_open(w, "list", '[');
  json_int(w, NULL, 1);
  json_open(w, NULL, '{');
  json_close(w, '}');
  json_close(w, ']');
  json_open(w, "empty", '[');
  json_close(w, ']');
}

START_TEST(layout_and_nesting) {
  char *s = written(nested);
  ck_assert_str_eq(s, "{\n  \"name\": \"cpu\",\n  \"n\": -3,\n  \"ok\": true,\n  \"none\": null,\n  \"list\": [\n"
                      "    1,\n    {}\n  ],\n  \"empty\": []\n}\n");
  free(s);
}
END_TEST

static void strings(json_writer *w) {
  json_string(w, "quote\"back\\slash", "tab\there\nnl\x01\x7f");
  json_string(w, "utf8", "Intel\xc2\xae \xe2\x82\xac \xf0\x9f\x98\x80");
  json_string(w, "bad", "a\xff" "b\xc3" "c\xe2\x82");
}

START_TEST(strings_escaped_and_kept_utf8) {
  char *s = written(strings);
  ck_assert_str_eq(s, "{\n  \"quote\\\"back\\\\slash\": \"tab\\there\\nnl\\u0001\\u007f\",\n"
                      "  \"utf8\": \"Intel\xc2\xae \xe2\x82\xac \xf0\x9f\x98\x80\",\n"
                      "  \"bad\": \"a\\ufffdb\\ufffdc\\ufffd\"\n}\n");
  free(s);
}
END_TEST

static void nothing(json_writer *w) { (void)w; }

START_TEST(empty_document) {
  char *s = written(nothing);
  ck_assert_str_eq(s, "{}\n");
  free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json");
  TCase *tc = tcase_create("json");
  tcase_add_test(tc, layout_and_nesting);
  tcase_add_test(tc, strings_escaped_and_kept_utf8);
  tcase_add_test(tc, empty_document);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
