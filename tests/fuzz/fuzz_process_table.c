/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness: the process-table parser (hdal_context_add_process) with
 * any bytes and any process index.  A refusal must leave the context
 * unchanged; an acceptance must keep the table dense and ordered and the
 * process count above every index.  An input that starts with 'I' gives the
 * index itself (4 bytes, little-endian: the whole int range, INT_MAX and the
 * negatives included) before the table.  Accepted tables, while the context
 * is small, go through hdal-ls's writers: the JSON must be strict UTF-8
 * (RFC 3629) and parse, the table must hold no control character but its
 * newlines (hostile names are escaped).  HDAL_FUZZ_WRITE_SEED=FILE writes this
 * machine's own table to FILE (the seed corpus) and exits. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdal.h>
#include "ls.h"

static hdal_context *ctx;
static int next_index = 1;

static void fresh_context(void) {
  if (ctx) hdal_context_destroy(ctx);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) {
    fprintf(stderr, "fuzz_process_table: %s\n", hdal_error_message(e));
    abort();
  }
  next_index = 1;
}

/* ---- hdal-ls's writers over what was accepted ---- */

/* What `print` writes to stdout, in memory (glibc lets stdout be assigned). */
static char *render(int (*print)(const ls_view *), bool topology, size_t *len) {
  char *buf = NULL;
  FILE *mem = open_memstream(&buf, len);
  if (!mem) return NULL;
  fflush(stdout);
  FILE *saved = stdout;
  stdout = mem;
  ls_view v = {.program = "fuzz", .ctx = ctx, .topology = topology};
  (void)print(&v);
  stdout = saved;
  fclose(mem);
  return buf;
}

/* The table's writer takes its stream (python/table.c prints it into memory). */
static int print_table(const ls_view *v) { return ls_print_table(v, stdout); }

/* Strict UTF-8 (docs/design.md, "hdal-ls"): no overlong form, no surrogate, nothing above U+10FFFF. */
static bool strict_utf8(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = p[i], len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || i + len > n) return false;
    unsigned cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (unsigned k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

/* A JSON value (RFC 8259) at *p; false on any syntax error. */
static bool json_value(const char **p, int depth);
static void json_ws(const char **p) {
  while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r') (*p)++;
}
static bool json_string_at(const char **p) {
  if (*(*p)++ != '"') return false;
  for (;;) {
    unsigned char c = (unsigned char)*(*p)++;
    if (c == '"') return true;
    if (c < 0x20) return false;
    if (c == '\\') {
      c = (unsigned char)*(*p)++;
      if (c == 'u') {
        for (int k = 0; k < 4; k++, (*p)++)
          if (!strchr("0123456789abcdefABCDEF", **p) || !**p) return false;
      } else if (!strchr("\"\\/bfnrt", c) || !c) {
        return false;
      }
    }
  }
}
static bool json_value(const char **p, int depth) {
  if (depth > 64) return false;
  json_ws(p);
  char c = **p;
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    (*p)++, json_ws(p);
    if (**p == close) return (*p)++, true;
    for (;;) {
      if (c == '{') {
        if (!json_string_at(p)) return false;
        json_ws(p);
        if (*(*p)++ != ':') return false;
      }
      if (!json_value(p, depth + 1)) return false;
      json_ws(p);
      if (**p == ',') {
        (*p)++, json_ws(p);
        continue;
      }
      return *(*p)++ == close;
    }
  }
  if (c == '"') return json_string_at(p);
  if (!strncmp(*p, "true", 4) || !strncmp(*p, "null", 4)) return *p += 4, true;
  if (!strncmp(*p, "false", 5)) return *p += 5, true;
  const char *start = *p;
  if (**p == '-') (*p)++;
  if (**p < '0' || **p > '9') return false;
  if (**p == '0' && (*p)[1] >= '0' && (*p)[1] <= '9') return false;
  while (**p >= '0' && **p <= '9') (*p)++;
  return *p > start;
}

static void check_writers(void) {
  size_t len;
  for (int topology = 0; topology < 2; topology++) {
    char *json = render(ls_print_json, topology, &len);
    if (json) {
      const char *p = json;
      if (!strict_utf8((const unsigned char *)json, len) || !json_value(&p, 0)) __builtin_trap();
      json_ws(&p);
      if (*p) __builtin_trap();
      free(json);
    }
    char *table = render(topology ? ls_print_topology : print_table, false, &len);
    for (size_t i = 0; table && i < len; i++)
      if (((unsigned char)table[i] < 0x20 && table[i] != '\n') || table[i] == 0x7f) __builtin_trap();
    free(table);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fresh_context();
  const char *seed = getenv("HDAL_FUZZ_WRITE_SEED");
  if (seed) {
    void *blob;
    size_t len;
    hdal_error *e = hdal_context_export_devices(ctx, &blob, &len);
    FILE *f = e ? NULL : fopen(seed, "wb");
    if (!f || fwrite(blob, 1, len, f) != len) abort();
    fclose(f);
    free(blob);
    exit(0);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t before = hdal_context_device_count(ctx);
  int count = hdal_context_process_count(ctx);
  /* Mostly appended in order; sometimes inserted below the last (renumbering);
   * or any index the input names. */
  int index;
  if (size >= 5 && data[0] == 'I') {
    index = (int)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24);
    data += 5, size -= 5;
  } else {
    index = size && data[0] == 0x55 ? next_index / 2 + 1 : next_index++;
  }
  hdal_error *e = hdal_context_add_process(ctx, index, data, size);
  size_t after = hdal_context_device_count(ctx);
  if (e) {
    if (after != before || hdal_context_process_count(ctx) != count) __builtin_trap();
    hdal_error_destroy(e);
  } else {
    /* The count is an int above every index: INT_MAX itself cannot be counted. */
    if (index < 0 || index == INT_MAX || hdal_context_process_count(ctx) <= index ||
        hdal_context_process_count(ctx) < count)
      __builtin_trap();
    if (index >= next_index) next_index = index < INT_MAX - 1 ? index + 1 : 1;
    int prev = -1;
    for (size_t i = 0; i < after; i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_id(d) != (int)i || hdal_device_process_index(d) < prev) __builtin_trap();
      prev = hdal_device_process_index(d);
      (void)hdal_device_kind(d), (void)hdal_device_attribute_count(d);
    }
    if (after <= 256) check_writers(); /* the writers are linear: small contexts keep the fuzzer fast */
  }
  if (after > 20000) fresh_context(); /* keep memory bounded over long runs */
  return 0;
}
