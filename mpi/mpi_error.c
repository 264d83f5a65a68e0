/* SPDX-License-Identifier: BSD-3-Clause */
/* libhdal-mpi — error objects.  The core has no public constructor, and its
 * hidden one does not leave libhdal; this library belongs to the same release
 * and builds the same structure (lib/internal.h), so hdal_error_destroy() and
 * the accessors of libhdal serve its errors too. */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"
#include "mpi_internal.h"

/* Out of memory must never need memory. */
static hdal_error oom_error = {HDAL_RESOURCE_EXHAUSTED, true, (char *)"out of memory"};

hdal_error *hdal__mpi_error_oom(void) { return &oom_error; }

hdal_error *hdal__mpi_error(hdal_code code, const char *fmt, ...) {
  hdal_error *e = malloc(sizeof *e);
  if (!e) return &oom_error;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&e->message, fmt, ap);
  va_end(ap);
  if (n < 0) {
    free(e);
    return &oom_error;
  }
  e->code = code;
  e->is_static = false;
  return e;
}
