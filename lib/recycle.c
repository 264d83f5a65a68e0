/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — HDAL_NO_RECYCLE, the switch for memory checkers
 * (docs/hardening.md): nothing kept for reuse, neither buffer objects
 * (lifetime.c) nor device memory (the context's pools).  Beneath both the
 * context, which reads it when it is made, and the buffers' lifetimes, which
 * obey it: neither calls the other for it. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int hdal__cached_objects = HDAL__CACHED_OBJECTS;
bool hdal__no_recycle;
static pthread_once_t recycle_once = PTHREAD_ONCE_INIT;

/* HDAL_NO_RECYCLE, read once per process (secure_getenv, as every HDAL_
 * variable): set and not "0", released buffer objects are freed, never kept.
 * Read before the first context exists, so before any object is taken. */
static void recycle_read(void) {
  const char *v = secure_getenv("HDAL_NO_RECYCLE");
  if (v && *v && strcmp(v, "0") != 0) {
    hdal__cached_objects = 0;
    hdal__no_recycle = true;
  }
}

void hdal__recycle_init(void) { pthread_once(&recycle_once, recycle_read); }
