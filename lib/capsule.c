/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — capsules: PyCapsule-like holders of DLPack tensors (docs/dlpack.md, "Capsules").
 *
 * The name is an atomic pointer so that "consumed at most once" holds even when
 * two threads race to import one capsule: consumption is one compare-and-swap
 * from a standard name to its "used_" twin.  Standard names are static strings;
 * any other name is copied inline after the struct. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "capsule.h"

const char hdal__name_legacy[] = HDAL_DLPACK_CAPSULE;
const char hdal__name_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED;
const char hdal__name_used_legacy[] = HDAL_DLPACK_CAPSULE_USED;
const char hdal__name_used_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED_USED;

static const char *standard(const char *name) {
  if (!name) return NULL;
  const char *const all[] = {hdal__name_legacy, hdal__name_versioned, hdal__name_used_legacy,
                             hdal__name_used_versioned};
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(name, all[i])) return all[i];
  return NULL;
}

static hdal_capsule *capsule_make(const char *name, void *pointer) {
  const char *std = standard(name);
  size_t extra = name && !std ? strlen(name) + 1 : 0;
  hdal_capsule *c = malloc(sizeof *c + extra);
  if (!c) return NULL;
  c->pointer = pointer;
  if (extra) {
    memcpy(c->own, name, extra);
    std = c->own;
  }
  atomic_init(&c->name, std);
  return c;
}

/* The wrappers' names are known: no lookup. */
static hdal_capsule *capsule_static(const char *name, void *pointer) {
  hdal_capsule *c = malloc(sizeof *c);
  if (!c) return NULL;
  c->pointer = pointer;
  atomic_init(&c->name, name);
  return c;
}

HDAL_API hdal_capsule *hdal_capsule_wrap(DLManagedTensor *t) { return capsule_static(hdal__name_legacy, t); }

HDAL_API hdal_capsule *hdal_capsule_wrap_versioned(DLManagedTensorVersioned *t) {
  return capsule_static(hdal__name_versioned, t);
}

HDAL_API hdal_capsule *hdal_capsule_new(const char *name, void *pointer) { return capsule_make(name, pointer); }

HDAL_API const char *hdal_capsule_name(const hdal_capsule *c) {
  return c ? atomic_load_explicit(&((hdal_capsule *)c)->name, memory_order_acquire) : NULL;
}

HDAL_API void *hdal_capsule_pointer(const hdal_capsule *c) { return c ? c->pointer : NULL; }

HDAL_API void *hdal_capsule_take(hdal_capsule *c) {
  if (!c) return NULL;
  const char *name = hdal_capsule_name(c);
  if (name != hdal__name_legacy && name != hdal__name_versioned) return NULL;
  return hdal__capsule_consume(c, name) ? c->pointer : NULL;
}

HDAL_API void hdal_capsule_destroy(hdal_capsule *c) {
  if (!c) return;
  const char *name = hdal_capsule_name(c);
  if (c->pointer && name == hdal__name_legacy) {
    DLManagedTensor *t = c->pointer;
    if (t->deleter) t->deleter(t);
  } else if (c->pointer && name == hdal__name_versioned) {
    DLManagedTensorVersioned *t = c->pointer;
    if (t->deleter) t->deleter(t);
  }
  free(c);
}
