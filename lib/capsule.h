/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — capsules (capsule.c): a name swapped once, as a PyCapsule is renamed. */
#ifndef HDAL_CAPSULE_H
#define HDAL_CAPSULE_H

#include "internal.h"

HDAL__HIDDEN extern const char hdal__name_legacy[], hdal__name_versioned[], hdal__name_used_legacy[],
    hdal__name_used_versioned[];
struct hdal_capsule {
  _Atomic(const char *) name; /* a static standard name, or `own` */
  void *pointer;
  char own[]; /* the copy of a non-standard name */
};
static inline const char *hdal__capsule_name(hdal_capsule *c) {
  return atomic_load_explicit(&c->name, memory_order_acquire);
}
/* Marks a capsule consumed if it still holds `name`; false when someone else won the race. */
static inline bool hdal__capsule_consume(hdal_capsule *c, const char *name) {
  const char *used = name == hdal__name_legacy ? hdal__name_used_legacy : hdal__name_used_versioned;
  return atomic_compare_exchange_strong_explicit(&c->name, &name, used, memory_order_acq_rel, memory_order_acquire);
}

/* Gives a claimed capsule its name back (an import that failed after claiming it). */
static inline void hdal__capsule_restore(hdal_capsule *c, const char *name) {
  atomic_store_explicit(&c->name, name, memory_order_release);
}

#endif
