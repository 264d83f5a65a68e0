/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal's one hwloc policy (docs/hwloc.md): which hwloc plugins are never
 * loaded, which components never run, and what each use of a topology keeps.
 * The library uses it, and so does hdal-ls, through libhdal's private API:
 * the calls marked HDAL__PRIVATE_API, exported at the ELF version node
 * HDAL_PRIVATE (libhdal.map) for hdal's own tools only, never for users
 * (docs/design.md, "libhdal's private API"). */
#ifndef HDAL_HWLOC_POLICY_H
#define HDAL_HWLOC_POLICY_H
#include <hwloc.h> /* after config.h, which defines HDAL__HIDDEN */

/* Leaves libhdal for hdal's tools (libhdal.map puts it at HDAL_PRIVATE); in
 * the library itself, an ordinary call. */
#define HDAL__PRIVATE_API __attribute__((visibility("default")))

typedef enum {
  HDAL__TOPOLOGY_DEVICES, /* NUMA nodes, cores, PUs, CPU model: no caches, no I/O, no CPUID pass */
  HDAL__TOPOLOGY_PCI,     /* the same with the important I/O objects (PCI locality) */
  HDAL__TOPOLOGY_LSTOPO,  /* the objects lstopo's --of xml holds: every cache (CPUID's too), Misc */
} hdal__topology_use;

enum {
  HDAL__HWLOC_NO_LIBXML = 1, /* hdal-ls: hwloc_xml_libxml is not loaded either (hwloc reads its XML itself) */
};

/* Keeps hwloc's plugins loaded, as the policy wants them, while any hold
 * lasts; the first hold loads them.  Call it before threads that use hwloc
 * start; for a stretch of time after it, until hdal__hwloc_settled, environ
 * is an identical copy of itself (docs/hwloc.md, "Threads"). */
HDAL__PRIVATE_API void hdal__hwloc_hold(unsigned flags);
/* Ends the stretch of hdal__hwloc_hold: environ is the array it was, unless
 * something else changed the environment meanwhile. */
HDAL__PRIVATE_API void hdal__hwloc_settled(void);
/* Gives a hold back: the last one lets hwloc unload its plugins. */
HDAL__HIDDEN void hdal__hwloc_release(void);

/* What a topology between hwloc_topology_init and hwloc_topology_load loads, for `use`. */
HDAL__PRIVATE_API void hdal__topology_apply(hwloc_topology_t topology, hdal__topology_use use);

#endif
