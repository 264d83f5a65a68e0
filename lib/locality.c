/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the locality of a device (hdal_device_locality): the host CPUs and
 * NUMA nodes nearest it (docs/reference.md, "Locality").
 *
 *   - a CPU device (platform "cpu"): its own NUMA node, from its attributes
 *     cpuset and numa_os_index (the CPU backend's topology, read at start-up);
 *   - a device with a PCI bus id (a GPU): hwloc's PCI object of that bus id in
 *     the context's topology with I/O objects (topology.c, the one lookup the
 *     NUMA node of a PCI device comes from too), its first non-I/O ancestor's
 *     cpuset and nodeset, and its PCIe root: the host bridge above it, named
 *     as sysfs names the root bus (/sys/devices/pci0000:00), "pci<domain>:<bus>"
 *     of the bridge's downstream domain and secondary bus;
 *   - another device with a cpuset attribute (an OpenCL device on the host
 *     CPUs): that cpuset, and the NUMA nodes of its process's CPU devices
 *     that it meets.
 *
 * What attributes place (a CPU device, a device with a cpuset) is placed for
 * a device of any process: its process wrote them on its host.  A device with
 * a PCI bus id only on this process's host, whose topology this process reads
 * (another process's there too: the same machine); on another host,
 * FAILED_PRECONDITION.
 *
 * Worked out on the first call for a device, once, under the context's lock,
 * and kept with the device (the answer, or why there is none), so that plain
 * start-up pays nothing and a second call reads what the first wrote.
 */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include "internal.h"

/* One block: the struct, the node array, the cpuset text or the reason, then the PCIe root. */
struct hdal__locality {
  hdal_code code;  /* HDAL_OK: known; else why not, in `text` */
  char *text;      /* the cpuset (hwloc_bitmap_snprintf's form), or the reason there is none */
  unsigned *nodes;
  size_t nnodes;
  char *pcie_root; /* "pci0000:00"; NULL: not known */
};

static struct hdal__locality *locality_new(hdal_code code, const char *text, const unsigned *nodes, size_t n,
                                           const char *pcie_root) {
  size_t len = strlen(text) + 1, root_len = pcie_root ? strlen(pcie_root) + 1 : 0;
  struct hdal__locality *l = malloc(sizeof *l + n * sizeof *nodes + len + root_len);
  if (!l) return NULL;
  l->code = code;
  l->nodes = (unsigned *)(l + 1);
  l->nnodes = n;
  if (n) memcpy(l->nodes, nodes, n * sizeof *nodes);
  l->text = (char *)(l->nodes + n);
  memcpy(l->text, text, len);
  l->pcie_root = pcie_root ? l->text + len : NULL;
  if (pcie_root) memcpy(l->pcie_root, pcie_root, root_len);
  return l;
}

/* A device's locality as a cpuset and a nodeset, and its PCIe root (NULL: none); NULL when out of memory. */
static struct hdal__locality *from_sets(hwloc_const_bitmap_t cpuset, hwloc_const_bitmap_t nodeset,
                                        const char *pcie_root) {
  char *text = NULL;
  if (hwloc_bitmap_asprintf(&text, cpuset) < 0) return NULL;
  int w = nodeset ? hwloc_bitmap_weight(nodeset) : 0;
  unsigned *nodes = w > 0 ? malloc((size_t)w * sizeof *nodes) : NULL;
  size_t n = 0;
  if (w > 0 && !nodes) {
    free(text);
    return NULL;
  }
  if (w > 0) {
    int i;
    hwloc_bitmap_foreach_begin(i, nodeset) nodes[n++] = (unsigned)i;
    hwloc_bitmap_foreach_end();
  }
  struct hdal__locality *l = locality_new(HDAL_OK, text, nodes, n, pcie_root);
  free(nodes);
  free(text);
  return l;
}

static struct hdal__locality *unknown(hdal_code code, const hdal_device *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static struct hdal__locality *unknown(hdal_code code, const hdal_device *d, const char *fmt, ...) {
  char why[HDAL__MAX_STRING + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  char *text = hdal__strdup_printf("device %d (%s%s%s): %s", d->id, d->platform ? d->platform : "?",
                                   d->kind ? ", " : "", d->kind ? d->kind : "", why);
  if (!text) return NULL;
  struct hdal__locality *l = locality_new(code, text, NULL, 0, NULL);
  free(text);
  return l;
}

/* A number attribute read as unsigned; false when absent or not one. */
static bool uint_attribute(const hdal_device *d, const char *key, unsigned *out) {
  for (size_t i = 0; i < d->nattrs; i++)
    if (!strcmp(d->attrs[i].key, key)) {
      if ((d->attrs[i].type_flags & HDAL_ATTRIBUTE_TYPE_MASK) != HDAL_ATTRIBUTE_UINT || d->attrs[i].number > UINT32_MAX)
        return false;
      *out = (unsigned)d->attrs[i].number;
      return true;
    }
  return false;
}

/* A CPU device: its own node, as its attributes say. */
static struct hdal__locality *of_cpu(const hdal_device *d, const char *cpuset_text) {
  unsigned node;
  if (!cpuset_text) return unknown(HDAL_NOT_FOUND, d, "a CPU device without a %s attribute", HDAL_ATTRIBUTE_CPUSET);
  if (!uint_attribute(d, "numa_os_index", &node))
    return unknown(HDAL_NOT_FOUND, d, "a CPU device without a %s attribute", "numa_os_index");
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return NULL;
  struct hdal__locality *l;
  if (hwloc_bitmap_list_sscanf(set, cpuset_text) < 0)
    l = unknown(HDAL_NOT_FOUND, d, "its cpuset attribute \"%s\" is not an hwloc list", cpuset_text);
  else {
    char *text = NULL;
    l = hwloc_bitmap_asprintf(&text, set) < 0 ? NULL : locality_new(HDAL_OK, text, &node, 1, NULL);
    free(text);
  }
  hwloc_bitmap_free(set);
  return l;
}

/* The PCIe root of a PCI object (Kubernetes' resource.kubernetes.io/pcieRoot): the host
 * bridge above it, as sysfs names its root bus, /sys/devices/pci<domain>:<bus>: the bridge's
 * downstream domain (4 hex digits at least) and secondary bus (2).  False when no host bridge
 * is above it. */
static bool pcie_root_of(hwloc_obj_t pci, char *out, size_t size) {
  for (hwloc_obj_t o = pci->parent; o && hwloc_obj_type_is_io(o->type); o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST &&
        o->attr->bridge.downstream_type == HWLOC_OBJ_BRIDGE_PCI) {
      snprintf(out, size, "pci%04x:%02x", (unsigned)o->attr->bridge.downstream.pci.domain,
               (unsigned)o->attr->bridge.downstream.pci.secondary_bus);
      return true;
    }
  return false;
}

/* A device with a PCI bus id: hwloc's PCI object, its CPU-side ancestor and its host bridge. */
static struct hdal__locality *of_pci(hdal_context *ctx, const hdal_device *d, const char *bus_id) {
  hwloc_obj_t pci, anc;
  switch (hdal__pci_object_locked(ctx, bus_id, &pci, &anc)) {
  case HDAL__PCI_NO_TOPOLOGY:
    return unknown(HDAL_NOT_FOUND, d, "hwloc could not load the topology with I/O objects");
  case HDAL__PCI_NO_PCI_OBJECTS:
    return unknown(HDAL_NOT_FOUND, d,
                   "the topology has no PCI objects (a synthetic topology, or an XML file without I/O), so PCI %s "
                   "cannot be placed",
                   bus_id);
  case HDAL__PCI_NO_OBJECT:
    return unknown(HDAL_NOT_FOUND, d, "hwloc's topology has no PCI object with bus id %s", bus_id);
  case HDAL__PCI_NO_ANCESTOR:
    return unknown(HDAL_NOT_FOUND, d, "PCI %s has no CPU-side ancestor in hwloc's topology", bus_id);
  case HDAL__PCI_FOUND: break;
  }
  char root[32];
  return from_sets(anc->cpuset, anc->nodeset, pcie_root_of(pci, root, sizeof root) ? root : NULL);
}

/* Another device that computes on host CPUs: its cpuset, and the nodes of
 * its process's CPU devices it meets. */
static struct hdal__locality *of_cpuset(hdal_context *ctx, const hdal_device *d, const char *cpuset_text) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc(), other = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
  struct hdal__locality *l = NULL;
  if (!set || !other || !nodes) goto out;
  if (hwloc_bitmap_list_sscanf(set, cpuset_text) < 0) {
    l = unknown(HDAL_NOT_FOUND, d, "its cpuset attribute \"%s\" is not an hwloc list", cpuset_text);
    goto out;
  }
  for (size_t i = 0; i < ctx->ndevices; i++) {
    const hdal_device *c = ctx->devices[i];
    unsigned node;
    const char *text = hdal_device_attribute_get(c, HDAL_ATTRIBUTE_CPUSET);
    if (c == d || c->process_index != d->process_index || !c->platform || strcmp(c->platform, "cpu") || !text ||
        !uint_attribute(c, "numa_os_index", &node) || hwloc_bitmap_list_sscanf(other, text) < 0)
      continue;
    if (hwloc_bitmap_intersects(set, other) && hwloc_bitmap_set(nodes, node) < 0) goto out;
  }
  l = from_sets(set, nodes, NULL);
out:
  hwloc_bitmap_free(set);
  hwloc_bitmap_free(other);
  hwloc_bitmap_free(nodes);
  return l;
}

static struct hdal__locality *work_out(hdal_context *ctx, const hdal_device *d, bool cpu) {
  const char *bus_id = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  const char *cpuset = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_CPUSET);
  if (cpu) return of_cpu(d, cpuset);
  if (bus_id) return of_pci(ctx, d, bus_id);
  if (cpuset) return of_cpuset(ctx, d, cpuset);
  return unknown(HDAL_NOT_FOUND, d, "neither a %s nor a cpuset attribute places it in the machine",
                 HDAL_ATTRIBUTE_PCI_BUS_ID);
}

HDAL_API hdal_error *hdal_device_locality(const hdal_device *cd, hdal_locality *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!cd) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_locality: device is NULL");
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_locality: out is NULL");
  return hdal__device_locality(cd, "hdal_device_locality", out);
}

hdal_error *hdal__device_locality(const hdal_device *cd, const char *who, hdal_locality *out) {
  hdal_device *d = (hdal_device *)cd; /* the cache is the device's own, written once */
  hdal_context *ctx = d->ctx;
  bool cpu = d->platform && !strcmp(d->platform, "cpu") && d->dl.device_type == kDLCPU;
  /* Placed by this host's topology: a device with a PCI bus id, not a CPU device (its attributes place it). */
  bool by_topology = !cpu && hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  if (by_topology && d->process_index != ctx->process_index && d->host != ctx->own_host)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "%s: device %d is of process %d, on another host than this process's: "
                           "its locality is known on its own host only",
                           who, d->id, d->process_index);
  pthread_mutex_lock(&ctx->lock);
  if (!d->locality) d->locality = work_out(ctx, d, cpu);
  struct hdal__locality *l = d->locality;
  pthread_mutex_unlock(&ctx->lock);
  if (!l) return hdal__error_oom();
  if (l->code != HDAL_OK) return hdal__error_new(l->code, "%s: %s", who, l->text);
  out->cpuset = l->text;
  out->numa_nodes = l->nnodes ? l->nodes : NULL;
  out->numa_node_count = l->nnodes;
  out->pcie_root = l->pcie_root;
  return NULL;
}
