/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — a JSON writer that prints as it goes: no document in memory, so
 * nothing to run out of, and no library to load for one output format.
 * Objects and arrays nest; members are written in call order. */
#ifndef HDAL_LS_JSON_H
#define HDAL_LS_JSON_H

#include <stdbool.h>
#include <stdio.h>

enum { JSON_MAX_DEPTH = 16 };

typedef struct {
  FILE *out;
  int depth;
  bool has_members[JSON_MAX_DEPTH]; /* a comma before the next member */
} json_writer;

void json_begin(json_writer *w, FILE *out);          /* opens the top-level object */
int json_end(json_writer *w);                        /* closes it; 0, or -1 on a write error */
/* `key` names the member inside an object; NULL inside an array. */
void json_open(json_writer *w, const char *key, char bracket); /* '{' or '[' */
void json_close(json_writer *w, char bracket);                 /* '}' or ']' */
void json_string(json_writer *w, const char *key, const char *value); /* NULL: null */
/* The first len bytes of value (NULL: null). */
void json_string_n(json_writer *w, const char *key, const char *value, size_t len);
void json_int(json_writer *w, const char *key, long long value);
void json_uint(json_writer *w, const char *key, unsigned long long value);
void json_bool(json_writer *w, const char *key, bool value);

/* The length of the well-formed UTF-8 sequence at p (docs/design.md, "hdal-ls"), or 0 and in
 * *bad the number of bytes that one U+FFFD stands for.  p is NUL-terminated. */
size_t json_utf8_sequence(const unsigned char *p, size_t *bad);

#endif
