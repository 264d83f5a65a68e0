/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — how two devices are joined (hdal_device_link; docs/reference.md, "Links").
 *
 * The kind, from the nearest, the first that holds:
 *   - same: one piece of hardware (the faces' rule, faces.c);
 *   - fabric: a GPU fabric joins them in hwloc's distance matrices of the
 *     context's topology with I/O objects: a bandwidth between the two, or
 *     between each and NVSwitches (PCI objects hwloc calls so).  hwloc's
 *     matrices carry no switch-to-switch trunks, and a machine's NVSwitches
 *     are one fabric (DGX-2's two boards, HGX), so any two GPUs that reach
 *     NVSwitches are joined: each switch a GPU reaches is one of its links;
 *   - fabric: else one their backend knows (hdal_backend_buffer_ops::fabric:
 *     the kernel driver's XGMI links, which a live machine's hwloc leaves out);
 *   - pix, pxb, phb, node, sys: the path between their PCI objects in that
 *     topology's tree, as nvidia-smi topo -m names it;
 *   - node or sys from their NUMA nodes (hdal_device_locality), where the
 *     tree does not place both; sys where nothing is known.
 * A device is found in the topology by its PCI bus id, else by its UUID among
 * the GPU OS devices' (hwloc's NVIDIAUUID, AMDUUID, LevelZeroUUID infos).
 * Peer access is the runtime's answer for two devices of one backend of this
 * process (hdal_backend_buffer_ops::peer_access), asked on every call.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hwloc.h>
#include "device_ops.h"
#include "internal.h"

/* The matrices hwloc's vendor components (and XML files) carry, and the fabric each is. */
static const struct {
  const char *matrix, *fabric;
} fabrics[] = {{"NVLinkBandwidth", "nvlink"}, {"XGMIBandwidth", "xgmi"}, {"XeLinkBandwidth", "xelink"}};

/* hwloc's infos of a GPU OS device's UUID, and the prefix hdal's uuid attribute may lack ("GPU-"). */
static const char *const uuid_infos[] = {"NVIDIAUUID", "AMDUUID", "LevelZeroUUID"};

static bool uuid_equal(const char *info, const char *attr) {
  if (!strcasecmp(info, attr)) return true;
  /* nvidia-smi's "GPU-<uuid>" against a bare one, either way round. */
  if (!strncasecmp(info, "GPU-", 4) && !strcasecmp(info + 4, attr)) return true;
  return !strncasecmp(attr, "GPU-", 4) && !strcasecmp(attr + 4, info);
}

/* Where a device is in the topology: its PCI object, and its GPU OS device when the UUID finds one. */
typedef struct {
  hwloc_obj_t pci, osdev;
} placed;

static placed find(hwloc_topology_t t, const hdal_device *d) {
  placed p = {NULL, NULL};
  const char *bus = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  const char *uuid = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_UUID);
  if (bus) p.pci = hwloc_get_pcidev_by_busidstring(t, bus);
  if (!uuid) return p;
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t, o));)
    for (size_t i = 0; i < sizeof uuid_infos / sizeof *uuid_infos; i++) {
      const char *v = hwloc_obj_get_info_by_name(o, uuid_infos[i]);
      if (v && uuid_equal(v, uuid)) {
        p.osdev = o;
        if (!p.pci && o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE) p.pci = o->parent;
        return p;
      }
    }
  return p;
}

/* Where d is, found once per device (every pair it is in asks); ctx->lock held. */
static placed place(hwloc_topology_t t, const hdal_device *cd) {
  hdal_device *d = (hdal_device *)cd; /* the cache is the device's own, written under the lock */
  if (!d->topology_placed) {
    placed p = find(t, d);
    d->topology_pci = p.pci;
    d->topology_osdev = p.osdev;
    d->topology_placed = true;
  }
  return (placed){d->topology_pci, d->topology_osdev};
}

/* The device's row in a matrix: its OS device's, its PCI object's, or an OS device under its PCI object. */
static int row_of(struct hwloc_distances_s *m, const placed *p) {
  for (unsigned i = 0; i < m->nbobjs; i++) {
    hwloc_obj_t o = m->objs[i];
    if (o && ((p->osdev && o == p->osdev) || (p->pci && (o == p->pci || o->parent == p->pci)))) return (int)i;
  }
  return -1;
}

static uint64_t between(struct hwloc_distances_s *m, int i, int j) {
  uint64_t v = m->values[(size_t)i * m->nbobjs + (size_t)j];
  return v ? v : m->values[(size_t)j * m->nbobjs + (size_t)i];
}

/* A fabric between a and b in one of hwloc's matrices: directly, or through NVSwitches (the pair's
 * bandwidth and link count are the lesser of what each sends into the switches). */
static bool fabric_of(hwloc_topology_t t, const placed *a, const placed *b, hdal_link *out) {
  for (size_t f = 0; f < sizeof fabrics / sizeof *fabrics; f++) {
    /* A machine has one matrix of each name (hwloc's vendor component, or the XML file's): a few slots do. */
    struct hwloc_distances_s *ms[4];
    unsigned nr = sizeof ms / sizeof *ms;
    if (hwloc_distances_get_by_name(t, fabrics[f].matrix, &nr, ms, 0) < 0) continue;
    if (nr > sizeof ms / sizeof *ms) nr = sizeof ms / sizeof *ms; /* the total, of which these were given */
    bool found = false;
    for (unsigned k = 0; k < nr; k++) {
      struct hwloc_distances_s *m = ms[k];
      int i = found ? -1 : row_of(m, a), j = found ? -1 : row_of(m, b);
      if (i >= 0 && j >= 0 && i != j) {
        uint64_t direct = between(m, i, j), via_a = 0, via_b = 0;
        unsigned links_a = 0, links_b = 0;
        for (unsigned s = 0; s < m->nbobjs && !direct; s++) {
          hwloc_obj_t o = m->objs[s];
          if (!o || o->type != HWLOC_OBJ_PCI_DEVICE || !o->subtype || strcasecmp(o->subtype, "NVSwitch")) continue;
          uint64_t sa = between(m, i, (int)s), sb = between(m, j, (int)s);
          via_a += sa;
          via_b += sb;
          links_a += sa != 0;
          links_b += sb != 0;
        }
        if (direct || (links_a && links_b)) {
          found = true;
          out->kind = HDAL_LINK_FABRIC;
          out->fabric = fabrics[f].fabric;
          out->bandwidth_mbps = direct ? direct : via_a < via_b ? via_a : via_b;
          out->fabric_links = direct ? 0 : links_a < links_b ? links_a : links_b;
        }
      }
      hwloc_distances_release(t, m);
    }
    if (found) return true;
  }
  return false;
}

static bool is_host_bridge(hwloc_obj_t o) {
  return o->type == HWLOC_OBJ_BRIDGE && o->attr && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* PCIe bridges between a PCI object and an ancestor of it, both left out. */
static unsigned bridges_below(hwloc_obj_t o, hwloc_obj_t ancestor) {
  unsigned n = 0;
  for (o = o->parent; o && o != ancestor; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) n++;
  return n;
}

/* The PCI path between two PCI objects, as nvidia-smi topo -m names it. */
static hdal_link_kind pci_path(hwloc_topology_t t, hwloc_obj_t a, hwloc_obj_t b) {
  if (a == b) return HDAL_LINK_SAME;
  hwloc_obj_t c = hwloc_get_common_ancestor_obj(t, a, b);
  if (c && hwloc_obj_type_is_io(c->type)) {
    if (is_host_bridge(c)) return HDAL_LINK_PHB;
    /* One switch: each side at most one (downstream) bridge below the common (upstream) one. */
    return bridges_below(a, c) <= 1 && bridges_below(b, c) <= 1 ? HDAL_LINK_PIX : HDAL_LINK_PXB;
  }
  /* Host bridges meet at CPU-side objects: within one NUMA node, or across. */
  return c && c->nodeset && hwloc_bitmap_weight(c->nodeset) == 1 ? HDAL_LINK_NODE : HDAL_LINK_SYS;
}

/* Two devices of one backend of this process: what its runtime knows of them (peer access, a fabric). */
static bool same_backend_here(hdal_context *ctx, const hdal_device *a, const hdal_device *b) {
  return a->backend && a->backend == b->backend && a->process_index == ctx->process_index &&
         b->process_index == ctx->process_index;
}

/* From the topology: a fabric of hwloc's matrices, else one the backend knows, else the PCI path; false when
 * none says (the tree places not both). */
static bool from_topology(hdal_context *ctx, const hdal_device *a, const hdal_device *b, hdal_link *out) {
  pthread_mutex_lock(&ctx->lock);
  hwloc_topology_t t = hdal__pci_topology_locked(ctx);
  placed pa = {NULL, NULL}, pb = {NULL, NULL};
  bool known = false;
  if (t) {
    pa = place(t, a);
    pb = place(t, b);
    known = fabric_of(t, &pa, &pb, out);
  }
  pthread_mutex_unlock(&ctx->lock);
  /* The backend's answer (the kernel driver's XGMI links), asked without the context's lock held. */
  if (!known && same_backend_here(ctx, a, b) && hdal__op_fabric(a, b, out)) {
    out->kind = HDAL_LINK_FABRIC;
    return true;
  }
  if (known || !pa.pci || !pb.pci) return known;
  pthread_mutex_lock(&ctx->lock);
  out->kind = pci_path(t, pa.pci, pb.pci);
  pthread_mutex_unlock(&ctx->lock);
  return true;
}

/* From the NUMA nodes: one and the same node, else across. */
static hdal_link_kind from_numa(const hdal_device *a, const hdal_device *b) {
  hdal_locality la, lb;
  hdal_error *ea = hdal_device_locality(a, &la), *eb = hdal_device_locality(b, &lb);
  bool node = !ea && !eb && la.numa_node_count == 1 && lb.numa_node_count == 1 && la.numa_nodes[0] == lb.numa_nodes[0];
  hdal_error_destroy(ea);
  hdal_error_destroy(eb);
  return node ? HDAL_LINK_NODE : HDAL_LINK_SYS;
}

HDAL_API hdal_error *hdal_device_link(const hdal_device *a, const hdal_device *b, hdal_link *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!a || !b) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_link: device %s is NULL", a ? "b" : "a");
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_link: out is NULL");
  if (a == b) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_link: a and b are one device (%d)", a->id);
  hdal_context *ctx = a->ctx;
  if (b->ctx != ctx)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_link: devices %d and %d are of two contexts", a->id,
                           b->id);
  if (a->host != b->host)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "hdal_device_link: devices %d and %d are on two hosts: no link joins them", a->id, b->id);
  if (a->host != ctx->own_host)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "hdal_device_link: devices %d and %d are on another host than this process's: their "
                           "link is known on their own host only",
                           a->id, b->id);
  int ha = hdal_device_hardware_index(a), hb = hdal_device_hardware_index(b);
  if (ha < 0 || hb < 0) return hdal__error_oom();
  if (ha == hb)
    out->kind = HDAL_LINK_SAME;
  else if (!from_topology(ctx, a, b, out))
    out->kind = from_numa(a, b);
  /* The runtime's answer, for two devices of one backend of this process. */
  if (same_backend_here(ctx, a, b)) {
    bool can = false;
    hdal_error *e = hdal__op_peer_access(a, b, &can);
    if (e) {
      hdal__debug(ctx, "links", "devices %d and %d: no peer access: %s", a->id, b->id, hdal_error_message(e));
      hdal_error_destroy(e);
      can = false;
    }
    out->peer_access = can;
  }
  return NULL;
}
