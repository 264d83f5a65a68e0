/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — hwloc services shared by the backends: NUMA locality of PCI devices.
 *
 * One lookup of a bus id (hdal__pci_object_locked) serves them and the
 * locality of a device (locality.c, docs/reference.md "Locality").
 *
 * The topology with I/O objects is loaded once per context, on the first
 * request, so a context whose backends ask nothing of PCI never pays for it.
 * hwloc's inputs (HWLOC_XMLFILE, HWLOC_SYNTHETIC) keep their meaning; what
 * every topology loads is hdal's one policy (hwloc_policy.h, docs/hwloc.md).
 */
#include "config.h"
#include <stdlib.h>
#include <hwloc.h>
#include "internal.h"
#include "hwloc_policy.h"

/* For a backend's own topology (hdal_backend_host::topology_restrict): the CPU
 * backend's, the OpenCL backend's preflight. */
void hdal__topology_restrict(void *topology) { hdal__topology_apply(topology, HDAL__TOPOLOGY_DEVICES); }

void hdal__topology_free(void *topology) {
  if (topology) hwloc_topology_destroy(topology);
}

/* Where the topology came from, for hdal_context_topology_source(): hwloc reads HWLOC_XMLFILE and
 * HWLOC_SYNTHETIC itself, and says only whether the result is this system. */
static void note_source(hdal_context *ctx, hwloc_topology_t t) {
  const char *xml = getenv("HWLOC_XMLFILE"), *synthetic = getenv("HWLOC_SYNTHETIC");
  hwloc_obj_t root = hwloc_get_root_obj(t);
  if (hwloc_topology_is_thissystem(t) && !(xml && *xml)) ctx->topology_source = HDAL_TOPOLOGY_THIS_SYSTEM;
  else if (root && hwloc_obj_get_info_by_name(root, "SyntheticDescription")) {
    ctx->topology_source = HDAL_TOPOLOGY_SYNTHETIC;
    ctx->topology_detail = hdal__strdup_printf("%s", hwloc_obj_get_info_by_name(root, "SyntheticDescription"));
  } else if (xml && *xml) {
    ctx->topology_source = HDAL_TOPOLOGY_XML_FILE;
    ctx->topology_detail = hdal__strdup_printf("%s", xml);
  } else ctx->topology_source = synthetic ? HDAL_TOPOLOGY_SYNTHETIC : HDAL_TOPOLOGY_OTHER;
}

static hwloc_topology_t pci_topology(hdal_context *ctx) {
  /* Called with ctx->lock held. */
  if (ctx->pci_topology_tried) return ctx->pci_topology;
  ctx->pci_topology_tried = true;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return NULL;
  hdal__topology_apply(t, HDAL__TOPOLOGY_PCI);
  if (hwloc_topology_load(t) < 0) {
    hdal__debug(ctx, "topology", "hwloc could not load the topology with I/O devices");
    hwloc_topology_destroy(t);
    return NULL;
  }
  ctx->pci_topology = t;
  note_source(ctx, t);
  return t;
}

void *hdal__pci_topology_locked(hdal_context *ctx) { return pci_topology(ctx); }

hdal__pci_lookup hdal__pci_object_locked(hdal_context *ctx, const char *bus_id, struct hwloc_obj **pci_out,
                                         struct hwloc_obj **ancestor_out) {
  *pci_out = *ancestor_out = NULL;
  hwloc_topology_t t = pci_topology(ctx);
  if (!t) return HDAL__PCI_NO_TOPOLOGY;
  hwloc_obj_t pci = bus_id ? hwloc_get_pcidev_by_busidstring(t, bus_id) : NULL;
  if (!pci) return hwloc_get_next_pcidev(t, NULL) ? HDAL__PCI_NO_OBJECT : HDAL__PCI_NO_PCI_OBJECTS;
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, pci);
  *pci_out = pci;
  *ancestor_out = anc;
  return anc && anc->cpuset ? HDAL__PCI_FOUND : HDAL__PCI_NO_ANCESTOR;
}

int hdal__numa_node_of_pci(hdal_context *ctx, const char *bus_id) {
  if (!bus_id) return -1;
  int node = -1;
  pthread_mutex_lock(&ctx->lock);
  hwloc_topology_t t = pci_topology(ctx);
  hwloc_obj_t pci, anc;
  hdal__pci_object_locked(ctx, bus_id, &pci, &anc);
  /* The device is local to a NUMA node when its CPU-side ancestor spans exactly one. */
  if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1) {
    hwloc_obj_t numa = NULL;
    while ((numa = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, numa)))
      if (hwloc_bitmap_isincluded(numa->nodeset, anc->nodeset)) {
        node = (int)numa->logical_index;
        break;
      }
  }
  pthread_mutex_unlock(&ctx->lock);
  hdal__debug(ctx, "topology", "PCI %s: NUMA node %d", bus_id, node);
  return node;
}

HDAL_API hdal_topology_source hdal_context_topology_source(const hdal_context *cctx, const char **detail) {
  if (detail) *detail = NULL;
  if (!cctx) return HDAL_TOPOLOGY_UNAVAILABLE;
  hdal_context *ctx = (hdal_context *)cctx; /* the topology is loaded once, under the lock */
  pthread_mutex_lock(&ctx->lock);
  hdal_topology_source source = pci_topology(ctx) ? (hdal_topology_source)ctx->topology_source : HDAL_TOPOLOGY_UNAVAILABLE;
  if (detail && source != HDAL_TOPOLOGY_UNAVAILABLE) *detail = ctx->topology_detail;
  pthread_mutex_unlock(&ctx->lock);
  return source;
}
