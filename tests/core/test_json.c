/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls's JSON writer (tools/json.c): layout, nesting, and strings that
 * stay JSON whatever bytes a driver puts in a name. */
#include "../../tools/json.c"
#include "../../tools/text.c"
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

/* UTF-8 strictly (docs/design.md, "hdal-ls"): overlong forms, surrogates and code points above
 * U+10FFFF are not UTF-8; one U+FFFD per maximal subpart, as Python's
 * decoder with errors="replace" gives (b"...".decode("utf-8", "replace")). */
static void strict(json_writer *w) {
  json_string(w, "overlong3", "\xe0\x80\x80");
  json_string(w, "overlong2", "\xc0\xaf");
  json_string(w, "overlong4", "\xf0\x80\x80\xaf");
  json_string(w, "surrogate", "\xed\xa0\x80");
  json_string(w, "too_big", "\xf4\x90\x80\x80");
  json_string(w, "f5", "\xf5\x80\x80\x80");
  json_string(w, "cut", "x\xf0\x9f\x98");
  json_string(w, "edges", "\xed\x9f\xbf \xee\x80\x80 \xf4\x8f\xbf\xbf \xe0\xa0\x80 \xf0\x90\x80\x80");
}

START_TEST(strings_strict_utf8) {
  char *s = written(strict);
  ck_assert_str_eq(s, "{\n  \"overlong3\": \"\\ufffd\\ufffd\\ufffd\",\n  \"overlong2\": \"\\ufffd\\ufffd\",\n"
                      "  \"overlong4\": \"\\ufffd\\ufffd\\ufffd\\ufffd\",\n  \"surrogate\": \"\\ufffd\\ufffd\\ufffd\",\n"
                      "  \"too_big\": \"\\ufffd\\ufffd\\ufffd\\ufffd\",\n  \"f5\": \"\\ufffd\\ufffd\\ufffd\\ufffd\",\n"
                      "  \"cut\": \"x\\ufffd\",\n"
                      "  \"edges\": \"\xed\x9f\xbf \xee\x80\x80 \xf4\x8f\xbf\xbf \xe0\xa0\x80 \xf0\x90\x80\x80\"\n}\n");
  free(s);
}
END_TEST

static void numbers(json_writer *w) {
  json_uint(w, "max", UINT64_MAX);
  json_int(w, "min", INT64_MIN);
}

START_TEST(unsigned_numbers) {
  char *s = written(numbers);
  ck_assert_str_eq(s, "{\n  \"max\": 18446744073709551615,\n  \"min\": -9223372036854775808\n}\n");
  free(s);
}
END_TEST

/* The table's escaping (tools/text.c): nothing that a terminal acts on. */
START_TEST(text_escaped) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain Intel\xc2\xae \xe2\x82\xac", "plain Intel\xc2\xae \xe2\x82\xac"},
      {"esc\x1b[31mred\r\nrow\tx", "esc\\x1b[31mred\\r\\nrow\\tx"},
      {"back\\slash \x7f \x01", "back\\\\slash \\x7f \\x01"},
      {"c1 \xc2\x9b rlo \xe2\x80\xae ls \xe2\x80\xa8 fsi \xe2\x81\xa8", "c1 \\u009b rlo \\u202e ls \\u2028 fsi \\u2068"},
      /* Invisible format characters: BOM, zero-width space, ZWJ, LRM, word joiner, ALM, soft hyphen, a tag. */
      {"bom \xef\xbb\xbf zw \xe2\x80\x8b zwj \xe2\x80\x8d lrm \xe2\x80\x8e wj \xe2\x81\xa0 alm \xd8\x9c shy \xc2\xad tag \xf3\xa0\x80\x81",
       "bom \\ufeff zw \\u200b zwj \\u200d lrm \\u200e wj \\u2060 alm \\u061c shy \\u00ad tag \\U000e0001"},
      {"bad \xe0\x80\x80 \xed\xa0\x80 \xff", "bad \\xe0\\x80\\x80 \\xed\\xa0\\x80 \\xff"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *e = text_escape(cases[i].in);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(e, cases[i].out);
    free(e);
  }
  char *e = text_escape(NULL);
  ck_assert_str_eq(e, "");
  free(e);
  ck_assert_uint_eq(text_width("Intel\xc2\xae \xe2\x82\xac"), 8);
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
  tcase_add_test(tc, strings_strict_utf8);
  tcase_add_test(tc, unsigned_numbers);
  tcase_add_test(tc, text_escaped);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
