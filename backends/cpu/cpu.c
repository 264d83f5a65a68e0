/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CPU backend — one device per NUMA node of the hwloc topology.
 *
 * Built into libhdal.  hwloc's own inputs (HWLOC_XMLFILE, HWLOC_SYNTHETIC) are
 * honoured; hwloc's GPU/OpenCL components are kept from running, since they
 * would initialise those runtimes inside this backend.  No I/O discovery here:
 * the CPU devices need none.
 */
#include "config.h"
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

static const char *cpu_model(hwloc_topology_t t, hwloc_obj_t numa) {
  /* The package above (or under) the node names the model; synthetic topologies have none. */
  hwloc_obj_t pkg = hwloc_get_next_obj_covering_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_PACKAGE, NULL);
  if (!pkg) pkg = hwloc_get_next_obj_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_PACKAGE, NULL);
  const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
  if (!model) model = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "CPUModel");
  return model;
}

static bool add_uint_attribute(const hdal_backend_host *host, hdal_device *d, const char *key, uint64_t v,
                               unsigned flags) {
  return host->add_attribute(d, &(const hdal_backend_attribute){key, HDAL_ATTRIBUTE_UINT | flags, {.uint = v}});
}

static hdal_error *add_node(const hdal_backend_host *host, hdal_backend_discovery *disc, hdal__cpu_state *s,
                            hwloc_obj_t numa) {
  hwloc_topology_t t = s->topology;
  const char *model = cpu_model(t, numa);
  char *kind = NULL, *cpuset = NULL;
  /* CPUModel strings often carry trailing blanks (cpuid pads them). */
  int len = model ? (int)strlen(model) : 0;
  while (len > 0 && model[len - 1] == ' ') len--;
  if (asprintf(&kind, "%.*s", len ? len : 3, len ? model : "cpu") < 0) kind = NULL;
  hdal__cpu_device *cd = calloc(1, sizeof *cd);
  if (!kind || !cd || hwloc_bitmap_list_asprintf(&cpuset, numa->cpuset) < 0) {
    free(kind);
    free(cd);
    return host->error_oom();
  }
  cd->node = numa;
  hdal_backend_device_info info = {
      .kind = kind,
      .local_hardware_id = (int)numa->logical_index,
      .dlpack_device = {kDLCPU, 0},
      .memory_bytes = numa->attr ? numa->attr->numanode.local_memory : 0,
      .numa_node = (int)numa->logical_index,
      .host_addressable = true,
      .data = cd,
  };
  hdal_device *d = host->add_device(disc, &info);
  bool ok = d != NULL;
  if (ok) s->devices[s->ndevices++] = cd;
  else free(cd);
  /* Where the node sits (HDAL_ATTRIBUTE_TOPOLOGY): hdal-ls shows these with the node. */
  ok = ok && add_uint_attribute(host, d, "cores",
                                (unsigned)hwloc_get_nbobjs_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_CORE),
                                HDAL_ATTRIBUTE_TOPOLOGY);
  ok = ok && add_uint_attribute(host, d, "pus",
                                (unsigned)hwloc_get_nbobjs_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_PU),
                                HDAL_ATTRIBUTE_TOPOLOGY);
  ok = ok && host->add_attribute(d, &(const hdal_backend_attribute){HDAL_ATTRIBUTE_CPUSET,
                                                                     HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY,
                                                                     {.string = cpuset}});
  ok = ok && add_uint_attribute(host, d, "numa_os_index", numa->os_index, 0);
  ok = ok && host->add_attribute(d, HDAL_BACKEND_MEMORY_BYTES("memory_bytes"));
  free(kind);
  free(cpuset);
  return ok ? NULL : host->error_oom();
}

static void cpu_finalize(void *state) {
  hdal__cpu_state *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->ndevices; i++) free(s->devices[i]);
  free(s->devices);
  if (s->topology) hwloc_topology_destroy(s->topology);
  free(s);
}

static hdal_error *cpu_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  hdal__cpu_state *s = calloc(1, sizeof *s);
  if (!s) return host->error_oom();
  s->host = host; /* libhdal's own table: host_buffer_ops is there */
  if (hwloc_topology_init(&s->topology) < 0) {
    free(s);
    return host->error_oom();
  }
  host->topology_restrict(s->topology); /* the built-in backend comes with this core: the field is there */
  /* hwloc either fails or falls back to this machine when HWLOC_XMLFILE or
   * HWLOC_SYNTHETIC cannot be used (which, depends on its XML plugin); a user
   * who named another machine must not silently get this one. */
  const char *xml = getenv("HWLOC_XMLFILE"), *synthetic = getenv("HWLOC_SYNTHETIC");
  const char *asked = xml && *xml ? "HWLOC_XMLFILE" : synthetic && *synthetic ? "HWLOC_SYNTHETIC" : NULL;
  bool loaded = hwloc_topology_load(s->topology) == 0;
  if (asked && (!loaded || (!getenv("HWLOC_THISSYSTEM") && hwloc_topology_is_thissystem(s->topology)))) {
    hdal_error *e = host->error_new(HDAL_INVALID_ARGUMENT, "hwloc could not use %s=%s (unreadable or malformed)",
                                    asked, !strcmp(asked, "HWLOC_XMLFILE") ? xml : synthetic);
    cpu_finalize(s);
    return e;
  }
  if (!loaded) {
    hdal_error *e = host->error_new(HDAL_UNAVAILABLE, "hwloc could not load this machine's topology");
    cpu_finalize(s);
    return e;
  }
  /* hwloc 2 always has at least one NUMA node: a machine without NUMA
   * information gets one node covering everything, hence one device. */
  int n = hwloc_get_nbobjs_by_type(s->topology, HWLOC_OBJ_NUMANODE);
  s->devices = calloc(n > 0 ? (size_t)n : 1, sizeof *s->devices);
  if (!s->devices) {
    cpu_finalize(s);
    return host->error_oom();
  }
  for (int i = 0; i < n; i++) {
    hdal_error *e = add_node(host, disc, s, hwloc_get_obj_by_type(s->topology, HWLOC_OBJ_NUMANODE, (unsigned)i));
    if (e) {
      cpu_finalize(s);
      return e;
    }
  }
  host->debug(disc, "hwloc topology: %d NUMA node(s)", n);
  *state = s;
  return NULL;
}

const hdal_backend hdal__cpu_backend = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "cpu",
    .platform = "cpu",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLCPU),
    .discover = cpu_discover,
    .finalize = cpu_finalize,
    .buffer_ops = &hdal__cpu_buffer_ops,
};
