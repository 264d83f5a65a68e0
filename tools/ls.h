/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — what its outputs share: the devices to show and what the tool
 * derives from them (topology groups, identities, same hardware, backend
 * states).  docs/design.md ("hdal-ls") says why. */
#ifndef HDAL_LS_H
#define HDAL_LS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <hdal.h>

/* Version of the --json document; a change that breaks a reader bumps it. */
enum { LS_JSON_FORMAT_VERSION = 1 };

/* hdal-ls-mpi: how one rank is bound (ls_mpi.h, docs/reference.md "Binding"), as the kernel says. */
typedef struct {
  char *cpuset;     /* its main thread's CPUs (sched_getaffinity), as hwloc_bitmap_snprintf writes them; NULL: not known */
  char *memory;     /* its memory policy (get_mempolicy): "default", "bind", "interleave", ...; NULL: not known */
  char *numa_nodes; /* the policy's NUMA nodes, a list ("0-1"); NULL: none, or not known */
} ls_binding;

typedef struct {
  const char *program;   /* for messages: "hdal-ls" */
  hdal_context *ctx;
  const char *platforms; /* comma-separated, as the backends spell them; NULL: every platform */
  bool topology;         /* --topology */
  const ls_binding *bindings; /* hdal-ls-mpi: each rank's, by rank (nbindings of them); NULL: hdal-ls */
  size_t nbindings;
} ls_view;

bool ls_selected(const ls_view *v, const hdal_device *d);
/* A device of the host's own memory: what its backend routes kDLCPU tensors
 * to, whatever the backend is called. */
bool ls_host_memory(const hdal_device *d);
const char *ls_dl_type_name(int type);
void ls_human_bytes(uint64_t b, char *buf, size_t size);

/* ---- topology: the CPU devices of this process are the NUMA nodes ---- */
/* A group of --topology: a NUMA node that a CPU device of this process or a
 * selected device names, or -1 ("no NUMA affinity": the selected devices
 * without a node). */
typedef struct {
  int node;
  const hdal_device *cpu; /* the node's CPU device of this process; NULL: none */
  size_t first, count;    /* its selected devices: devices[first .. first + count), in id order */
} ls_group;
typedef struct {
  ls_group *groups; /* ascending by node, then -1 */
  size_t ngroups;
  const hdal_device **devices;
} ls_topology;
/* Built with one sort, never indexed or sized by a node number, which a module
 * chooses.  0, or -1 when out of memory. */
int ls_topology_build(const ls_view *v, ls_topology *t);
void ls_topology_free(ls_topology *t);

/* ---- identity ---- */
/* The most stable identity the backend gives: "uuid", "pci_bus_id", or
 * "numa_node" for CPU devices; NULL when none.  *value points into the device
 * or into buf. */
const char *ls_identity(const hdal_device *d, const char **value, char *buf, size_t size);

/* ---- same hardware (ls_hardware.c): one piece of hardware seen by several backends or processes ---- */
/* How many of a device's partners the outputs name; they give the count too. */
enum { LS_SAME_HARDWARE_SHOWN = 32 };
typedef struct ls_hardware ls_hardware;
/* The library's links (hdal_device_same_hardware(), worked out once for the
 * context: docs/reference.md, "Hosts and hardware").  NULL when out of memory. */
ls_hardware *ls_hardware_new(hdal_context *ctx);
void ls_hardware_free(ls_hardware *hw);
/* How many devices the device of index i is the same hardware as; the smallest
 * `max` of their indices, ascending, in out[0 .. *shown). */
size_t ls_hardware_same(ls_hardware *hw, size_t i, size_t *out, size_t max, size_t *shown);

/* ---- hosts (ls_hardware.c): the hosts of the context, with the listed devices counted ---- */
typedef struct {
  const char *name;     /* hdal_device_host(); NULL: not known */
  bool ambiguous;       /* the name does not tell the host alone (none, or another host's too) */
  size_t first, nprocesses; /* its processes: processes[first .. first + nprocesses), ascending */
  size_t device_count;  /* its listed devices */
  size_t hardware_count; /* the pieces of hardware they are (hdal_device_hardware_index()) */
} ls_host;
typedef struct {
  ls_host *hosts; /* by host index */
  size_t nhosts;
  int *processes;
  size_t device_count, hardware_count; /* of every host */
} ls_hosts;
/* 0, or -1 when out of memory. */
int ls_hosts_build(const ls_view *v, ls_hosts *out);
void ls_hosts_free(ls_hosts *hs);
enum { LS_HOST_LABEL_MAX = 300 }; /* a name of 255 bytes, '#' and an index */
/* What names host `index` to people: its name, with "#INDEX" when the name is ambiguous ("?" for none). */
void ls_host_label(const ls_hosts *hs, size_t index, char *buf, size_t size);
/* Its processes as ranges: "0-3,8". */
void ls_process_ranges(const ls_hosts *hs, size_t index, char *buf, size_t size);

/* ---- backends: their states from hdal_context_backend_state(), never from the status text ---- */
typedef struct {
  const char *state; /* hdal_backend_state_name()'s word */
  size_t device_count;
  char *reason;      /* the JSON's reason (--json in hdal-ls.1); NULL: none */
} ls_backend_state;
/* Backend i's state; false when out of memory (or i is out of range). */
bool ls_backend_state_get(const hdal_context *ctx, size_t i, ls_backend_state *out);
void ls_backend_state_free(ls_backend_state *st);

/* Attributes: their types from hdal_device_attribute_type(), their numbers and
 * booleans from hdal_device_attribute_uint() and hdal_device_attribute_bool(). */

/* ---- outputs: 0, or -1 when out of memory or hwloc fails (said on stderr) ---- */
int ls_print_table(const ls_view *v, FILE *out); /* ls_table.c; also python/table.c's */
int ls_print_topology(const ls_view *v);
/* ---- links (ls_links.c) ---- */
/* The devices the view's links join, in id order (*out malloc'ed, free it): the printing process's
 * listed devices that are not host CPUs.  Their count, or -1 when out of memory. */
ptrdiff_t ls_linked_devices(const ls_view *v, const hdal_device ***out);
/* Links are every pair's: past this many linked devices (32,640 pairs) --json's "links" is null and
 * --topology draws no matrix, so that a listing stays linear in its devices (hdal-ls(1)). */
enum { LS_LINKED_MAX = 256 };
/* --topology's matrix of the linked devices, labelled as nvidia-smi topo -m labels it, with its legend. */
int ls_print_links(const ls_view *v);
int ls_print_list(const ls_view *v);
int ls_print_json(const ls_view *v);
int ls_print_xml(const ls_view *v);

/* ---- device nodes (ls_nodes.c) and --of gres (ls_gres.c) ---- */
typedef enum { LS_VENDOR_NONE, LS_VENDOR_NVIDIA, LS_VENDOR_AMD, LS_VENDOR_INTEL, LS_VENDOR_OTHER } ls_gpu_vendor;
enum { LS_NODE_MAX = 4200, LS_NODES_MAX = 3 };
/* The PCI vendor of the device (sysfs, under HDAL_FSROOT; without sysfs, its
 * vendor runtime's: CUDA, ROCm, Level Zero); NONE when neither says. */
ls_gpu_vendor ls_vendor_of(const hdal_device *d);
/* The device's nodes in /dev (under HDAL_FSROOT), the device's own first; their count (0: none known). */
size_t ls_device_nodes(const hdal_device *d, char nodes[][LS_NODE_MAX], size_t max);
/* Why ls_device_nodes() finds no node for d, for a warning: "no render node in ...". */
void ls_no_node_reason(const hdal_device *d, char *why, size_t size);
/* The root under which /sys, /proc and /dev are read: HDAL_FSROOT, or "". */
const char *ls_fsroot(void);

/* ---- the GPUs of this node (ls_gpus.c): --of gres, cdi, nfd ---- */
typedef struct {
  const hdal_device *d; /* the one standing for the GPU: its vendor runtime's, if it has one */
  ls_gpu_vendor vendor;
  int numa;     /* the first NUMA node any of its devices names; -1: none */
  char bus[16]; /* PCI bus id, lower case */
} ls_gpu;
/* The selected addressable GPUs, one per PCI bus id in bus id order, a GPU
 * of unknown vendor included (it has no node: the outputs say so); a GPU
 * without a PCI bus id is named on stderr.  Their count and *out (malloc'ed,
 * free it), or -1 when out of memory. */
ptrdiff_t ls_gpus(const ls_view *v, ls_gpu **out);
/* A model as one word: lower case ASCII letters and digits, '_' between words ("gpu" if none). */
void ls_model_word(const char *kind, char *out, size_t size);

/* Slurm gres.conf lines for the GPUs of this process, one per PCI bus id. */
int ls_print_gres(const ls_view *v);
/* A CDI spec (Container Device Interface) for them. */
int ls_print_cdi(const ls_view *v);
/* Node Feature Discovery features of every platform. */
int ls_print_nfd(const ls_view *v);

/* ---- --query (ls_csv.c) ---- */
enum { LS_QUERY_MAX = 64 };
typedef struct {
  size_t fields[LS_QUERY_MAX], n;
  bool header, units; /* --format=csv without noheader / nounits */
} ls_query;
/* 0; 1 with the unknown field in *bad (malloc'ed); -1 out of memory. */
int ls_query_parse(const char *list, ls_query *q, char **bad);
/* Whether format reads csv[,noheader][,nounits]; sets q's header and units. */
bool ls_query_format(const char *format, ls_query *q);
void ls_query_help(FILE *out);
/* The known fields, ", "-separated, for messages. */
void ls_query_field_names(char *buf, size_t size);
int ls_print_csv(const ls_view *v, const ls_query *q);

#endif
