/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the outputs for people besides the table (ls_table.c): --topology and --list.  Every
 * string from a driver, a module or the environment is escaped (text.h). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"
#include "text.h"

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
