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

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* A device of the host's own memory: what its backend routes kDLCPU tensors to,
 * whatever the backend is called. */
static bool host_cpu(const hdal_device *d) { return hdal_device_dlpack_device(d).device_type == kDLCPU; }

static bool is_cpu_device(const hdal_device *d) { return hdal_device_is_addressable(d) && host_cpu(d); }

const hdal_device *ls_numa_cpu_device(hdal_context *ctx, int node) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (is_cpu_device(d) && hdal_device_numa_node(d) == node) return d;
  }
  return NULL;
}

bool ls_in_group(const hdal_device *d, int key) {
  int node = hdal_device_numa_node(d);
  return key < 0 ? node < 0 : node == key;
}

int *ls_topology_groups(const ls_view *v, size_t *n) {
  size_t count = hdal_context_device_count(v->ctx), k = 0;
  int *nodes = malloc((count + 1) * sizeof *nodes);
  if (!nodes) return NULL;
  bool unknown = false;
  for (size_t i = 0; i < count; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    bool selected = ls_selected(v, d);
    int node = hdal_device_numa_node(d);
    if (node < 0) unknown |= selected;
    else if (selected || is_cpu_device(d)) nodes[k++] = node;
  }
  qsort(nodes, k, sizeof *nodes, cmp_int);
  size_t m = 0;
  for (size_t i = 0; i < k; i++)
    if (m == 0 || nodes[m - 1] != nodes[i]) nodes[m++] = nodes[i];
  if (unknown) nodes[m++] = -1;
  *n = m;
  return nodes;
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

/* The host CPUs a device computes on: its cpuset if its backend flags it a topology attribute. */
static const char *topology_cpuset(const hdal_device *d) {
  const char *k, *value;
  for (size_t i = 0; hdal_device_attribute(d, i, &k, &value); i++)
    if (!strcmp(k, HDAL_ATTRIBUTE_CPUSET)) return hdal_device_attribute_flags(d, i) & HDAL_ATTRIBUTE_TOPOLOGY ? value : NULL;
  return NULL;
}

/* The next range "a" or "a-b" of a list cpuset ("0-3,8"); false at its end or on a malformed list.
 * Ranges are compared as they stand, not through hwloc_bitmap_list_sscanf: a cpuset from a module or
 * another process's table may be as wide as it likes ("0-4294967295", a 512 MiB bitmap), and
 * comparing two lists of ranges needs no memory at all. */
static bool next_range(const char **p, unsigned long *lo, unsigned long *hi) {
  char *end;
  if (**p < '0' || **p > '9') return false;
  *lo = *hi = strtoul(*p, &end, 10);
  if (*end == '-') {
    if (end[1] < '0' || end[1] > '9') return false;
    *hi = strtoul(end + 1, &end, 10);
  }
  if (*end == ',') end++;
  else if (*end) return false;
  *p = end;
  return *lo <= *hi;
}

bool ls_cpusets_intersect(const char *a, const char *b) {
  unsigned long alo, ahi, blo, bhi;
  for (const char *p = a; next_range(&p, &alo, &ahi);)
    for (const char *q = b; next_range(&q, &blo, &bhi);)
      if (alo <= bhi && blo <= ahi) return true;
  return false;
}

/* ---- identity ---- */

const char *ls_identity(const hdal_device *d, const char **value, char *buf, size_t size) {
  static const char *const keys[] = {HDAL_ATTRIBUTE_UUID, HDAL_ATTRIBUTE_PCI_BUS_ID};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if ((*value = hdal_device_attribute_get(d, keys[i])) && **value) return keys[i];
  /* A device of the host's memory is its NUMA node, whatever its backend calls its platform. */
  if (host_cpu(d) && hdal_device_numa_node(d) >= 0) {
    snprintf(buf, size, "%d", hdal_device_numa_node(d));
    *value = buf;
    return "numa_node";
  }
  *value = NULL;
  return NULL;
}

static bool same_attribute(const hdal_device *a, const hdal_device *b, const char *key) {
  const char *x = hdal_device_attribute_get(a, key), *y = hdal_device_attribute_get(b, key);
  return x && y && *x && !strcasecmp(x, y); /* lspci prints hex in lower case, some runtimes in upper */
}

bool ls_same_hardware(const hdal_device *a, const hdal_device *b) {
  if (a == b || hdal_device_process_index(a) != hdal_device_process_index(b)) return false;
  if (same_attribute(a, b, HDAL_ATTRIBUTE_PCI_BUS_ID) || same_attribute(a, b, HDAL_ATTRIBUTE_UUID)) return true;
  /* Two devices of the host's memory are two NUMA nodes, even where their CPUs are the same (a node of
   * high-bandwidth memory beside one of DDR): different hardware. */
  if (host_cpu(a) && host_cpu(b)) return false;
  /* Devices that compute on the same host CPUs: a NUMA node's CPU device and PoCL's device. */
  const char *x = topology_cpuset(a), *y = topology_cpuset(b);
  return x && y && ls_cpusets_intersect(x, y);
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
