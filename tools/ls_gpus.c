/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the GPUs of this node as schedulers and container runtimes count
 * them (--of gres, cdi, nfd): one per PCI bus id however many backends see it,
 * in bus id order (the order of Slurm's own autodetection), the vendor's own
 * runtime standing for the group (it describes its GPU best). */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"

static int by_bus(const void *a, const void *b) {
  const ls_gpu *x = a, *y = b;
  int c = strcmp(x->bus, y->bus);
  return c ? c : hdal_device_id(x->d) - hdal_device_id(y->d);
}

/* A runtime of one vendor's GPUs (hdal_device_runtime_vendor()) describes its GPU best. */
static bool vendor_runtime(const hdal_device *d) { return hdal_device_runtime_vendor(d) != 0; }

ptrdiff_t ls_gpus(const ls_view *v, ls_gpu **out) {
  size_t n = hdal_context_device_count(v->ctx), k = 0;
  ls_gpu *g = calloc(n ? n : 1, sizeof *g);
  *out = g;
  if (!g) return -1;
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    const char *pci = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
    if (!ls_selected(v, d) || !hdal_device_is_addressable(d) || ls_host_memory(d)) continue;
    const char *type = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_DEVICE_TYPE);
    if (type && !strcmp(type, "cpu")) continue;
    if (!pci) {
      /* No bus id, so no node and no way to tell it from another backend's view of it. */
      fprintf(stderr, "%s: GPU (device %d) has no PCI bus id: left out\n", v->program, hdal_device_id(d));
      continue;
    }
    g[k] = (ls_gpu){.d = d, .vendor = ls_vendor_of(d), .numa = hdal_device_numa_node(d)};
    snprintf(g[k].bus, sizeof g[k].bus, "%s", pci);
    for (char *p = g[k].bus; *p; p++) *p = (char)tolower((unsigned char)*p);
    k++;
  }
  qsort(g, k, sizeof *g, by_bus);
  /* One entry per bus id: the vendor runtime's device, with the first NUMA node any of them knows. */
  size_t m = 0;
  for (size_t i = 0; i < k;) {
    size_t end = i + 1, best = i;
    while (end < k && !strcmp(g[end].bus, g[i].bus)) end++;
    int numa = -1;
    for (size_t j = i; j < end; j++) {
      if (vendor_runtime(g[j].d) && !vendor_runtime(g[best].d)) best = j;
      if (numa < 0) numa = g[j].numa;
    }
    g[m] = g[best];
    g[m++].numa = numa;
    i = end;
  }
  return (ptrdiff_t)m;
}

void ls_model_word(const char *kind, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = kind; *p && n + 1 < size; p++) {
    unsigned char c = (unsigned char)*p;
    if (isalnum(c) && c < 0x80) out[n++] = (char)tolower(c);
    else if (n && out[n - 1] != '_') out[n++] = '_';
  }
  while (n && out[n - 1] == '_') n--;
  if (!n) snprintf(out, size, "gpu");
  else out[n] = '\0';
}
