/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal GPU backends — errors named by the driver, and the fork() guard of
 * discovery (gpu.h). */
#include "config.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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

/* Neither the CUDA driver nor the HIP runtime survives fork(): in a child of
 * a process that initialised it, initialisation fails or later calls
 * misbehave.  Such a child's contexts list the backend as unavailable
 * (docs/design.md).  One watch per module: each compiles this file in. */
static atomic_bool driver_started, driver_left_behind;
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;
static void forked_child(void) { atomic_store(&driver_left_behind, atomic_load(&driver_started)); }
static void watch_forks(void) { pthread_atfork(NULL, NULL, forked_child); }

hdal_error *hdal__gpu_fork_check(const hdal_backend_host *host, const hdal__gpu_driver *drv) {
  pthread_once(&fork_watch, watch_forks);
  if (!atomic_load(&driver_left_behind)) return NULL;
  return host->error_new(HDAL_FAILED_PRECONDITION,
                         "this process is a fork() child of one that initialised the %s, which does not survive "
                         "fork()",
                         drv->runtime);
}

void hdal__gpu_started(void) { atomic_store(&driver_started, true); }
