/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal OpenCL backend — what must hold before the runtimes are started.
 *
 * PoCL's CPU devices size their memory from hwloc's topology, the one hwloc
 * loads in this process, so HWLOC_XMLFILE and HWLOC_SYNTHETIC reach them too,
 * and from the data size limit.  When that leaves them under 128 MiB, PoCL
 * calls abort() inside clGetPlatformIDs ("Not enough memory to run on this
 * device."), and nothing in the process survives it.  The ICD loader starts
 * every vendor in that one call, so no platform can be asked about alone: the
 * backend is left out before it, with the reason (docs/opencl.md, "Runtimes
 * that abort").
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <hwloc.h>
#include "opencl.h"

/* OpenCL's least CL_DEVICE_MAX_MEM_ALLOC_SIZE, which PoCL demands of the whole device. */
#define POCL_LEAST_MEMORY (UINT64_C(128) << 20)

/* The memory PoCL's CPU devices keep of a topology's total: three quarters
 * (the total less its quarter rounded down), or all but 2 GiB above 7 GiB. */
static uint64_t pocl_share(uint64_t total) {
  return total >> 20 > UINT64_C(7) << 10 ? total - (UINT64_C(1) << 31) : total - total / 4;
}

/* The least total that pocl_share() keeps POCL_LEAST_MEMORY of: T - T/4 is 3T/4 rounded up. */
static uint64_t least_total(void) { return (POCL_LEAST_MEMORY * 4 - 4) / 3 + 1; }

/* The hwloc variables that give hwloc a machine other than the live one. */
static const char *const topology_inputs[] = {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT", "HWLOC_COMPONENTS"};

/* The memory of the topology hwloc loads here, as PoCL loads it; false when
 * none of topology_inputs is set (this machine's memory is what the kernel
 * reports, never that small) or hwloc cannot load it.  `names` gets the
 * variables set, for the message. */
static bool topology_memory(const hdal_backend_host *host, char *names, size_t size, uint64_t *total) {
  names[0] = '\0';
  for (size_t i = 0; i < sizeof topology_inputs / sizeof topology_inputs[0]; i++) {
    /* getenv, as hwloc reads them (PoCL honours them in setuid programs too). */
    const char *v = getenv(topology_inputs[i]);
    if (!v || !*v) continue;
    size_t len = strlen(names);
    snprintf(names + len, size - len, "%s%s", len ? " and " : "", topology_inputs[i]);
  }
  if (!names[0]) return false;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return false;
  /* The components that would start GPU or OpenCL runtimes stay off (PoCL among them). */
  host->topology_restrict(t);
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  bool ok = hwloc_topology_load(t) == 0;
  if (ok) *total = hwloc_get_root_obj(t)->total_memory;
  hwloc_topology_destroy(t);
  return ok;
}

hdal_error *hdal__ocl_preflight(const hdal_backend_host *host, hdal_backend_discovery *disc) {
  char names[96];
  uint64_t total = 0;
  if (topology_memory(host, names, sizeof names, &total)) {
    host->debug(disc, "the hwloc topology of %s has %" PRIu64 " bytes of memory", names, total);
    if (pocl_share(total) < POCL_LEAST_MEMORY)
      return host->error_new(HDAL_FAILED_PRECONDITION,
                             "the hwloc topology of %s has %" PRIu64 " bytes of memory: PoCL reads the same "
                             "topology and would abort the process (it needs %" PRIu64 " bytes)",
                             names, total, least_total());
  }
  struct rlimit data;
  if (getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur < POCL_LEAST_MEMORY) /* RLIM_INFINITY is above */
    return host->error_new(HDAL_FAILED_PRECONDITION,
                           "the data size limit (RLIMIT_DATA) is %" PRIu64 " bytes: PoCL would abort the "
                           "process (it needs %" PRIu64 " bytes)",
                           (uint64_t)data.rlim_cur, POCL_LEAST_MEMORY);
  return NULL;
}
