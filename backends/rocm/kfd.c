/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — the XGMI links between AMD GPUs, as the amdgpu kernel
 * driver's KFD topology says them (docs/rocm.md, "Links"), for
 * hdal_device_link(): a live machine's hwloc leaves out its rsmi component,
 * whose XGMIBandwidth matrix would say the same (docs/hwloc.md).
 *
 *   /sys/class/kfd/kfd/topology/nodes/<n>/properties   "domain <d>", "location_id <(bus << 8) | (slot << 3) | fn>"
 *   /sys/class/kfd/kfd/topology/nodes/<n>/io_links/<k>/properties
 *                                                       "type 11" (XGMI), "node_to <m>", "max_bandwidth <MB/s>"
 * Under HDAL_FSROOT, where tests put a machine's tree.  Read on each call: a
 * handful of small files, asked by hdal_device_link() alone. */
#include "config.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rocm.h"

enum { KFD_IOLINK_XGMI = 11 };

#define TOPOLOGY "/sys/class/kfd/kfd/topology/nodes"

/* The value of `key` in a KFD properties file ("key value" lines); false when absent or unreadable. */
static bool property(const char *path, const char *key, unsigned long long *value) {
  FILE *f = fopen(path, "re");
  if (!f) return false;
  char line[256];
  size_t len = strlen(key);
  bool found = false;
  while (!found && fgets(line, sizeof line, f))
    found = !strncmp(line, key, len) && line[len] == ' ' && sscanf(line + len + 1, "%llu", value) == 1;
  fclose(f);
  return found;
}

static const char *root(void) {
  const char *r = secure_getenv("HDAL_FSROOT");
  return r ? r : "";
}

/* The KFD node of a GPU at this PCI location; -1 when none. */
static long node_of(const hdal__rocm_device *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s" TOPOLOGY, root());
  DIR *dir = opendir(path);
  if (!dir) return -1;
  long node = -1;
  unsigned long long want = (unsigned long long)d->bus << 8 | d->slot << 3 | d->function, location, domain;
  for (struct dirent *e; node < 0 && (e = readdir(dir));) {
    char *end;
    long n = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end) continue;
    snprintf(path, sizeof path, "%s" TOPOLOGY "/%ld/properties", root(), n);
    if (property(path, "location_id", &location) && location == want &&
        (!property(path, "domain", &domain) || domain == d->domain))
      node = n;
  }
  closedir(dir);
  return node;
}

bool hdal__rocm_kfd_fabric(const hdal__rocm_device *a, const hdal__rocm_device *b, hdal_link *out) {
  if (!a->has_pci || !b->has_pci) return false;
  long na = node_of(a), nb = node_of(b);
  if (na < 0 || nb < 0 || na == nb) return false;
  char path[4096];
  snprintf(path, sizeof path, "%s" TOPOLOGY "/%ld/io_links", root(), na);
  DIR *dir = opendir(path);
  if (!dir) return false;
  bool found = false;
  for (struct dirent *e; !found && (e = readdir(dir));) {
    if (e->d_name[0] == '.') continue;
    unsigned long long type, to, bandwidth = 0;
    snprintf(path, sizeof path, "%s" TOPOLOGY "/%ld/io_links/%s/properties", root(), na, e->d_name);
    if (!property(path, "type", &type) || type != KFD_IOLINK_XGMI || !property(path, "node_to", &to) ||
        to != (unsigned long long)nb)
      continue;
    found = true;
    property(path, "max_bandwidth", &bandwidth);
    out->fabric = "xgmi";
    out->bandwidth_mbps = bandwidth;
    out->fabric_links = 0; /* KFD gives a link's bandwidth, not how many lanes make it */
  }
  closedir(dir);
  return found;
}
