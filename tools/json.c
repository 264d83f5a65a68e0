/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the JSON writer (json.h): two-space indentation, RFC 8259 strings. */
#include "config.h"
#include "json.h"

static void json_string_value(json_writer *w, const char *s);

/* Starts a member: the comma after the previous one, a new line, the indent, the key. */
static void member(json_writer *w, const char *key) {
  if (w->has_members[w->depth]) fputc(',', w->out);
  w->has_members[w->depth] = true;
  fprintf(w->out, "\n%*s", 2 * w->depth, "");
  if (key) {
    json_string_value(w, key);
    fputs(": ", w->out);
  }
}

/* A UTF-8 sequence's length from its lead byte, 0 when it cannot lead one. */
static int utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return 2;
  if (c >= 0xe0 && c <= 0xef) return 3;
  if (c >= 0xf0 && c <= 0xf4) return 4;
  return 0;
}

/* A quoted string: control characters escaped; bytes that are not UTF-8 (a
 * driver's name can hold anything) become U+FFFD, so the output stays JSON. */
static void json_string_value(json_writer *w, const char *s) {
  fputc('"', w->out);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    unsigned char c = *p;
    int n = utf8_length(c), k = 1;
    while (k < n && (p[k] & 0xc0) == 0x80) k++;
    if (n == 0 || k < n) { /* not a whole sequence: one replacement for the bytes seen */
      fputs("\\ufffd", w->out);
      p += k;
      continue;
    }
    if (c == '"' || c == '\\') fprintf(w->out, "\\%c", c);
    else if (c == '\n') fputs("\\n", w->out);
    else if (c == '\t') fputs("\\t", w->out);
    else if (c < 0x20 || c == 0x7f) fprintf(w->out, "\\u%04x", c);
    else fwrite(p, 1, (size_t)n, w->out);
    p += n;
  }
  fputc('"', w->out);
}

void json_begin(json_writer *w, FILE *out) {
  *w = (json_writer){.out = out, .depth = 1};
  fputc('{', out);
}

int json_end(json_writer *w) {
  json_close(w, '}');
  fputc('\n', w->out);
  return ferror(w->out) ? -1 : 0;
}

void json_open(json_writer *w, const char *key, char bracket) {
  member(w, key);
  fputc(bracket, w->out);
  if (w->depth + 1 < JSON_MAX_DEPTH) w->depth++;
  w->has_members[w->depth] = false;
}

void json_close(json_writer *w, char bracket) {
  bool any = w->has_members[w->depth];
  if (w->depth > 0) w->depth--;
  if (any) fprintf(w->out, "\n%*s", 2 * w->depth, "");
  fputc(bracket, w->out);
}

void json_string(json_writer *w, const char *key, const char *value) {
  member(w, key);
  if (value) json_string_value(w, value);
  else fputs("null", w->out);
}

void json_int(json_writer *w, const char *key, long long value) {
  member(w, key);
  fprintf(w->out, "%lld", value);
}

void json_bool(json_writer *w, const char *key, bool value) {
  member(w, key);
  fputs(value ? "true" : "false", w->out);
}
