/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — the device nodes of a GPU (hdal-ls(1), "DEVICE NODES"): what a
 * container or a scheduler must hand a job for it, found from the PCI bus id
 * its backend reports.  NVIDIA: /dev/nvidia<minor> (the minor from
 * /proc/driver/nvidia/gpus/<bus id>/information), /dev/nvidiactl and
 * /dev/nvidia-uvm; AMD: /dev/dri/renderD<N> (from /sys/bus/pci/devices/<bus
 * id>/drm/) and /dev/kfd; Intel: /dev/dri/renderD<N>.  Everything is read
 * under HDAL_FSROOT when it is set (as hwloc's HWLOC_FSROOT), and the nodes
 * are named under it too, for tests. */
#include "config.h"
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"

const char *ls_fsroot(void) {
  const char *r = secure_getenv("HDAL_FSROOT");
  return r ? r : "";
}

/* The first line of root/path, without its newline; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "re");
  if (!f) return false;
  bool ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok;
}

/* A bus id as sysfs spells it: "dddd:bb:dd.f", lower case; false when it is not one. */
static bool sysfs_bus_id(const char *pci, char out[16]) {
  size_t n = strlen(pci);
  if (n != 12 || pci[4] != ':' || pci[7] != ':' || pci[10] != '.') return false;
  for (size_t i = 0; i < n; i++) {
    if (i == 4 || i == 7 || i == 10) out[i] = pci[i];
    else if (isxdigit((unsigned char)pci[i])) out[i] = (char)tolower((unsigned char)pci[i]);
    else return false;
  }
  out[n] = '\0';
  return true;
}

/* The vendor of PCI vendor id v (hwloc's and sysfs's numbers). */
static ls_gpu_vendor pci_vendor(unsigned v) {
  return v == 0x10de ? LS_VENDOR_NVIDIA : v == 0x1002 ? LS_VENDOR_AMD : v == 0x8086 ? LS_VENDOR_INTEL : LS_VENDOR_OTHER;
}

ls_gpu_vendor ls_vendor_of(const hdal_device *d) {
  const char *pci = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  char bus[16], path[512], v[32];
  if (!pci || !sysfs_bus_id(pci, bus)) return LS_VENDOR_NONE;
  snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/vendor", ls_fsroot(), bus);
  /* A root without sysfs (a container given only the NVIDIA driver's /proc files). */
  if (!read_line(path, v, sizeof v)) {
    unsigned r = hdal_device_runtime_vendor(d); /* its runtime's, whatever sysfs says */
    return r ? pci_vendor(r) : LS_VENDOR_NONE;
  }
  char *end;
  unsigned long id = strtoul(v, &end, 16);
  return *end || id > 0xffff ? LS_VENDOR_OTHER : pci_vendor((unsigned)id);
}

/* NVIDIA's minor from the driver's information file ("Device Minor: 0"); -1 when unknown. */
static int nvidia_minor(const char *bus) {
  char path[512], line[256];
  snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/information", ls_fsroot(), bus);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int minor = -1;
  while (minor < 0 && fgets(line, sizeof line, f)) {
    unsigned m;
    char tail;
    if (sscanf(line, "Device Minor: %u%c", &m, &tail) == 2 && tail == '\n' && m < 1u << 20) minor = (int)m;
  }
  fclose(f);
  return minor;
}

/* The render node's number under /sys/bus/pci/devices/<bus>/drm/; -1 when none. */
static int render_node(const char *bus) {
  char path[512];
  snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/drm", ls_fsroot(), bus);
  DIR *dir = opendir(path);
  if (!dir) return -1;
  int n = -1;
  for (struct dirent *e; n < 0 && (e = readdir(dir));) {
    unsigned v;
    char tail;
    if (sscanf(e->d_name, "renderD%u%c", &v, &tail) == 1 && v < 1u << 20) n = (int)v;
  }
  closedir(dir);
  return n;
}

void ls_no_node_reason(const hdal_device *d, char *why, size_t size) {
  const char *pci = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID), *root = ls_fsroot();
  char bus[16];
  if (!pci || !sysfs_bus_id(pci, bus)) {
    snprintf(why, size, "its PCI bus id is not d:b:d.f");
    return;
  }
  switch (ls_vendor_of(d)) {
  case LS_VENDOR_NVIDIA:
    snprintf(why, size, "no device minor in %s/proc/driver/nvidia/gpus/%s/information", root, bus);
    break;
  case LS_VENDOR_AMD:
  case LS_VENDOR_INTEL: snprintf(why, size, "no render node in %s/sys/bus/pci/devices/%s/drm", root, bus); break;
  case LS_VENDOR_OTHER: snprintf(why, size, "hdal-ls knows no device node of its PCI vendor"); break;
  default: snprintf(why, size, "its PCI vendor is unknown: %s/sys/bus/pci/devices/%s/vendor cannot be read", root, bus);
  }
}

size_t ls_device_nodes(const hdal_device *d, char nodes[][LS_NODE_MAX], size_t max) {
  const char *pci = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
  char bus[16];
  if (!pci || !sysfs_bus_id(pci, bus) || max < 3) return 0;
  const char *root = ls_fsroot();
  size_t n = 0;
  int k;
  switch (ls_vendor_of(d)) {
  case LS_VENDOR_NVIDIA:
    if ((k = nvidia_minor(bus)) < 0) return 0;
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/nvidia%d", root, k);
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/nvidiactl", root);
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/nvidia-uvm", root);
    return n;
  case LS_VENDOR_AMD:
    if ((k = render_node(bus)) < 0) return 0;
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/dri/renderD%d", root, k);
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/kfd", root);
    return n;
  case LS_VENDOR_INTEL:
    if ((k = render_node(bus)) < 0) return 0;
    snprintf(nodes[n++], LS_NODE_MAX, "%s/dev/dri/renderD%d", root, k);
    return n;
  default: return 0;
  }
}
