/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --of gres: Slurm gres.conf lines for this node's GPUs (hdal-ls(1)),
 * one per GPU of ls_gpus():
 *   Name=gpu Type=<model> File=<device node> Cores=<cores near it> Links=<fabric links> Flags=<env>
 * (Cores= left out when the GPU's locality is not known, a comment line
 * before its line saying why; Links= only where a fabric joins two of them)
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

/* The cores nearest GPU d, as gres.conf's Cores= wants them: the cores of
 * the PUs near it, each by its logical index, which is how Slurm numbers cores
 * (gres.conf(5): "Core L#" of lstopo), as a range list ("0-5,12-17").
 * slurmd numbers the whole node's cores, those of CPUs outside this
 * process's cgroup included (it loads hwloc's topology with the whole-system
 * flag), so `t` is the whole node (load_topology), and the PUs near the GPU
 * are its PCI object's CPU-side ancestor's there: the rule of
 * hdal_device_locality() (docs/reference.md, "Locality"), whose own answer
 * is this process's view (a GPU whose CPUs are all outside the cgroup has none
 * of them) and serves only where `t` has no PCI object of the GPU's bus id.
 * False, with why in `why`, when neither places it or a PU has no core in `t`. */
static bool cores_of(hwloc_topology_t t, const hdal_device *d, char *out, size_t size, char *why, size_t why_size) {
  out[0] = why[0] = '\0';
  if (!t) {
    snprintf(why, why_size, "hwloc could not load the topology");
    return false;
  }
  hwloc_bitmap_t pus = hwloc_bitmap_alloc(), cores = hwloc_bitmap_alloc();
  bool ok = false;
  const char *bus = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  hwloc_obj_t pci = bus ? hwloc_get_pcidev_by_busidstring(t, bus) : NULL;
  hwloc_obj_t near = pci ? hwloc_get_non_io_ancestor_obj(t, pci) : NULL;
  hdal_locality loc;
  hdal_error *e = NULL;
  if (!pus || !cores) snprintf(why, why_size, "out of memory");
  else if (near && near->cpuset) ok = hwloc_bitmap_copy(pus, near->cpuset) == 0;
  else if ((e = hdal_device_locality(d, &loc))) snprintf(why, why_size, "%s", hdal_error_message(e));
  else ok = hwloc_bitmap_sscanf(pus, loc.cpuset) == 0;
  hdal_error_destroy(e);
  if (ok && hwloc_bitmap_iszero(pus)) {
    snprintf(why, why_size, "hwloc's topology gives it no CPUs");
    ok = false;
  }
  if (ok) {
    int i;
    hwloc_bitmap_foreach_begin(i, pus) {
      hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, (unsigned)i);
      hwloc_obj_t core = pu ? hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu) : NULL;
      if (!core) {
        char set[256];
        hwloc_bitmap_list_snprintf(set, sizeof set, pus);
        snprintf(why, why_size, "CPU %d of its CPUs %s has no core in hwloc's topology", i, set);
        ok = false;
        break;
      }
      hwloc_bitmap_set(cores, core->logical_index);
    }
    hwloc_bitmap_foreach_end();
    if (ok && hwloc_bitmap_list_snprintf(out, size, cores) >= (int)size) {
      snprintf(why, why_size, "too many cores to write");
      ok = false;
    }
  }
  hwloc_bitmap_free(pus);
  hwloc_bitmap_free(cores);
  if (!ok) out[0] = '\0';
  return ok;
}

/* A comment line of gres.conf: Slurm ends a comment at the line's end and
 * reads a backslash there as a continuation, so anything but printable ASCII
 * and a backslash becomes '?'. */
static void comment(const char *bus, const char *text) {
  printf("# GPU %s: ", bus);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) putchar(*p < ' ' || *p >= 0x7f || *p == '\\' ? '?' : *p);
  putchar('\n');
}

/* The fabric links between the GPUs that have a line, every pair asked once (hdal_device_link): counts[i * k +
 * j] is NVLink, XGMI or Xe Link's links between GPUs i and j (1 where the count is not known), 0 for none;
 * whether any pair has one.  Links= is written only then, where it says more than that no two share one. */
static bool fabric_links(const ls_gpu *g, ptrdiff_t k, const bool *written, long *counts) {
  bool any = false;
  for (ptrdiff_t i = 0; i < k; i++)
    for (ptrdiff_t j = i + 1; j < k; j++) {
      hdal_link l = {.kind = HDAL_LINK_SYS};
      hdal_error *e = written[i] && written[j] ? hdal_device_link(g[i].d, g[j].d, &l) : NULL;
      long n = e || l.kind != HDAL_LINK_FABRIC ? 0 : l.fabric_links ? (long)l.fabric_links : 1;
      hdal_error_destroy(e); /* out of memory: no link said */
      counts[i * k + j] = counts[j * k + i] = n;
      any |= n > 0;
    }
  return any;
}

/* gres.conf's Links= of GPU `self`: toward each GPU that has a line, in the lines' order, -1 for itself, else
 * its fabric links, as Slurm's NVML autodetection counts NVLinks (gres.conf(5)); false when it does not fit. */
static bool links_of(ptrdiff_t k, const bool *written, const long *counts, ptrdiff_t self, char *out, size_t size) {
  size_t at = 0;
  out[0] = '\0';
  for (ptrdiff_t j = 0; j < k; j++) {
    if (!written[j]) continue;
    int w = snprintf(out + at, size - at, "%s%ld", at ? "," : "", j == self ? -1L : counts[self * k + j]);
    if (w < 0 || (size_t)w >= size - at) return false;
    at += (size_t)w;
  }
  return true;
}

/* The whole node as slurmd sees it: cores and PCI objects, the CPUs outside this process's cgroup kept. */
static hwloc_topology_t load_topology(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return NULL;
  hdal__topology_apply(t, HDAL__TOPOLOGY_PCI);
  hwloc_topology_set_flags(t, hwloc_topology_get_flags(t) | HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
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
  /* The GPUs that get a line, first, and their device nodes: Links= counts toward each of them, in the lines'
   * order. */
  size_t n = k ? (size_t)k : 1;
  bool *written = calloc(n, sizeof *written);
  long *counts = calloc(n * n, sizeof *counts);
  char(*node)[LS_NODE_MAX] = calloc(n, sizeof *node);
  if (!written || !counts || !node) {
    if (t) hwloc_topology_destroy(t);
    free(written);
    free(counts);
    free(node);
    free(g);
    return -1;
  }
  size_t nwritten = 0;
  for (ptrdiff_t i = 0; i < k; i++) {
    const hdal_device *d = g[i].d;
    if (!ls_device_nodes(d, nodes, LS_NODES_MAX)) {
      char reason[640];
      ls_no_node_reason(d, reason, sizeof reason);
      fprintf(stderr, "%s: GPU %s (device %d) has no device node (%s): left out\n", v->program, g[i].bus,
              hdal_device_id(d), reason);
    } else if (!slurm_value(nodes[0]))
      fprintf(stderr, "%s: GPU %s (device %d): its device node has characters gres.conf cannot hold: left out\n",
              v->program, g[i].bus, hdal_device_id(d));
    else {
      written[i] = true;
      nwritten++;
      memcpy(node[i], nodes[0], sizeof node[i]);
    }
  }
  bool fabric = nwritten > 1 && fabric_links(g, k, written, counts);
  for (ptrdiff_t i = 0; i < k; i++) {
    const hdal_device *d = g[i].d;
    char type[128], cores[1024], why[768], links[1024];
    if (!written[i]) continue;
    ls_model_word(hdal_device_kind(d), type, sizeof type);
    /* Without Cores=, any core may run its jobs (gres.conf(5)): a comment before its line says why. */
    bool placed = cores_of(t, d, cores, sizeof cores, why, sizeof why);
    if (!placed) {
      char text[sizeof why + 16];
      snprintf(text, sizeof text, "no Cores= (%s)", why);
      comment(g[i].bus, text);
    }
    /* Its line, in gres.conf(5)'s order: Name Type File Cores Links Flags. */
    printf("Name=gpu Type=%s File=%s", type, node[i]);
    if (placed) printf(" Cores=%s", cores);
    if (fabric && links_of(k, written, counts, i, links, sizeof links)) printf(" Links=%s", links);
    printf(" Flags=%s\n", flags);
  }
  if (t) hwloc_topology_destroy(t);
  free(written);
  free(counts);
  free(node);
  free(g);
  return 0;
}
