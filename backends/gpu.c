/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal GPU backends — errors named by the driver (gpu.h). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include "gpu.h"

hdal_error *hdal__gpu_error(const hdal__gpu *g, int r, const char *fmt, ...) {
  char what[256], desc[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  g->drv->describe(g, r, desc, sizeof desc);
  return g->host->error_new(g->drv->code_of(r), "%s: %s", what, desc);
}
