/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — one GPU, told by its identity (identity.c): the rule that
 * hardware.c (the same hardware, for hdal-ls and hdal_device_same_hardware)
 * and faces.c (hiding faces, binding GPUs to local ranks) both apply.  Two
 * devices are faces of one GPU when they share a UUID or a PCI bus id,
 * compared without case, or are joined by a chain of such
 * (docs/reference.md, "Device attributes"); the chains are sets of a
 * union-find whose root is the smallest index. */
#ifndef HDAL_IDENTITY_H
#define HDAL_IDENTITY_H

#include <stddef.h>
#include "internal.h"

/* d's attribute `key` when it says something, else NULL (unset or empty). */
HDAL__HIDDEN const char *hdal__device_identity(const hdal_device *d, const char *key);
/* Whether d has a UUID or a PCI bus id. */
HDAL__HIDDEN bool hdal__device_has_identity(const hdal_device *d);
/* Whether two identities (NULL: none) are the same: both set, equal without
 * case (lspci prints hex in lower case, some runtimes in upper). */
HDAL__HIDDEN bool hdal__same_identity(const char *a, const char *b);
/* Whether a and b share a UUID or a PCI bus id. */
HDAL__HIDDEN bool hdal__same_gpu(const hdal_device *a, const hdal_device *b);

/* ---- union-find over indices 0 .. n-1, parent[i] = i to start ---- */

/* The root of i's set, halving the path on the way. */
static inline size_t hdal__uf_find(size_t *parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

/* Joins the sets of a and b; the root of a set is its smallest index. */
static inline void hdal__uf_unite(size_t *parent, size_t a, size_t b) {
  a = hdal__uf_find(parent, a), b = hdal__uf_find(parent, b);
  if (a != b) parent[a > b ? a : b] = a < b ? a : b;
}

#endif
