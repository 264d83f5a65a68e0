/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the outputs for people: the table, --topology and --list.  Every
 * string from a driver, a module or the environment is escaped (text.h). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"
#include "text.h"

/* ---- table ---- */

enum { NCOLS = 9 };
static const char *const headers[NCOLS] = {"ID", "PROC", "PLATFORM", "KIND", "CLASS", "ADDR", "MEMORY", "NUMA", "DLPACK"};

/* The row's cells, escaped and malloc'ed; false when out of memory. */
static bool device_cells(const hdal_device *d, char *cells[NCOLS]) {
  DLDevice dl = hdal_device_dlpack_device(d);
  char raw[NCOLS][64];
  snprintf(raw[0], 64, "%d", hdal_device_id(d));
  snprintf(raw[1], 64, "%d", hdal_device_process_index(d));
  snprintf(raw[4], 64, "%s", hdal_runtime_class_name(hdal_device_runtime_class(d)));
  snprintf(raw[5], 64, "%s", hdal_device_is_addressable(d) ? "yes" : "no");
  ls_human_bytes(hdal_device_memory_bytes(d), raw[6], 64);
  if (hdal_device_numa_node(d) < 0) snprintf(raw[7], 64, "-");
  else snprintf(raw[7], 64, "%d", hdal_device_numa_node(d));
  snprintf(raw[8], 64, "%s:%d", ls_dl_type_name(dl.device_type), dl.device_id);
  bool ok = true;
  for (int c = 0; c < NCOLS; c++) {
    const char *text = c == 2 ? hdal_device_platform(d) : c == 3 ? hdal_device_kind(d) : raw[c];
    ok &= (cells[c] = text_escape(text)) != NULL;
  }
  return ok;
}

static void cells_free(char *cells[NCOLS]) {
  for (int c = 0; c < NCOLS; c++) free(cells[c]), cells[c] = NULL;
}

static void print_row(char *const cells[NCOLS], const size_t width[NCOLS]) {
  for (int c = 0; c + 1 < NCOLS; c++) printf("%s%*s  ", cells[c], (int)(width[c] - text_width(cells[c])), "");
  printf("%s\n", cells[NCOLS - 1]);
}

/* "    (same hardware as device 3)": the marker of one physical device seen by several backends; past
 * LS_SAME_HARDWARE_SHOWN partners, "... and N more". */
static void print_same_hardware(const ls_view *v, ls_hardware *hw, size_t index) {
  size_t same[LS_SAME_HARDWARE_SHOWN], shown, n = ls_hardware_same(hw, index, same, LS_SAME_HARDWARE_SHOWN, &shown);
  if (!n) return;
  printf("    (same hardware as device%s", n > 1 ? "s" : "");
  for (size_t i = 0; i < shown; i++) printf("%s%d", i ? ", " : " ", hdal_device_id(hdal_context_device(v->ctx, same[i])));
  if (n > shown) printf(" and %zu more", n - shown);
  printf(")\n");
}

int ls_print_table(const ls_view *v) {
  size_t n = hdal_context_device_count(v->ctx);
  ls_hardware *hw = ls_hardware_new(v->ctx);
  if (!hw) return -1;
  size_t width[NCOLS];
  for (int c = 0; c < NCOLS; c++) width[c] = strlen(headers[c]);
  char *cells[NCOLS] = {NULL};
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    bool ok = device_cells(d, cells);
    for (int c = 0; ok && c < NCOLS; c++)
      if (text_width(cells[c]) > width[c]) width[c] = text_width(cells[c]);
    cells_free(cells);
    if (!ok) return ls_hardware_free(hw), -1;
  }
  print_row((char *const *)headers, width);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    bool ok = device_cells(d, cells);
    if (ok) print_row(cells, width);
    cells_free(cells);
    if (!ok) return ls_hardware_free(hw), -1;
    if (hdal_device_runtime_class_reason(d)) {
      printf("    (");
      text_print(stdout, hdal_device_runtime_class_reason(d));
      printf(")\n");
    }
    print_same_hardware(v, hw, i);
  }
  ls_hardware_free(hw);
  printf("\nBackends:\n");
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
    printf("  %-*s ", (int)name_width, name ? name : "?");
    text_print(stdout, hdal_context_backend_status(v->ctx, i));
    printf("\n");
    free(name);
  }
  return 0;
}

/* ---- topology ---- */

/* How people read the topology attributes of hdal's CPU backend, in this order: "cpuset 0-3, 2 cores,
 * 4 PUs".  The one place hdal-ls names attribute keys, for wording only; other topology attributes
 * (HDAL_ATTRIBUTE_TOPOLOGY) follow as "key value". */
static const struct {
  const char *key, *before, *after;
} topology_wording[] = {{HDAL_ATTRIBUTE_CPUSET, "cpuset ", ""}, {"cores", "", " cores"}, {"pus", "", " PUs"}};

enum { NWORDED = sizeof topology_wording / sizeof *topology_wording };

/* The key's entry in topology_wording; NWORDED when it has none. */
static size_t worded(const char *key) {
  size_t w = 0;
  while (w < NWORDED && strcmp(key, topology_wording[w].key)) w++;
  return w;
}

/* ": cpuset 0-1, 2 cores, 2 PUs" of a NUMA node's CPU device: the worded attributes in the table's
 * order, then the others in the device's. */
static void print_topology_attributes(const hdal_device *cpu) {
  const char *sep = ": ", *key, *value;
  for (size_t w = 0; w <= NWORDED; w++)
    for (size_t i = 0; hdal_device_attribute(cpu, i, &key, &value); i++) {
      if (!(hdal_device_attribute_flags(cpu, i) & HDAL_ATTRIBUTE_TOPOLOGY) || worded(key) != w) continue;
      printf("%s", sep), sep = ", ";
      if (w < NWORDED) printf("%s", topology_wording[w].before);
      else text_print(stdout, key), printf(" ");
      text_print(stdout, value);
      if (w < NWORDED) printf("%s", topology_wording[w].after);
    }
}

int ls_print_topology(const ls_view *v) {
  ls_topology t;
  if (ls_topology_build(v, &t) != 0) return -1;
  printf("\nTopology:\n");
  for (size_t g = 0; g < t.ngroups; g++) {
    const ls_group *group = &t.groups[g];
    if (group->node < 0) printf("  no NUMA affinity\n");
    else {
      printf("  NUMA node %d", group->node);
      if (group->cpu) print_topology_attributes(group->cpu);
      printf("\n");
    }
    for (size_t i = 0; i < group->count; i++) {
      const hdal_device *d = t.devices[group->first + i];
      printf("    device %d: ", hdal_device_id(d));
      text_print(stdout, hdal_device_platform(d));
      printf(" ");
      text_print(stdout, hdal_device_kind(d));
      printf("\n");
    }
  }
  ls_topology_free(&t);
  return 0;
}

/* ---- --list: one line per device, as nvidia-smi -L ----
 *   Device 0: cpu AMD EPYC (pjrt, kDLCPU:0, NUMA node 0)
 *   Device 2: cuda NVIDIA H200 (pjrt, kDLCUDA:0, UUID GPU-...) */

int ls_print_list(const ls_view *v) {
  for (size_t i = 0; i < hdal_context_device_count(v->ctx); i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    DLDevice dl = hdal_device_dlpack_device(d);
    printf("Device %d: ", hdal_device_id(d));
    text_print(stdout, hdal_device_platform(d));
    printf(" ");
    text_print(stdout, hdal_device_kind(d));
    printf(" (%s, %s:%d", hdal_runtime_class_name(hdal_device_runtime_class(d)), ls_dl_type_name(dl.device_type), dl.device_id);
    char buf[16];
    const char *value, *type = ls_identity(d, &value, buf, sizeof buf);
    if (type) {
      printf(", %s ", !strcmp(type, HDAL_ATTRIBUTE_UUID) ? "UUID" : !strcmp(type, HDAL_ATTRIBUTE_PCI_BUS_ID) ? "PCI" : "NUMA node");
      text_print(stdout, value);
    }
    if (!hdal_device_is_addressable(d)) printf(", process %d", hdal_device_process_index(d));
    printf(")\n");
  }
  return 0;
}
