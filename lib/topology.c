/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — hwloc services shared by the backends: NUMA locality of PCI devices.
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
  return t;
}

void *hdal__pci_topology_locked(hdal_context *ctx) { return pci_topology(ctx); }

int hdal__numa_node_of_pci(hdal_context *ctx, const char *bus_id) {
  if (!bus_id) return -1;
  int node = -1;
  pthread_mutex_lock(&ctx->lock);
  hwloc_topology_t t = pci_topology(ctx);
  hwloc_obj_t pci = t ? hwloc_get_pcidev_by_busidstring(t, bus_id) : NULL;
  hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(t, pci) : NULL;
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
