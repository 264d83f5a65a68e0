/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CPU backend — state shared by its discovery and buffer operations.
 *
 * A module linked in (docs/design.md, "Layout and data flow"). */
#ifndef HDAL_CPU_H
#define HDAL_CPU_H

#include <hwloc.h>
#include "../builtin.h"

typedef struct {
  hwloc_obj_t node; /* the NUMA node of this device */
} hdal__cpu_device;

typedef struct {
  const hdal_backend_host *host; /* the core's services, host memory's operations among them */
  hwloc_topology_t topology;
  hdal__cpu_device **devices; /* by local hardware id */
  size_t ndevices;
} hdal__cpu_state;

HDAL__HIDDEN extern const hdal_backend_buffer_ops hdal__cpu_buffer_ops;

#endif
