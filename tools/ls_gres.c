/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --of gres: Slurm gres.conf lines for this node's GPUs (hdal-ls(1)),
 * one per GPU of ls_gpus():
 *   Name=gpu Type=<model> File=<device node> Cores=<cores near it> Flags=<env>
 * Slurm wants one set of env flags for all the GPUs of a node (slurmd is fatal
 * otherwise), so a node of several vendors' GPUs gives each line every
 * vendor's flag.  Slurm reads a line as space-separated key=value pairs, with no quoting: a
 * model becomes [a-z0-9_] only, and a device node that holds anything else
 * Slurm would split on leaves its GPU out, with a warning. */
#include "config.h"
#include <ctype.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hwloc_policy.h"
#include "ls.h"

/* Whether Slurm reads s as one value: printable, no space, '#' or '='. */
static bool slurm_value(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p <= ' ' || *p >= 0x7f || *p == '#' || *p == '=') return false;
  return *s != '\0';
}

/* The cores of NUMA node `node` (hwloc logical index), as Slurm numbers them
 * (hwloc's logical core order): "0-3,8"; "" when unknown. */
static void cores_of(hwloc_topology_t t, int node, char *out, size_t size) {
  out[0] = '\0';
  hwloc_obj_t numa = t && node >= 0 ? hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)node) : NULL;
  if (!numa || !numa->cpuset) return;
  size_t n = 0;
  int first = -1, last = -2;
  for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, c));) {
    if (!hwloc_bitmap_intersects(c->cpuset, numa->cpuset)) continue;
    int i = (int)c->logical_index;
    if (i == last + 1) {
      last = i;
      continue;
    }
    if (first >= 0)
      n += (size_t)snprintf(out + n, size - n, first == last ? "%s%d" : "%s%d-%d", n ? "," : "", first, last);
    first = last = i;
    if (n >= size) return;
  }
  if (first >= 0) snprintf(out + n, size - n, first == last ? "%s%d" : "%s%d-%d", n ? "," : "", first, last);
}

static hwloc_topology_t load_topology(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return NULL;
  hdal__topology_apply(t, HDAL__TOPOLOGY_DEVICES); /* NUMA nodes and cores */
  if (hwloc_topology_load(t) < 0) {
    hwloc_topology_destroy(t);
    return NULL;
  }
  return t;
}

int ls_print_gres(const ls_view *v) {
  ls_gpu *g;
  ptrdiff_t k = ls_gpus(v, &g);
  if (k < 0) return -1;
  static const char *const flag_of[] = {[LS_VENDOR_NVIDIA] = "nvidia_gpu_env", [LS_VENDOR_AMD] = "amd_gpu_env",
                                        [LS_VENDOR_INTEL] = "intel_gpu_env", [LS_VENDOR_OTHER] = "opencl_env"};
  bool vendors[LS_VENDOR_OTHER + 1] = {false};
  for (ptrdiff_t i = 0; i < k; i++) vendors[g[i].vendor] = true;
  char flags[96] = "";
  for (int f = LS_VENDOR_NVIDIA; f <= LS_VENDOR_OTHER; f++)
    if (vendors[f]) snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%s", flags[0] ? "," : "", flag_of[f]);
  printf("# Slurm gres.conf for this node, written by hdal-ls (hdal %s)\n", hdal_version_string());
  hwloc_topology_t t = k ? load_topology() : NULL;
  static char nodes[LS_NODES_MAX][LS_NODE_MAX];
  for (ptrdiff_t i = 0; i < k; i++) {
    const hdal_device *d = g[i].d;
    size_t nn = ls_device_nodes(d, nodes, LS_NODES_MAX);
    char type[128], cores[1024];
    ls_model_word(hdal_device_kind(d), type, sizeof type);
    cores_of(t, g[i].numa, cores, sizeof cores);
    if (!nn) {
      char why[640];
      ls_no_node_reason(d, why, sizeof why);
      fprintf(stderr, "%s: GPU %s (device %d) has no device node (%s): left out\n", v->program, g[i].bus,
              hdal_device_id(d), why);
    } else if (!slurm_value(nodes[0]))
      fprintf(stderr, "%s: GPU %s (device %d): its device node has characters gres.conf cannot hold: left out\n",
              v->program, g[i].bus, hdal_device_id(d));
    else
      printf("Name=gpu Type=%s File=%s%s%s Flags=%s\n", type, nodes[0], cores[0] ? " Cores=" : "", cores, flags);
  }
  if (t) hwloc_topology_destroy(t);
  free(g);
  return 0;
}
