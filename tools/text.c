/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — text that is safe to show on a terminal (text.h). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "text.h"

/* The code point of a well-formed sequence of n bytes. */
static unsigned decode(const unsigned char *p, size_t n) {
  if (n == 1) return p[0];
  unsigned cp = p[0] & (0x7f >> n);
  for (size_t i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3f);
  return cp;
}

/* Code points a terminal acts on, or draws as nothing, rather than shows:
 * C1 controls (CSI is U+009B), the line and paragraph separators, the
 * bidirectional marks, embeddings, overrides and isolates that reorder what
 * follows them, and the invisible format characters (Unicode's Cf: soft
 * hyphen, zero-width space and joiners, word joiner and invisible operators,
 * byte order mark, interlinear annotation, tags) that make two names that
 * read alike differ, as ls -b shows them (docs/design.md). */
static bool invisible(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || cp == 0x61c || cp == 0x180e ||
         (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
         cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

/* Writes s escaped into out (NULL: only counts); its length.  Two passes over a string rather than a
 * memory stream: a table of thousands of devices escapes hundreds of thousands of short strings. */
static size_t escape(const unsigned char *p, char *out) {
  size_t len = 0;
  char tmp[16];
  while (*p) {
    size_t bad, n = json_utf8_sequence(p, &bad), k;
    const char *piece = tmp;
    if (n == 0) { /* not UTF-8: each byte as \xNN */
      for (size_t i = 0; i < bad; i++, len += 4)
        if (out) snprintf(out + len, 5, "\\x%02x", p[i]);
      p += bad;
      continue;
    }
    unsigned cp = decode(p, n);
    if (cp == '\\') piece = "\\\\", k = 2;
    else if (cp == '\n') piece = "\\n", k = 2;
    else if (cp == '\r') piece = "\\r", k = 2;
    else if (cp == '\t') piece = "\\t", k = 2;
    else if (cp < 0x20 || cp == 0x7f) k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", cp);
    else if (invisible(cp)) k = (size_t)snprintf(tmp, sizeof tmp, cp > 0xffff ? "\\U%08x" : "\\u%04x", cp);
    else piece = (const char *)p, k = n;
    if (out) memcpy(out + len, piece, k);
    len += k;
    p += n;
  }
  if (out) out[len] = '\0';
  return len;
}

char *text_escape(const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  char *buf = malloc(escape(p, NULL) + 1);
  if (buf) escape(p, buf);
  return buf;
}

size_t text_width(const char *s) {
  size_t w = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) w += (*p & 0xc0) != 0x80;
  return w;
}

void text_print(FILE *out, const char *s) {
  char *e = text_escape(s);
  fputs(e ? e : "?", out);
  free(e);
}
