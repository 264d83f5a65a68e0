/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — which devices are the same hardware, and the hosts of the view
 * (ls.h).  The library works both out (lib/hardware.c, lib/host.c;
 * docs/reference.md, "Hosts and hardware"): the tool only asks and counts. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"

struct ls_hardware {
  hdal_context *ctx;
  int ids[LS_SAME_HARDWARE_SHOWN];
};

ls_hardware *ls_hardware_new(hdal_context *ctx) {
  /* The first question has the library work the links out: out of memory shows here, once. */
  size_t count;
  hdal_device *first = hdal_context_device(ctx, 0);
  hdal_error *e = first ? hdal_device_same_hardware(first, NULL, 0, &count) : NULL;
  if (e) {
    hdal_error_destroy(e);
    return NULL;
  }
  ls_hardware *hw = calloc(1, sizeof *hw);
  if (hw) hw->ctx = ctx;
  return hw;
}

void ls_hardware_free(ls_hardware *hw) { free(hw); }

size_t ls_hardware_same(ls_hardware *hw, size_t i, size_t *out, size_t max, size_t *shown) {
  size_t count = 0;
  if (max > LS_SAME_HARDWARE_SHOWN) max = LS_SAME_HARDWARE_SHOWN;
  /* Worked out already (ls_hardware_new): no error is left to meet. */
  hdal_error *e = hdal_device_same_hardware(hdal_context_device(hw->ctx, i), hw->ids, max, &count);
  hdal_error_destroy(e);
  if (e) count = 0;
  *shown = count < max ? count : max;
  for (size_t k = 0; k < *shown; k++) out[k] = (size_t)hw->ids[k]; /* ids are the devices' indices */
  return count;
}

/* ---- hosts ---- */

int ls_hosts_build(const ls_view *v, ls_hosts *out) {
  hdal_context *ctx = v->ctx;
  size_t n = hdal_context_device_count(ctx), nh = hdal_context_host_count(ctx);
  size_t pieces = hdal_context_hardware_count(ctx);
  *out = (ls_hosts){0};
  if (n && !pieces) return -1; /* out of memory working the links out */
  out->hosts = calloc(nh ? nh : 1, sizeof *out->hosts);
  out->processes = malloc((n ? n : 1) * sizeof *out->processes);
  bool *seen = calloc(pieces ? pieces : 1, sizeof *seen);
  int *last = malloc((nh ? nh : 1) * sizeof *last);
  if (!out->hosts || !out->processes || !seen || !last) {
    free(seen);
    free(last);
    ls_hosts_free(out);
    return -1;
  }
  out->nhosts = nh;
  /* Each host's processes, ascending (the table is by process): counted, then written. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t h = 0; h < nh; h++) last[h] = -1, out->hosts[h].nprocesses = 0;
    for (size_t i = 0; i < n; i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      int p = hdal_device_process_index(d), hi = hdal_device_host_index(d);
      ls_host *h = &out->hosts[hi];
      if (last[hi] == p) continue;
      last[hi] = p;
      if (pass) out->processes[h->first + h->nprocesses] = p;
      else if (!h->nprocesses) h->name = hdal_device_host(d);
      h->nprocesses++;
    }
    for (size_t h = 0, sum = 0; !pass && h < nh; h++) out->hosts[h].first = sum, sum += out->hosts[h].nprocesses;
  }
  /* The listed devices, and the pieces of hardware they are. */
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!ls_selected(v, d)) continue;
    ls_host *h = &out->hosts[hdal_device_host_index(d)];
    int piece = hdal_device_hardware_index(d);
    h->device_count++;
    out->device_count++;
    if (piece >= 0 && !seen[piece]) {
      seen[piece] = true;
      h->hardware_count++;
      out->hardware_count++;
    }
  }
  /* A name that does not tell its host alone: none, or another host's too. */
  for (size_t a = 0; a < nh; a++) {
    ls_host *h = &out->hosts[a];
    for (size_t b = 0; b < nh && !h->ambiguous; b++)
      h->ambiguous = !h->name || (b != a && out->hosts[b].name && !strcmp(h->name, out->hosts[b].name));
  }
  free(seen);
  free(last);
  return 0;
}

void ls_hosts_free(ls_hosts *hs) {
  free(hs->hosts);
  free(hs->processes);
  *hs = (ls_hosts){0};
}

void ls_host_label(const ls_hosts *hs, size_t index, char *buf, size_t size) {
  const ls_host *h = &hs->hosts[index];
  if (h->ambiguous) snprintf(buf, size, "%s#%zu", h->name ? h->name : "?", index);
  else snprintf(buf, size, "%s", h->name);
}

void ls_process_ranges(const ls_hosts *hs, size_t index, char *buf, size_t size) {
  const ls_host *h = &hs->hosts[index];
  const int *p = hs->processes + h->first;
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0, j; i < h->nprocesses && used < size; i = j) {
    for (j = i + 1; j < h->nprocesses && p[j] == p[j - 1] + 1; j++) {}
    int w = j - i > 1 ? snprintf(buf + used, size - used, "%s%d-%d", i ? "," : "", p[i], p[j - 1])
                      : snprintf(buf + used, size - used, "%s%d", i ? "," : "", p[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
}
