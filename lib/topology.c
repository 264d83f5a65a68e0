/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — hwloc services shared by the backends: NUMA locality of PCI devices.
 *
 * The topology with I/O objects is loaded once per context, on the first
 * request, so a context whose backends ask nothing of PCI never pays for it.
 * hwloc's inputs (HWLOC_XMLFILE, HWLOC_SYNTHETIC) keep their meaning.
 */
#include "config.h"
#include <stdlib.h>
#include <hwloc.h>
#include "internal.h"

/* hwloc components hdal keeps from running: those that would initialise GPU or
 * OpenCL runtimes inside hdal; libpciaccess ("pci"), which leaks and is slower
 * than hwloc's own linux component reading the same PCI devices from sysfs;
 * and "x86", which moves the calling thread onto every PU in turn to run
 * cpuid there, beside the other backends' discovery, for nothing hdal reports
 * (the linux component reads the CPU model from /proc/cpuinfo). */
static const char *const unused_components[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl", "pci", "x86"};

/* What every topology of hdal's loads: the components above kept from
 * running, and no cache objects, distances, memory attributes or CPU kinds,
 * which nothing hdal reports needs.  The flags spare hwloc those sysfs reads;
 * the cache filters only drop the objects (hwloc 2.9 reads the cache files
 * before it looks at the filter). */
void hdal__topology_restrict(void *topology) {
  for (size_t i = 0; i < sizeof unused_components / sizeof unused_components[0]; i++)
    hwloc_topology_set_components(topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, unused_components[i]);
  hwloc_topology_set_cache_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
#if HWLOC_API_VERSION >= 0x00020800
  hwloc_topology_set_flags(topology,
                           HWLOC_TOPOLOGY_FLAG_NO_DISTANCES | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS | HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
#endif
}

/* Vendor libraries may add environment variables while they initialise: PoCL
 * 3.1 sets HWLOC_PLUGINS_PATH=/dev/null in clGetDeviceIDs (so that its own
 * hwloc does not load the OpenCL plugin).  glibc's setenv, adding a variable,
 * may free the array that getenv is walking in another discovery thread
 * (hwloc reads a dozen HWLOC_* variables): SIGSEGV.  Defined before any such
 * thread starts, to hwloc's own default so that nothing changes, the variable
 * is then replaced in place, which readers survive (glibc never frees the
 * strings).  A variable the user set is left alone. */
void hdal__topology_settle_environment(void) {
  setenv("HWLOC_PLUGINS_PATH", HDAL_HWLOC_PLUGINS_DIR, 0); /* 0: a value already there stays */
}

void hdal__topology_free(void *topology) {
  if (topology) hwloc_topology_destroy(topology);
}

static hwloc_topology_t pci_topology(hdal_context *ctx) {
  /* Called with ctx->lock held. */
  if (ctx->pci_topology_tried) return ctx->pci_topology;
  ctx->pci_topology_tried = true;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return NULL;
  hdal__topology_restrict(t);
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t) < 0) {
    hdal__debug(ctx, "topology", "hwloc could not load the topology with I/O devices");
    hwloc_topology_destroy(t);
    return NULL;
  }
  ctx->pci_topology = t;
  return t;
}

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
