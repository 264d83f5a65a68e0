/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --of cdi: a Container Device Interface spec for this node's GPUs
 * (hdal-ls(1), docs/design.md "Cluster and container output"), for podman,
 * containerd and CRI-O (/etc/cdi or /run/cdi):
 *   - cdiVersion 0.5.0, the newest that podman 4.3 (Debian 12) accepts;
 *   - kind "hdal/gpu": the vendors' own generators write nvidia.com/gpu and
 *     amd.com/gpu, and a spec of the same kind would collide with theirs;
 *   - one device per GPU of ls_gpus(), named by its index in bus id order and
 *     by its UUID, plus "all";
 *   - each device's own node in its edits, the nodes its GPUs share
 *     (/dev/nvidiactl, /dev/kfd, ...) once in the spec's edits, and an
 *     HDAL_DEVICE_SELECTOR that keeps, inside the container, the same GPU in
 *     every backend (by PCI bus id, which every backend reports alike) and
 *     every CPU device, and HDAL_PCIE_ROOT: its GPUs' PCIe roots (pcie_roots()).
 * Under HDAL_FSROOT a node's path in the container is the path below the root
 * and hostPath the node itself. */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "ls.h"

/* Whether CDI takes s as a device name: [A-Za-z0-9], then [A-Za-z0-9_.:-], ending alphanumeric. */
static bool cdi_name(const char *s) {
  size_t n = strlen(s);
  if (!n || n > 128) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    bool alnum = c < 0x80 && isalnum(c);
    if (!alnum && (i == 0 || i == n - 1 || !strchr("_.:-", c))) return false;
  }
  return true;
}

static void node(json_writer *w, const char *path) {
  size_t root = strlen(ls_fsroot());
  json_open(w, NULL, '{');
  json_string(w, "path", root ? path + root : path);
  if (root) json_string(w, "hostPath", path);
  json_close(w, '}');
}

/* HDAL_PCIE_ROOT=<the PCIe root of each of the GPUs g[first..last)>, as
 * Kubernetes' DRA attribute resource.kubernetes.io/pcieRoot spells it
 * ("pci0000:00", hdal_device_locality()), comma-separated in the order of
 * the selector's pci= terms, one not known left empty; nothing when none is
 * known.  An environment variable, since device annotations need CDI 0.6.0,
 * which podman 4.3 refuses. */
static void pcie_roots(json_writer *w, const ls_gpu *g, size_t first, size_t last) {
  size_t len = sizeof "HDAL_PCIE_ROOT=" + (last - first) * 32, n = 0;
  char *env = malloc(len);
  bool known = false;
  if (!env) return;
  n = (size_t)snprintf(env, len, "HDAL_PCIE_ROOT=");
  for (size_t i = first; i < last; i++) {
    hdal_locality loc;
    hdal_error *e = hdal_device_locality(g[i].d, &loc);
    const char *root = e ? NULL : loc.pcie_root;
    hdal_error_destroy(e);
    known = known || root;
    /* "pci", 4 to 8 hex digits, ':', 2: within its 32 bytes. */
    n += (size_t)snprintf(env + n, len - n, "%s%s", i > first ? "," : "", root ? root : "");
  }
  if (known) json_string(w, NULL, env);
  free(env);
}

/* One device: its name, its own node, the selector of its GPUs g[first..last). */
static void device(json_writer *w, const char *name, const ls_gpu *g, size_t first, size_t last,
                   char nodes[][LS_NODES_MAX][LS_NODE_MAX]) {
  json_open(w, NULL, '{');
  json_string(w, "name", name);
  json_open(w, "containerEdits", '{');
  json_open(w, "env", '[');
  size_t len = strlen("HDAL_DEVICE_SELECTOR=*:cpu;*:") + (last - first) * (sizeof "pci=" + sizeof g->bus);
  char *sel = malloc(len);
  if (sel) {
    size_t n = (size_t)snprintf(sel, len, "HDAL_DEVICE_SELECTOR=*:cpu;*:");
    for (size_t i = first; i < last; i++) n += (size_t)snprintf(sel + n, len - n, "%spci=%s", i > first ? "," : "", g[i].bus);
    json_string(w, NULL, sel);
    free(sel);
  }
  pcie_roots(w, g, first, last);
  json_close(w, ']');
  json_open(w, "deviceNodes", '[');
  for (size_t i = first; i < last; i++) node(w, nodes[i][0]);
  json_close(w, ']');
  json_close(w, '}');
  json_close(w, '}');
}

int ls_print_cdi(const ls_view *v) {
  ls_gpu *all;
  ptrdiff_t k = ls_gpus(v, &all);
  if (k < 0) return -1;
  /* The GPUs with a node that a JSON string can carry (any, escaped): those without one are left out. */
  char(*nodes)[LS_NODES_MAX][LS_NODE_MAX] = calloc(k ? (size_t)k : 1, sizeof *nodes);
  size_t *count = calloc(k ? (size_t)k : 1, sizeof *count);
  ls_gpu *g = calloc(k ? (size_t)k : 1, sizeof *g);
  if (!nodes || !count || !g) {
    free(nodes), free(count), free(g), free(all);
    return -1;
  }
  size_t m = 0;
  for (ptrdiff_t i = 0; i < k; i++) {
    count[m] = ls_device_nodes(all[i].d, nodes[m], LS_NODES_MAX);
    if (!count[m]) {
      char why[640];
      ls_no_node_reason(all[i].d, why, sizeof why);
      fprintf(stderr, "%s: GPU %s (device %d) has no device node (%s): left out\n", v->program, all[i].bus,
              hdal_device_id(all[i].d), why);
      continue;
    }
    g[m++] = all[i];
  }
  json_writer w;
  json_begin(&w, stdout);
  json_string(&w, "cdiVersion", "0.5.0");
  json_string(&w, "kind", "hdal/gpu");
  json_open(&w, "devices", '[');
  for (size_t i = 0; i < m; i++) {
    char index[24];
    snprintf(index, sizeof index, "%zu", i);
    device(&w, index, g, i, i + 1, nodes);
    const char *uuid = hdal_device_attribute_get(g[i].d, HDAL_ATTRIBUTE_UUID);
    bool named = uuid && cdi_name(uuid) && strcmp(uuid, "all") && strspn(uuid, "0123456789") != strlen(uuid);
    for (size_t j = 0; named && j < i; j++) {
      const char *other = hdal_device_attribute_get(g[j].d, HDAL_ATTRIBUTE_UUID);
      named = !other || strcmp(other, uuid);
    }
    if (named) device(&w, uuid, g, i, i + 1, nodes);
    else if (uuid)
      fprintf(stderr, "%s: GPU %s (device %d): its UUID cannot name a CDI device (or names two): named by index only\n",
              v->program, g[i].bus, hdal_device_id(g[i].d));
  }
  if (m) device(&w, "all", g, 0, m, nodes);
  json_close(&w, ']');
  /* The nodes the GPUs share, once. */
  json_open(&w, "containerEdits", '{');
  json_open(&w, "deviceNodes", '[');
  for (size_t i = 0; i < m; i++)
    for (size_t j = 1; j < count[i]; j++) {
      bool seen = false;
      for (size_t a = 0; a <= i && !seen; a++)
        for (size_t b = 1; b < (a == i ? j : count[a]) && !seen; b++) seen = !strcmp(nodes[a][b], nodes[i][j]);
      if (!seen) node(&w, nodes[i][j]);
    }
  json_close(&w, ']');
  json_close(&w, '}');
  int rc = json_end(&w);
  free(nodes), free(count), free(g), free(all);
  return rc;
}
