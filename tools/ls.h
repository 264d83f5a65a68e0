/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — what its outputs share: the devices to show and what the tool
 * derives from them (topology groups, identities, same hardware, backend
 * states).  docs/design.md ("hdal-ls") says why. */
#ifndef HDAL_LS_H
#define HDAL_LS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hdal.h>

/* Version of the --json document; a change that breaks a reader bumps it. */
enum { LS_JSON_FORMAT_VERSION = 1 };

typedef struct {
  const char *program;   /* for messages: "hdal-ls" */
  hdal_context *ctx;
  const char *platforms; /* comma-separated, as the backends spell them; NULL: every platform */
  bool topology;         /* --topology */
} ls_view;

bool ls_selected(const ls_view *v, const hdal_device *d);
const char *ls_dl_type_name(int type);
const char *ls_class_name(hdal_runtime_class c);
void ls_human_bytes(uint64_t b, char *buf, size_t size);

/* ---- topology: the CPU devices of this process are the NUMA nodes ---- */
const hdal_device *ls_numa_cpu_device(hdal_context *ctx, int node);
/* Is d shown under `key`?  key -1 is "no NUMA affinity" (any negative node). */
bool ls_in_group(const hdal_device *d, int key);
/* The groups to show: each NUMA node that a CPU device of this process or a
 * selected device names, ascending, then -1 when a selected device has no
 * node.  malloc'ed, *n entries; NULL when out of memory.  Never indexed or
 * sized by a node number, which a module chooses. */
int *ls_topology_groups(const ls_view *v, size_t *n);
/* Do two cpusets in hwloc's list format ("0-3,8") share a CPU?  False when either is malformed. */
bool ls_cpusets_intersect(const char *a, const char *b);

/* ---- identity ---- */
/* The most stable identity the backend gives: "uuid", "pci_bus_id", or
 * "numa_node" for CPU devices; NULL when none.  *value points into the device
 * or into buf. */
const char *ls_identity(const hdal_device *d, const char **value, char *buf, size_t size);
/* Are a and b (two devices) the same hardware, seen by two backends?  Same
 * process, and the same PCI bus id or UUID; or, unless both are devices of
 * the host's memory (kDLCPU: two NUMA nodes), topology cpusets
 * (HDAL_ATTRIBUTE_CPUSET flagged HDAL_ATTRIBUTE_TOPOLOGY) that intersect: a
 * NUMA node's CPU device and an OpenCL device on the host CPU (PoCL's). */
bool ls_same_hardware(const hdal_device *a, const hdal_device *b);

/* ---- backends ---- */
typedef struct {
  const char *state;    /* "ok", "unavailable", "disabled" */
  unsigned long long device_count;
  const char *reason;   /* points into the status; NULL: none */
  size_t reason_len;
} ls_backend_state;
void ls_backend_state_parse(const char *status, ls_backend_state *out);

/* ---- attributes: their types come from hdal_device_attribute_type() ---- */
bool ls_parse_uint(const char *s, unsigned long long *v);
bool ls_parse_bool(const char *s, bool *v);

/* ---- outputs: 0, or -1 when out of memory or hwloc fails (said on stderr) ---- */
int ls_print_table(const ls_view *v);
int ls_print_topology(const ls_view *v);
int ls_print_list(const ls_view *v);
int ls_print_json(const ls_view *v);
int ls_print_xml(const ls_view *v);

#endif
