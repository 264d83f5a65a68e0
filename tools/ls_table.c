/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — its device table and backend list, the one home of both: built
 * into hdal-ls and into the Python package's extension, which prints it for
 * `python3 -m hdal` (docs/python.md).  Every string from a driver, a module
 * or the environment is escaped (text.h). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"
#include "text.h"

/* HOST shows in a view of several processes only (the global view of hdal-ls-mpi): one process is one host. */
enum { NCOLS = 10, HOST = 2 };
static const char *const headers[NCOLS] = {"ID",    "PROC", "HOST",   "PLATFORM", "KIND",
                                           "CLASS", "ADDR", "MEMORY", "NUMA",     "DLPACK"};

/* The row's cells, escaped and malloc'ed; false when out of memory.  host: its label (ls_host_label). */
static bool device_cells(const hdal_device *d, const char *host, char *cells[NCOLS]) {
  DLDevice dl = hdal_device_dlpack_device(d);
  char raw[NCOLS][64];
  snprintf(raw[0], 64, "%d", hdal_device_id(d));
  snprintf(raw[1], 64, "%d", hdal_device_process_index(d));
  snprintf(raw[5], 64, "%s", hdal_runtime_class_name(hdal_device_runtime_class(d)));
  snprintf(raw[6], 64, "%s", hdal_device_is_addressable(d) ? "yes" : "no");
  ls_human_bytes(hdal_device_memory_bytes(d), raw[7], 64);
  if (hdal_device_numa_node(d) < 0) snprintf(raw[8], 64, "-");
  else snprintf(raw[8], 64, "%d", hdal_device_numa_node(d));
  snprintf(raw[9], 64, "%s:%d", ls_dl_type_name(dl.device_type), dl.device_id);
  bool ok = true;
  for (int c = 0; c < NCOLS; c++) {
    const char *text = c == HOST ? host : c == 3 ? hdal_device_platform(d) : c == 4 ? hdal_device_kind(d) : raw[c];
    ok &= (cells[c] = text_escape(text)) != NULL;
  }
  return ok;
}

static void cells_free(char *cells[NCOLS]) {
  for (int c = 0; c < NCOLS; c++) free(cells[c]), cells[c] = NULL;
}

static void print_row(FILE *out, char *const cells[NCOLS], const size_t width[NCOLS], bool hosts) {
  for (int c = 0; c + 1 < NCOLS; c++)
    if (c != HOST || hosts) fprintf(out, "%s%*s  ", cells[c], (int)(width[c] - text_width(cells[c])), "");
  fprintf(out, "%s\n", cells[NCOLS - 1]);
}

/* Each host's label (malloc'ed, labels[0 .. nhosts)), as it stands; false when out of memory. */
static bool host_labels(const ls_hosts *hs, char ***labels) {
  *labels = calloc(hs->nhosts ? hs->nhosts : 1, sizeof **labels);
  bool ok = *labels != NULL;
  for (size_t h = 0; ok && h < hs->nhosts; h++) {
    char label[LS_HOST_LABEL_MAX];
    ls_host_label(hs, h, label, sizeof label);
    ok = ((*labels)[h] = strdup(label)) != NULL;
  }
  return ok;
}

static void labels_free(char **labels, size_t n) {
  for (size_t h = 0; labels && h < n; h++) free(labels[h]);
  free(labels);
}

/* "Hosts:", one line each, and the job's count: the global view's summary.  false when out of memory. */
static bool print_hosts(FILE *out, const ls_hosts *hs, char *const *labels) {
  char **shown = calloc(hs->nhosts ? hs->nhosts : 1, sizeof *shown);
  size_t w = 0;
  bool ok = shown != NULL;
  for (size_t h = 0; ok && h < hs->nhosts; h++) {
    ok = (shown[h] = text_escape(labels[h])) != NULL;
    if (ok && text_width(shown[h]) > w) w = text_width(shown[h]);
  }
  if (ok) {
    fprintf(out, "\nHosts:\n");
    for (size_t h = 0; h < hs->nhosts; h++) {
      const ls_host *host = &hs->hosts[h];
      char procs[256];
      ls_process_ranges(hs, h, procs, sizeof procs);
      fprintf(out, "  %s%*s  process%s %s: %zu device%s, %zu distinct\n", shown[h], (int)(w - text_width(shown[h])),
              "", host->nprocesses == 1 ? "" : "es", procs, host->device_count, host->device_count == 1 ? "" : "s",
              host->hardware_count);
    }
    fprintf(out, "  %zu host%s: %zu device%s, %zu distinct\n", hs->nhosts, hs->nhosts == 1 ? "" : "s",
            hs->device_count, hs->device_count == 1 ? "" : "s", hs->hardware_count);
  }
  labels_free(shown, hs->nhosts);
  return ok;
}

/* "    (same hardware as device 3)": the marker of one physical device seen by several backends; past
 * LS_SAME_HARDWARE_SHOWN partners, "... and N more". */
static void print_same_hardware(FILE *out, const ls_view *v, ls_hardware *hw, size_t index) {
  size_t same[LS_SAME_HARDWARE_SHOWN], shown, n = ls_hardware_same(hw, index, same, LS_SAME_HARDWARE_SHOWN, &shown);
  if (!n) return;
  fprintf(out, "    (same hardware as device%s", n > 1 ? "s" : "");
  for (size_t i = 0; i < shown; i++) fprintf(out, "%s%d", i ? ", " : " ", hdal_device_id(hdal_context_device(v->ctx, same[i])));
  if (n > shown) fprintf(out, " and %zu more", n - shown);
  fprintf(out, ")\n");
}

int ls_print_table(const ls_view *v, FILE *out) {
  size_t n = hdal_context_device_count(v->ctx);
  bool hosts = hdal_context_process_count(v->ctx) > 1;
  ls_hosts hs = {0};
  char **labels = NULL;
  ls_hardware *hw = ls_hardware_new(v->ctx);
  if (!hw || (hosts && (ls_hosts_build(v, &hs) != 0 || !host_labels(&hs, &labels)))) {
    labels_free(labels, hs.nhosts);
    ls_hosts_free(&hs);
    ls_hardware_free(hw);
    return -1;
  }
  int rc = -1;
  size_t width[NCOLS];
  for (int c = 0; c < NCOLS; c++) width[c] = strlen(headers[c]);
  char *cells[NCOLS] = {NULL};
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    bool ok = device_cells(d, hosts ? labels[hdal_device_host_index(d)] : "", cells);
    for (int c = 0; ok && c < NCOLS; c++)
      if (text_width(cells[c]) > width[c]) width[c] = text_width(cells[c]);
    cells_free(cells);
    if (!ok) goto done;
  }
  print_row(out, (char *const *)headers, width, hosts);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    bool ok = device_cells(d, hosts ? labels[hdal_device_host_index(d)] : "", cells);
    if (ok) print_row(out, cells, width, hosts);
    cells_free(cells);
    if (!ok) goto done;
    if (hdal_device_runtime_class_reason(d)) {
      fprintf(out, "    (");
      text_print(out, hdal_device_runtime_class_reason(d));
      fprintf(out, ")\n");
    }
    print_same_hardware(out, v, hw, i);
  }
  if (!hosts || print_hosts(out, &hs, labels)) rc = 0;
done:
  labels_free(labels, hs.nhosts);
  ls_hosts_free(&hs);
  ls_hardware_free(hw);
  if (rc) return rc;
  fprintf(out, "\nBackends:\n");
  /* The statuses in one column: after the longest name, 8 at least.  A name
   * is letters, digits, '_' and '-' (what HDAL_BACKENDS accepts): escaping
   * leaves it as it is. */
  size_t name_width = 8;
  for (size_t i = 0; i < hdal_context_backend_count(v->ctx); i++) {
    size_t len = strlen(hdal_context_backend_name(v->ctx, i));
    if (len > name_width) name_width = len;
  }
  for (size_t i = 0; i < hdal_context_backend_count(v->ctx); i++) {
    char *name = text_escape(hdal_context_backend_name(v->ctx, i));
    fprintf(out, "  %-*s ", (int)name_width, name ? name : "?");
    text_print(out, hdal_context_backend_status(v->ctx, i));
    fprintf(out, "\n");
    free(name);
  }
  /* hdal-ls-mpi: each rank's binding (HDAL_CPU_BINDING, hdal_device_bind, the launcher's). */
  if (v->bindings) fprintf(out, "\nBindings:\n");
  for (size_t r = 0; v->bindings && r < v->nbindings; r++) {
    const ls_binding *b = &v->bindings[r];
    fprintf(out, "  rank %zu  CPUs %s  memory %s", r, b->cpuset ? b->cpuset : "?", b->memory ? b->memory : "?");
    if (b->numa_nodes) fprintf(out, " (NUMA nodes %s)", b->numa_nodes);
    fprintf(out, "\n");
  }
  return 0;
}
