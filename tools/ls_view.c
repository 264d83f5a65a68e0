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
  switch (t) {
  case kDLCPU: return "kDLCPU";
  case kDLCUDA: return "kDLCUDA";
  case kDLCUDAHost: return "kDLCUDAHost";
  case kDLOpenCL: return "kDLOpenCL";
  case kDLVulkan: return "kDLVulkan";
  case kDLMetal: return "kDLMetal";
  case kDLVPI: return "kDLVPI";
  case kDLROCM: return "kDLROCM";
  case kDLROCMHost: return "kDLROCMHost";
  case kDLExtDev: return "kDLExtDev";
  case kDLCUDAManaged: return "kDLCUDAManaged";
  case kDLOneAPI: return "kDLOneAPI";
  case kDLWebGPU: return "kDLWebGPU";
  case kDLHexagon: return "kDLHexagon";
  case kDLMAIA: return "kDLMAIA";
  default: return "unknown";
  }
}

const char *ls_class_name(hdal_runtime_class c) { return c == HDAL_RUNTIME_PJRT ? "pjrt" : "ifrt-native"; }

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

bool ls_parse_uint(const char *s, unsigned long long *v) {
  /* Canonical decimal only: what the backends write, nothing a reader could take two ways. */
  if (!s || !*s || strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]) || strlen(s) > 20) return false;
  unsigned long long x = 0;
  for (const char *p = s; *p; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *v = x;
  return true;
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

/* The library's statuses: "ok: N device(s)", "disabled", "unavailable: WHY";
 * anything else is read as unavailable, the whole status its reason. */
void ls_backend_state_parse(const char *status, ls_backend_state *out) {
  *out = (ls_backend_state){.state = "unavailable", .reason = status, .reason_len = strlen(status)};
  if (!strncmp(status, "ok: ", 4)) {
    char *end;
    const char *p = status + 4;
    out->state = "ok";
    out->device_count = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
    if (*p >= '0' && *p <= '9') p = end;
    if (!strncmp(p, " devices", 8)) p += 8;
    else if (!strncmp(p, " device", 7)) p += 7;
    p += strspn(p, " ,;:(");
    size_t len = strlen(p);
    if (len && p[len - 1] == ')' && p > status && p[-1] == '(') len--;
    out->reason = len ? p : NULL;
    out->reason_len = len;
  } else if (!strcmp(status, "disabled") || !strncmp(status, "disabled: ", 10)) {
    out->state = "disabled";
    out->reason = status[8] ? status + 10 : NULL;
    out->reason_len = out->reason ? strlen(out->reason) : 0;
  } else if (!strncmp(status, "unavailable: ", 13)) {
    out->reason = status + 13;
    out->reason_len = strlen(out->reason);
  }
}

/* ---- attributes ---- */

bool ls_parse_bool(const char *s, bool *v) {
  if (!strcmp(s, "true") || !strcmp(s, "yes")) return *v = true, true;
  if (!strcmp(s, "false") || !strcmp(s, "no")) return *v = false, true;
  return false;
}
