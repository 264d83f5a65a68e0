/* SPDX-License-Identifier: BSD-3-Clause */
/* What the fake GPU runtimes (tests/fakecuda, tests/fakehip) share: their
 * call counters, their comma-separated configuration lists, and the fault
 * injection interposer's hooks. */
#ifndef HDAL_FAKEGPU_H
#define HDAL_FAKEGPU_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "faultinject/fi.h"

/* Calls counted by name: `names` lists what is counted, `counts` (as long as `names`)
 * holds the counts; a name not listed is not counted and reads 0. */
static inline void fakegpu_count(const char *const *names, unsigned *counts, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], name)) __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED);
}

static inline unsigned fakegpu_calls(const char *const *names, const unsigned *counts, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
  return 0;
}

/* Item i of a comma-separated list into buf; NULL when the list is NULL or shorter. */
static inline const char *fakegpu_list_item(const char *list, int i, char *buf, size_t len) {
  if (!list) return NULL;
  for (const char *p = list;; p++) {
    size_t n = strcspn(p, ",");
    if (i-- == 0) {
      snprintf(buf, len, "%.*s", (int)n, p);
      return buf;
    }
    p += n;
    if (!*p) return NULL;
  }
}

/* The fault-injection interposer's hooks, NULL when it is not preloaded. */
static inline void fakegpu_fi_hooks(hdalfi_driver_call_fn **call, hdalfi_driver_object_fn **object) {
  *call = (hdalfi_driver_call_fn *)dlsym(RTLD_DEFAULT, "hdalfi_driver_call");
  *object = (hdalfi_driver_object_fn *)dlsym(RTLD_DEFAULT, "hdalfi_driver_object");
}

#endif
