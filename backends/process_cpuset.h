/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — the cpuset of a module's CPU device (one that computes on the host's
 * processors, without a PCI bus id).  Header-only: the OpenCL and Vulkan
 * modules each compile it in, since a module calls nothing of the core's by
 * name (docs/backend-abi.md). */
#ifndef HDAL_PROCESS_CPUSET_H
#define HDAL_PROCESS_CPUSET_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* The CPUs this process may run on, in hwloc's list format ("0-3,8"), as the CPU backend writes a
 * NUMA node's: where a CPU device without a PCI bus id (PoCL's, Intel's CPU runtime, Mesa's lavapipe)
 * runs its work, since its threads inherit this affinity.  *list NULL when unknown; false when out of memory. */
static inline bool hdal__process_cpuset(char **list) {
  *list = NULL;
  for (int ncpus = 1024; ncpus <= 1 << 22; ncpus *= 8) {
    cpu_set_t *set = CPU_ALLOC(ncpus);
    if (!set) return false;
    size_t size = CPU_ALLOC_SIZE(ncpus), len = 0;
    if (sched_getaffinity(0, size, set) != 0) {
      CPU_FREE(set);
      if (errno == EINVAL) continue; /* more CPUs than the set holds */
      return true;
    }
    FILE *f = open_memstream(list, &len);
    const char *sep = "";
    for (int i = 0; f && i < ncpus; i++) {
      if (!CPU_ISSET_S(i, size, set)) continue;
      int last = i;
      while (last + 1 < ncpus && CPU_ISSET_S(last + 1, size, set)) last++;
      if (last > i) fprintf(f, "%s%d-%d", sep, i, last);
      else fprintf(f, "%s%d", sep, i);
      sep = ",";
      i = last;
    }
    CPU_FREE(set);
    bool bad = !f || ferror(f); /* a write that ran out of memory */
    if (f && fclose(f) != 0) bad = true;
    if (bad) {
      if (f) free(*list);
      *list = NULL;
      return false;
    }
    if (!**list) free(*list), *list = NULL; /* an empty affinity: unknown */
    return true;
  }
  return true;
}

#endif
