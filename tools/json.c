/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the JSON writer (json.h): two-space indentation, RFC 8259 strings. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
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

/* The length of the well-formed UTF-8 sequence at p (no overlong forms, no
 * surrogates, nothing above U+10FFFF: docs/design.md, "hdal-ls"), or 0 when
 * there is none; then *bad is the length of its maximal subpart (at least 1),
 * the bytes that one U+FFFD replaces, as Python's decoder does. */
size_t json_utf8_sequence(const unsigned char *p, size_t *bad) {
  unsigned char c = p[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else {
    *bad = 1;
    return 0;
  }
  size_t k = 1;
  if (p[1] >= lo && p[1] <= hi)
    for (k = 2; k < n && (p[k] & 0xc0) == 0x80; k++) {
    }
  if (k == n) return n;
  *bad = k;
  return 0;
}

/* A quoted string: control characters escaped; bytes that are not UTF-8 (a
 * driver's name can hold anything) become U+FFFD, so the output stays JSON. */
static void json_string_value(json_writer *w, const char *s) {
  fputc('"', w->out);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    unsigned char c = *p;
    size_t bad, n = json_utf8_sequence(p, &bad);
    if (n == 0) { /* one replacement per maximal subpart */
      fputs("\\ufffd", w->out);
      p += bad;
      continue;
    }
    if (c == '"' || c == '\\') fprintf(w->out, "\\%c", c);
    else if (c == '\n') fputs("\\n", w->out);
    else if (c == '\t') fputs("\\t", w->out);
    else if (c < 0x20 || c == 0x7f) fprintf(w->out, "\\u%04x", c);
    else fwrite(p, 1, n, w->out);
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

void json_string_n(json_writer *w, const char *key, const char *value, size_t len) {
  char *copy = value ? strndup(value, len) : NULL;
  json_string(w, key, copy); /* out of memory: null */
  free(copy);
}

void json_uint(json_writer *w, const char *key, unsigned long long value) {
  member(w, key);
  fprintf(w->out, "%llu", value);
}

void json_bool(json_writer *w, const char *key, bool value) {
  member(w, key);
  fputs(value ? "true" : "false", w->out);
}
