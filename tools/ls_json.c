/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the --json document, format 1 (ls.h: LS_JSON_FORMAT_VERSION).
 * Every field is in the man page; hdal-ls.schema.json describes them for a
 * validator.  Later versions add fields; a change that breaks a reader bumps
 * format_version. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "ls.h"

/* Attribute i of d with the type its backend gave it: numbers and booleans as JSON numbers and booleans,
 * as the core read them (hdal_device_attribute_uint(), _bool()), every other attribute a string.  The core
 * keeps a value that does not read as its type as a string. */
static void attribute_json(json_writer *w, const hdal_device *d, size_t i) {
  const char *key, *value;
  uint64_t u;
  bool b;
  hdal_device_attribute(d, i, &key, &value);
  if (hdal_device_attribute_uint(d, i, &u)) json_uint(w, key, u);
  else if (hdal_device_attribute_bool(d, i, &b)) json_bool(w, key, b);
  else json_string(w, key, value);
}

/* The host of the printing process: its own devices' (the first addressable device's, selected or not); -1
 * when it has none. */
static int own_host_index(const hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_is_addressable(d)) return hdal_device_host_index(d);
  }
  return -1;
}

/* The CPUs and NUMA nodes nearest the device, and its PCIe root; null where hdal cannot say (a GPU
 * of another host, a GPU the topology does not know). */
static void locality_json(json_writer *w, const hdal_device *d) {
  hdal_locality loc;
  hdal_error *e = hdal_device_locality(d, &loc);
  if (e) {
    hdal_error_destroy(e);
    json_string(w, "locality", NULL);
    return;
  }
  json_open(w, "locality", '{');
  json_string(w, "cpuset", loc.cpuset);
  json_open(w, "numa_nodes", '[');
  for (size_t i = 0; i < loc.numa_node_count; i++) json_uint(w, NULL, loc.numa_nodes[i]);
  json_close(w, ']');
  json_string(w, "pcie_root", loc.pcie_root); /* "pci0000:00"; null when not known */
  json_close(w, '}');
}

static void device_json(json_writer *w, const ls_view *v, ls_hardware *hw, int own_host, size_t index) {
  const hdal_device *d = hdal_context_device(v->ctx, index);
  DLDevice dl = hdal_device_dlpack_device(d);
  json_open(w, NULL, '{');
  json_int(w, "id", hdal_device_id(d));
  json_int(w, "process_index", hdal_device_process_index(d));
  json_string(w, "host", hdal_device_host(d));
  json_int(w, "host_index", hdal_device_host_index(d));
  json_bool(w, "is_addressable", hdal_device_is_addressable(d));
  json_string(w, "platform", hdal_device_platform(d));
  json_string(w, "kind", hdal_device_kind(d));
  json_int(w, "local_hardware_id", hdal_device_local_hardware_id(d));
  json_string(w, "runtime_class", hdal_runtime_class_name(hdal_device_runtime_class(d)));
  json_string(w, "runtime_class_reason", hdal_device_runtime_class_reason(d));
  json_uint(w, "memory_bytes", hdal_device_memory_bytes(d));
  if (hdal_device_numa_node(d) >= 0) json_int(w, "numa_node", hdal_device_numa_node(d));
  else json_string(w, "numa_node", NULL);
  locality_json(w, d);
  json_open(w, "dlpack_device", '{');
  json_int(w, "device_type", dl.device_type);
  json_string(w, "device_type_name", ls_dl_type_name(dl.device_type));
  json_int(w, "device_id", dl.device_id);
  json_close(w, '}');
  char buf[16];
  const char *value, *type = ls_identity(d, &value, buf, sizeof buf);
  if (type) {
    json_open(w, "identity", '{');
    json_string(w, "type", type);
    json_string(w, "value", value);
    json_close(w, '}');
  } else json_string(w, "identity", NULL);
  size_t same[LS_SAME_HARDWARE_SHOWN], shown, count = ls_hardware_same(hw, index, same, LS_SAME_HARDWARE_SHOWN, &shown);
  json_open(w, "same_hardware_as", '[');
  for (size_t i = 0; i < shown; i++) json_int(w, NULL, hdal_device_id(hdal_context_device(v->ctx, same[i])));
  json_close(w, ']');
  json_uint(w, "same_hardware_count", count);
  json_int(w, "hardware_index", hdal_device_hardware_index(d));
  /* Nodes are read from this host's /proc, /sys and /dev (ls_nodes.c): only for the devices of this host's
   * processes.  Another host's GPU may have a bus id found here too, at another GPU's node. */
  static char nodes[LS_NODES_MAX][LS_NODE_MAX]; /* one writer at a time */
  size_t nn = own_host >= 0 && hdal_device_host_index(d) == own_host ? ls_device_nodes(d, nodes, LS_NODES_MAX) : 0;
  if (nn) {
    json_open(w, "device_nodes", '[');
    for (size_t i = 0; i < nn; i++) json_string(w, NULL, nodes[i]);
    json_close(w, ']');
  }
  json_open(w, "attributes", '{');
  for (size_t i = 0; i < hdal_device_attribute_count(d); i++) attribute_json(w, d, i);
  json_close(w, '}');
  json_close(w, '}');
}

/* Every unordered pair of the linked devices, a < b (hdal_device_link; docs/reference.md, "Links"), and where
 * locality and links came from: a file of another machine says so.  The source only where links were worked
 * out (a linked device listed): a CPU-only listing loads no topology with I/O objects for it. */
static int links_json(json_writer *w, const ls_view *v) {
  const hdal_device **ds;
  ptrdiff_t m = ls_linked_devices(v, &ds);
  if (m < 0) return -1;
  const char *detail;
  hdal_topology_source source = m ? hdal_context_topology_source(v->ctx, &detail) : HDAL_TOPOLOGY_UNAVAILABLE;
  if (m) {
    json_open(w, "topology_source", '{');
    json_string(w, "type", hdal_topology_source_name(source));
    json_string(w, "detail", detail);
    json_close(w, '}');
  } else json_string(w, "topology_source", NULL);
  if (m > LS_LINKED_MAX) {
    json_string(w, "links", NULL);
    free(ds);
    return 0;
  }
  json_open(w, "links", '[');
  for (ptrdiff_t i = 0; i < m; i++)
    for (ptrdiff_t j = i + 1; j < m; j++) {
      hdal_link l;
      hdal_error *e = hdal_device_link(ds[i], ds[j], &l);
      if (e) { /* out of memory: the pairs are of this process, on its host */
        hdal_error_destroy(e);
        free(ds);
        return -1;
      }
      json_open(w, NULL, '{');
      json_int(w, "a", hdal_device_id(ds[i]));
      json_int(w, "b", hdal_device_id(ds[j]));
      json_string(w, "kind", hdal_link_kind_name(l.kind));
      json_bool(w, "peer_access", l.peer_access);
      json_string(w, "fabric", l.fabric);
      if (l.bandwidth_mbps) json_uint(w, "bandwidth_mbps", l.bandwidth_mbps);
      else json_string(w, "bandwidth_mbps", NULL);
      if (l.fabric_links) json_uint(w, "fabric_links", l.fabric_links);
      else json_string(w, "fabric_links", NULL);
      json_close(w, '}');
    }
  json_close(w, ']');
  free(ds);
  return 0;
}

static int backend_json(json_writer *w, const ls_view *v, size_t i) {
  ls_backend_state st;
  if (!ls_backend_state_get(v->ctx, i, &st)) return -1;
  json_open(w, NULL, '{');
  json_string(w, "name", hdal_context_backend_name(v->ctx, i));
  json_string(w, "state", st.state);
  json_uint(w, "device_count", st.device_count);
  json_string(w, "reason", st.reason);
  json_string(w, "status", hdal_context_backend_status(v->ctx, i));
  json_close(w, '}');
  ls_backend_state_free(&st);
  return 0;
}

static int topology_json(json_writer *w, const ls_view *v) {
  ls_topology t;
  if (ls_topology_build(v, &t) != 0) return -1;
  json_open(w, "topology", '[');
  for (size_t g = 0; g < t.ngroups; g++) {
    const ls_group *group = &t.groups[g];
    json_open(w, NULL, '{');
    if (group->node >= 0) json_int(w, "numa_node", group->node);
    else json_string(w, "numa_node", NULL); /* the text's "no NUMA affinity" */
    json_open(w, "devices", '[');
    for (size_t i = 0; i < group->count; i++) json_int(w, NULL, hdal_device_id(t.devices[group->first + i]));
    json_close(w, ']');
    /* Where the node sits: its CPU device's topology attributes (HDAL_ATTRIBUTE_TOPOLOGY), in its order. */
    const hdal_device *cpu = group->cpu;
    for (size_t i = 0; cpu && i < hdal_device_attribute_count(cpu); i++)
      if (hdal_device_attribute_flags(cpu, i) & HDAL_ATTRIBUTE_TOPOLOGY) attribute_json(w, cpu, i);
    json_close(w, '}');
  }
  json_close(w, ']');
  ls_topology_free(&t);
  return 0;
}

/* The hosts of the view, by host index, with the listed devices counted. */
static void hosts_json(json_writer *w, const ls_hosts *hs) {
  json_open(w, "hosts", '[');
  for (size_t h = 0; h < hs->nhosts; h++) {
    const ls_host *host = &hs->hosts[h];
    json_open(w, NULL, '{');
    json_int(w, "host_index", (long long)h);
    json_string(w, "host", host->name);
    json_open(w, "processes", '[');
    for (size_t i = 0; i < host->nprocesses; i++) json_int(w, NULL, hs->processes[host->first + i]);
    json_close(w, ']');
    json_uint(w, "device_count", host->device_count);
    json_uint(w, "hardware_count", host->hardware_count);
    json_close(w, '}');
  }
  json_close(w, ']');
}

int ls_print_json(const ls_view *v) {
  ls_hosts hs;
  ls_hardware *hw = ls_hardware_new(v->ctx);
  if (!hw || ls_hosts_build(v, &hs) != 0) {
    ls_hardware_free(hw);
    return -1;
  }
  json_writer w;
  json_begin(&w, stdout);
  json_int(&w, "format_version", LS_JSON_FORMAT_VERSION);
  json_string(&w, "hdal_version", hdal_version_string());
  json_int(&w, "process_index", hdal_context_process_index(v->ctx));
  json_int(&w, "process_count", hdal_context_process_count(v->ctx));
  json_uint(&w, "host_count", hs.nhosts);
  json_uint(&w, "hardware_count", hs.hardware_count);
  int own_host = own_host_index(v->ctx);
  json_open(&w, "devices", '[');
  for (size_t i = 0; i < hdal_context_device_count(v->ctx); i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (ls_selected(v, d)) device_json(&w, v, hw, own_host, i);
  }
  json_close(&w, ']');
  hosts_json(&w, &hs);
  ls_hosts_free(&hs);
  if (links_json(&w, v) != 0) {
    ls_hardware_free(hw);
    json_end(&w);
    return -1;
  }
  if (v->bindings) { /* hdal-ls-mpi: each rank's binding, by rank */
    json_open(&w, "bindings", '[');
    for (size_t r = 0; r < v->nbindings; r++) {
      json_open(&w, NULL, '{');
      json_uint(&w, "rank", r);
      json_string(&w, "cpuset", v->bindings[r].cpuset);
      json_string(&w, "memory", v->bindings[r].memory);
      json_string(&w, "numa_nodes", v->bindings[r].numa_nodes);
      json_close(&w, '}');
    }
    json_close(&w, ']');
  }
  json_open(&w, "backends", '[');
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < hdal_context_backend_count(v->ctx); i++) rc = backend_json(&w, v, i);
  json_close(&w, ']');
  if (rc == 0 && v->topology) rc = topology_json(&w, v);
  ls_hardware_free(hw);
  if (json_end(&w) != 0) return -1;
  return rc;
}
