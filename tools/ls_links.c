/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the links between the listed devices (hdal_device_link; docs/reference.md, "Links"):
 * which devices they join, the labels of --topology's matrix, as nvidia-smi topo -m writes them. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include "ls.h"
#include "text.h"

bool ls_linked(const ls_view *v, const hdal_device *d) {
  const char *platform = hdal_device_platform(d);
  return ls_selected(v, d) && hdal_device_process_index(d) == hdal_context_process_index(v->ctx) &&
         !(platform && !strcmp(platform, "cpu")) &&
         !(hdal_device_attribute_get(d, HDAL_ATTRIBUTE_CPUSET) && !hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID));
}

size_t ls_linked_count(const ls_view *v) {
  size_t m = 0;
  for (size_t i = 0; i < hdal_context_device_count(v->ctx); i++) m += ls_linked(v, hdal_context_device(v->ctx, i));
  return m;
}

const char *ls_link_label(const hdal_link *l, char *buf, size_t len) {
  static const char *const pci[] = {"SAME", NULL, "PIX", "PXB", "PHB", "NODE", "SYS"};
  if (l->kind != HDAL_LINK_FABRIC) return l->kind <= HDAL_LINK_SYS ? pci[l->kind] : "?";
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
  size_t n = hdal_context_device_count(v->ctx), m = ls_linked_count(v);
  if (m > LS_LINKED_MAX) {
    printf("\nLinks: %zu devices, more than %d: no matrix (hdal_device_link answers for any two)\n", m, LS_LINKED_MAX);
    return 0;
  }
  m = 0;
  const hdal_device **ds = malloc((n ? n : 1) * sizeof *ds);
  if (!ds) return -1;
  for (size_t i = 0; i < n; i++)
    if (ls_linked(v, hdal_context_device(v->ctx, i))) ds[m++] = hdal_context_device(v->ctx, i);
  if (m < 2) {
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
      printf(" %-6s", ls_link_label(&l, buf, sizeof buf));
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
