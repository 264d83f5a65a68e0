/* SPDX-License-Identifier: BSD-3-Clause */
/* libhdal-mpi — error objects, made through libhdal's public
 * hdal_error_create(): this layer uses nothing but libhdal's public API, so
 * hdal_error_destroy() and the accessors serve its errors like any other. */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "mpi_internal.h"

hdal_error *hdal__mpi_error_oom(void) { return hdal_error_create(HDAL_RESOURCE_EXHAUSTED, "out of memory"); }

hdal_error *hdal__mpi_error(hdal_code code, const char *fmt, ...) {
  char *message;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&message, fmt, ap);
  va_end(ap);
  if (n < 0) return hdal__mpi_error_oom();
  hdal_error *e = hdal_error_create(code, message);
  free(message);
  return e;
}
