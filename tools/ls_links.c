/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the links between the listed devices (hdal_device_link; docs/reference.md, "Links"):
 * which devices they join, the labels of --topology's matrix, as nvidia-smi topo -m writes them. */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include "ls.h"
#include "text.h"

/* A listed device of the printing process that is not host CPUs (no CPU backend's, nor one with a cpuset and
 * no PCI bus id). */
static bool linked(const ls_view *v, const hdal_device *d) {
  const char *platform = hdal_device_platform(d);
  return ls_selected(v, d) && hdal_device_process_index(d) == hdal_context_process_index(v->ctx) &&
         !(platform && !strcmp(platform, "cpu")) &&
         !(hdal_device_attribute_get(d, HDAL_ATTRIBUTE_CPUSET) && !hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID));
}

ptrdiff_t ls_linked_devices(const ls_view *v, const hdal_device ***out) {
  size_t n = hdal_context_device_count(v->ctx), m = 0;
  const hdal_device **ds = malloc((n ? n : 1) * sizeof *ds);
  if (!ds) return -1;
  for (size_t i = 0; i < n; i++)
    if (linked(v, hdal_context_device(v->ctx, i))) ds[m++] = hdal_context_device(v->ctx, i);
  *out = ds;
  return (ptrdiff_t)m;
}

static const char *link_label(const hdal_link *l, char *buf, size_t len) {
  /* The library's word in upper case ("pix": PIX); a fabric's by nvidia-smi's names, its links after. */
  if (l->kind != HDAL_LINK_FABRIC) {
    const char *word = hdal_link_kind_name(l->kind);
    size_t i = 0;
    for (; word && word[i] && i + 1 < len; i++) buf[i] = (char)toupper((unsigned char)word[i]);
    buf[i] = '\0';
    return word ? buf : "?";
  }
  const char *f = !l->fabric ? "FAB" : !strcmp(l->fabric, "nvlink") ? "NV" : !strcmp(l->fabric, "xgmi") ? "XGMI" : "XE";
  if (l->fabric_links) snprintf(buf, len, "%s%u", f, l->fabric_links);
  else snprintf(buf, len, "%s", f);
  return buf;
}

/* The CPUs of a locality in hwloc's list syntax ("0-23,48-71"), as nvidia-smi's CPU Affinity; "N/A". */
static void affinity(const hdal_device *d, char *cpus, size_t clen, char *nodes, size_t nlen) {
  hdal_locality loc;
  hdal_error *e = hdal_device_locality(d, &loc);
  snprintf(cpus, clen, "N/A");
  snprintf(nodes, nlen, "N/A");
  if (e) {
    hdal_error_destroy(e);
    return;
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && hwloc_bitmap_sscanf(set, loc.cpuset) == 0) hwloc_bitmap_list_snprintf(cpus, clen, set);
  hwloc_bitmap_free(set);
  size_t at = 0;
  for (size_t i = 0; i < loc.numa_node_count && at < nlen; i++)
    at += (size_t)snprintf(nodes + at, nlen - at, "%s%u", i ? "," : "", loc.numa_nodes[i]);
}

int ls_print_links(const ls_view *v) {
  const hdal_device **ds;
  ptrdiff_t k = ls_linked_devices(v, &ds);
  if (k < 0) return -1;
  size_t m = (size_t)k;
  if (m > LS_LINKED_MAX) printf("\nLinks: %zu devices, more than %d: no matrix (hdal_device_link answers for any two)\n", m, LS_LINKED_MAX);
  if (m < 2 || m > LS_LINKED_MAX) {
    free(ds);
    return 0;
  }
  printf("\nLinks:\n      ");
  for (size_t j = 0; j < m; j++) {
    char head[16];
    snprintf(head, sizeof head, "D%d", hdal_device_id(ds[j]));
    printf(" %-6s", head);
  }
  printf(" %-18s %s\n", "CPU Affinity", "NUMA Affinity");
  int rc = 0;
  for (size_t i = 0; i < m && rc == 0; i++) {
    char head[16], cpus[256], nodes[64];
    snprintf(head, sizeof head, "D%d", hdal_device_id(ds[i]));
    printf("  %-4s", head);
    for (size_t j = 0; j < m; j++) {
      hdal_link l;
      char buf[16];
      if (i == j) {
        printf(" %-6s", "X");
        continue;
      }
      hdal_error *e = hdal_device_link(ds[i], ds[j], &l);
      if (e) { /* out of memory: the pairs are of this process, on its host */
        hdal_error_destroy(e);
        rc = -1;
        break;
      }
      printf(" %-6s", link_label(&l, buf, sizeof buf));
    }
    affinity(ds[i], cpus, sizeof cpus, nodes, sizeof nodes);
    printf(" %-18s %s\n", cpus, nodes);
  }
  free(ds);
  if (rc) return rc;
  printf("\nLegend:\n"
         "  X    = itself\n"
         "  SAME = two faces of one device (two runtimes' views of one GPU)\n"
         "  NV#  = NVLink, directly or through NVSwitches (# links, where known)\n"
         "  XGMI = AMD Infinity Fabric (XGMI)\n"
         "  XE   = Intel Xe Link\n"
         "  PIX  = at most one PCIe switch, no host bridge\n"
         "  PXB  = several PCIe switches, no host bridge\n"
         "  PHB  = a PCIe host bridge (typically the CPU)\n"
         "  NODE = PCIe and the interconnect between host bridges within a NUMA node\n"
         "  SYS  = across NUMA nodes or sockets (SMP interconnect), or nothing nearer is known\n");
  return 0;
}
