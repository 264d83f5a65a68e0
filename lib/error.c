/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — error objects (docs/reference.md, "Errors"). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

/* Out of memory must never need memory: one static error, never freed. */
static hdal_error oom_error = {HDAL_RESOURCE_EXHAUSTED, true, (char *)"out of memory", HDAL_CAUSE_NONE};

hdal_error *hdal__error_oom(void) { return &oom_error; }

hdal_error *hdal__error_vnew(hdal_code code, const char *fmt, va_list ap) {
  hdal_error *e = malloc(sizeof *e);
  if (!e) return &oom_error;
  if (vasprintf(&e->message, fmt, ap) < 0) {
    free(e);
    return &oom_error;
  }
  e->code = code;
  e->is_static = false;
  e->cause = HDAL_CAUSE_NONE;
  return e;
}

hdal_error *hdal__error_with_cause(hdal_error *e, hdal_cause cause) {
  if (!e->is_static) e->cause = cause;
  return e;
}

hdal_error *hdal__error_new(hdal_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hdal_error *e = hdal__error_vnew(code, fmt, ap);
  va_end(ap);
  return e;
}

hdal_error *hdal__struct_size_error(const char *type, size_t struct_size) {
  return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: struct_size %zu is too small", type, struct_size);
}

/* Diagnostics under HDAL_DEBUG: one line each, never interleaved. */
void hdal__debug(const hdal_context *ctx, const char *who, const char *fmt, ...) {
  if (!ctx->debug) return;
  va_list ap;
  va_start(ap, fmt);
  flockfile(stderr);
  fprintf(stderr, "hdal: %s: ", who);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  funlockfile(stderr);
  va_end(ap);
}

char *hdal__strdup_printf(const char *fmt, ...) {
  va_list ap;
  char *s;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  return n < 0 ? NULL : s;
}

HDAL_API hdal_code hdal_error_code(const hdal_error *err) { return err ? err->code : HDAL_OK; }

HDAL_API const char *hdal_error_message(const hdal_error *err) { return err ? err->message : ""; }

HDAL_API hdal_cause hdal_error_cause(const hdal_error *err) { return err ? err->cause : HDAL_CAUSE_NONE; }

HDAL_API void hdal_error_destroy(hdal_error *err) {
  if (!err || err->is_static) return;
  free(err->message);
  free(err);
}

HDAL_API hdal_error *hdal_error_create(hdal_code code, const char *message) {
  return hdal__error_new(code == HDAL_OK ? HDAL_UNKNOWN : code, "%s", message ? message : "");
}

HDAL_API const char *hdal_code_name(hdal_code code) {
  static const char *const names[] = {
      "OK",        "CANCELLED",         "UNKNOWN",           "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED",   "INTERNAL",          "UNAVAILABLE",       "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  if ((unsigned)code < sizeof names / sizeof names[0]) return names[code];
  return "UNKNOWN";
}

HDAL_API const char *hdal_version_string(void) { return PACKAGE_VERSION; }
