/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the view its outputs share (ls.h). */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ls.h"

bool ls_selected(const ls_view *v, const hdal_device *d) {
  if (!v->platforms) return true;
  const char *platform = hdal_device_platform(d);
  size_t n = strlen(platform);
  for (const char *p = v->platforms; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, platform, n)) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

const char *ls_dl_type_name(int t) {
  const char *name = hdal_dlpack_device_type_name((DLDeviceType)t);
  return name ? name : "unknown";
}

void ls_human_bytes(uint64_t b, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)b;
  unsigned u = 0;
  while (v >= 1024 && u < 5) v /= 1024, u++;
  if (b == 0) snprintf(buf, size, "-");
  else if (u == 0) snprintf(buf, size, "%" PRIu64 " B", b);
  else snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* ---- topology ---- */

bool ls_host_memory(const hdal_device *d) { return hdal_device_dlpack_device(d).device_type == kDLCPU; }

static bool is_cpu_device(const hdal_device *d) { return hdal_device_is_addressable(d) && ls_host_memory(d); }

/* Devices by NUMA node, ascending, the devices without one (any negative node) last; in id order within. */
typedef struct {
  int node;
  size_t i;
} by_node;

static int cmp_by_node(const void *a, const void *b) {
  const by_node *x = a, *y = b;
  if ((x->node < 0) != (y->node < 0)) return x->node < 0 ? 1 : -1;
  if (x->node >= 0 && x->node != y->node) return x->node < y->node ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

int ls_topology_build(const ls_view *v, ls_topology *t) {
  size_t n = hdal_context_device_count(v->ctx), m = n ? n : 1;
  *t = (ls_topology){0};
  by_node *order = malloc(m * sizeof *order);
  t->groups = malloc(m * sizeof *t->groups);
  t->devices = malloc(m * sizeof *t->devices);
  if (!order || !t->groups || !t->devices) {
    free(order);
    ls_topology_free(t);
    return -1;
  }
  for (size_t i = 0; i < n; i++) order[i] = (by_node){hdal_device_numa_node(hdal_context_device(v->ctx, i)), i};
  qsort(order, n, sizeof *order, cmp_by_node);
  size_t k = 0;
  for (size_t a = 0, b; a < n; a = b) {
    int node = order[a].node < 0 ? -1 : order[a].node;
    ls_group g = {.node = node, .first = k};
    for (b = a; b < n && (order[b].node < 0 ? -1 : order[b].node) == node; b++) {
      const hdal_device *d = hdal_context_device(v->ctx, order[b].i);
      if (node >= 0 && !g.cpu && is_cpu_device(d)) g.cpu = d;
      if (ls_selected(v, d)) t->devices[k++] = d;
    }
    g.count = k - g.first;
    /* A node shows when a CPU device of this process or a selected device names it. */
    if (g.count || g.cpu) t->groups[t->ngroups++] = g;
  }
  free(order);
  return 0;
}

void ls_topology_free(ls_topology *t) {
  free(t->groups);
  free(t->devices);
  *t = (ls_topology){0};
}

/* ---- identity ---- */

const char *ls_identity(const hdal_device *d, const char **value, char *buf, size_t size) {
  static const char *const keys[] = {HDAL_ATTRIBUTE_UUID, HDAL_ATTRIBUTE_PCI_BUS_ID};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if ((*value = hdal_device_attribute_get(d, keys[i])) && **value) return keys[i];
  /* A device of the host's memory is its NUMA node, whatever its backend calls its platform. */
  if (ls_host_memory(d) && hdal_device_numa_node(d) >= 0) {
    snprintf(buf, size, "%d", hdal_device_numa_node(d));
    *value = buf;
    return "numa_node";
  }
  *value = NULL;
  return NULL;
}

/* ---- backends ---- */

bool ls_backend_state_get(const hdal_context *ctx, size_t i, ls_backend_state *out) {
  hdal_backend_state st = {.struct_size = sizeof st};
  *out = (ls_backend_state){.state = hdal_backend_state_name(HDAL_BACKEND_UNAVAILABLE)};
  if (!hdal_context_backend_state(ctx, i, &st)) return false;
  const char *why = st.reason ? st.reason : "";
  int n = 0;
  out->device_count = st.device_count;
  /* A state without a word (none yet) reads as unavailable, as hdal.h asks. */
  if (hdal_backend_state_name(st.state)) out->state = hdal_backend_state_name(st.state);
  switch (st.state) {
  case HDAL_BACKEND_OK:
    /* The devices the backend gave that broke a rule: how many, the first one's why. */
    if (st.refused_count == 1) n = asprintf(&out->reason, "1 refused: %s", why);
    else if (st.refused_count)
      n = asprintf(&out->reason, "%zu refused: %s (and %zu more)", st.refused_count, why, st.refused_count - 1);
    break;
  case HDAL_BACKEND_DISABLED: break;
  default: /* unavailable or failed: why */
    if (st.reason && !(out->reason = strdup(st.reason))) n = -1;
  }
  if (n < 0) out->reason = NULL;
  return n >= 0;
}

void ls_backend_state_free(ls_backend_state *st) {
  free(st->reason);
  st->reason = NULL;
}
