/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — NVLink between NVIDIA GPUs, as NVML says it (docs/cuda.md, "Links"), for
 * hdal_device_link(): the answer of `nvidia-smi topo -m`.  A live machine's hwloc leaves out its nvml
 * component, whose NVLinkBandwidth matrix would say the same (docs/hwloc.md).
 *
 * NVML (libnvidia-ml.so.1, or the file named by HDAL_NVML_LIBRARY) is opened with dlopen and
 * initialised on the state's first fabric query, once, never linked; nvmlShutdown at finalize.  For
 * GPUs a and b, by their PCI bus ids: each active link of a (nvmlDeviceGetNvLinkState) whose remote
 * end (nvmlDeviceGetNvLinkRemotePciInfo_v2) is b is a direct link; one whose remote end is an NVSwitch
 * (nvmlDeviceGetNvLinkRemoteDeviceType; without it, a remote end that is no GPU NVML knows) is a
 * link to the machine's switches, one fabric (docs/reference.md, "Links").  NVML unavailable or
 * failing: no fabric known. */
#include "config.h"
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "../library_file.h"

typedef struct {
  const char *name;
  size_t offset;
  bool optional; /* left NULL when missing */
} entry;

#define ENTRY(fn, optional) {#fn, offsetof(hdal__nvml, fn), optional}
static const entry entries[] = {
    ENTRY(nvmlInit_v2, false),
    ENTRY(nvmlShutdown, false),
    ENTRY(nvmlDeviceGetHandleByPciBusId_v2, false),
    ENTRY(nvmlDeviceGetNvLinkState, false),
    ENTRY(nvmlDeviceGetNvLinkRemotePciInfo_v2, false),
    ENTRY(nvmlDeviceGetNvLinkRemoteDeviceType, true),
};

/* Opens NVML and initialises it into s; nothing kept when it cannot be. */
static void nvml_open(hdal__cuda_state *s) {
  /* It names code to load: not trusted in setuid and setgid programs (as HDAL_CUDA_LIBRARY). */
  const char *env = secure_getenv("HDAL_NVML_LIBRARY");
  const char *path = env && *env ? env : "libnvidia-ml.so.1";
  char why[HDAL__LIBRARY_WHY_MAX];
  void *h = hdal__library_open(path, why);
  if (!h) return;
  hdal__nvml f;
  memset(&f, 0, sizeof f);
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *fn = dlsym(h, entries[i].name);
    if (!fn && entries[i].optional) continue;
    if (!fn) {
      dlclose(h);
      return;
    }
    memcpy((char *)&f + entries[i].offset, &fn, sizeof fn);
  }
  if (f.nvmlInit_v2() != NVML_SUCCESS) {
    dlclose(h);
    return;
  }
  s->nvml = f;
  s->nvml_lib = h;
}

/* NVML, opened on the state's first use; NULL when it cannot be. */
static const hdal__nvml *nvml(hdal__cuda_state *s) {
  pthread_mutex_lock(&s->nvml_lock);
  if (!s->nvml_tried) {
    s->nvml_tried = true;
    nvml_open(s);
  }
  const hdal__nvml *f = s->nvml_lib ? &s->nvml : NULL;
  pthread_mutex_unlock(&s->nvml_lock);
  return f;
}

void hdal__cuda_nvml_close(hdal__cuda_state *s) {
  if (!s->nvml_lib) return;
  s->nvml.nvmlShutdown();
  dlclose(s->nvml_lib);
  s->nvml_lib = NULL;
}

typedef struct {
  unsigned domain, bus, slot, function;
} pci_address;

/* "0000:34:00.0" (hdal's) or "00000000:34:00.0" (NVML's), either case. */
static bool parse(const char *text, pci_address *p) {
  return sscanf(text, "%x:%x:%x.%x", &p->domain, &p->bus, &p->slot, &p->function) == 4;
}

static bool same(const pci_address *a, const pci_address *b) {
  return a->domain == b->domain && a->bus == b->bus && a->slot == b->slot && a->function == b->function;
}

/* The remote end of a link: its busId, else the numbers (function 0, as GPUs and switches are). */
static void remote_address(const nvmlPciInfo_t *pci, pci_address *r) {
  char id[sizeof pci->busId + 1];
  memcpy(id, pci->busId, sizeof pci->busId);
  id[sizeof pci->busId] = '\0';
  if (!parse(id, r)) *r = (pci_address){pci->domain, pci->bus, pci->device, 0};
}

/* Whether link `l` of d ends at an NVSwitch: NVML's device type, else no GPU NVML knows at `r`. */
static bool is_switch(const hdal__nvml *f, nvmlDevice_t d, unsigned l, const pci_address *r) {
  int type = 0;
  if (f->nvmlDeviceGetNvLinkRemoteDeviceType && f->nvmlDeviceGetNvLinkRemoteDeviceType(d, l, &type) == NVML_SUCCESS)
    return type == NVML_NVLINK_DEVICE_TYPE_SWITCH;
  char id[32];
  nvmlDevice_t other;
  snprintf(id, sizeof id, "%08x:%02x:%02x.%x", r->domain, r->bus, r->slot, r->function);
  return f->nvmlDeviceGetHandleByPciBusId_v2(id, &other) != NVML_SUCCESS;
}

/* The active links of the GPU at `from` to the GPU at `to` and to NVSwitches; false when NVML does
 * not know `from`. */
static bool links_of(const hdal__nvml *f, const char *from, const pci_address *to, unsigned *direct,
                     unsigned *switches) {
  nvmlDevice_t d;
  *direct = *switches = 0;
  if (f->nvmlDeviceGetHandleByPciBusId_v2(from, &d) != NVML_SUCCESS) return false;
  for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
    int active = 0;
    nvmlPciInfo_t pci;
    pci_address r;
    if (f->nvmlDeviceGetNvLinkState(d, l, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    memset(&pci, 0, sizeof pci);
    if (f->nvmlDeviceGetNvLinkRemotePciInfo_v2(d, l, &pci) != NVML_SUCCESS) continue;
    remote_address(&pci, &r);
    if (same(&r, to)) ++*direct;
    else if (is_switch(f, d, l, &r)) ++*switches;
  }
  return true;
}

bool hdal__cuda_nvml_fabric(hdal__cuda_state *s, const hdal__cuda_device *a, const hdal__cuda_device *b,
                            hdal_link *out) {
  pci_address pa, pb;
  if (!parse(a->pci, &pa) || !parse(b->pci, &pb) || same(&pa, &pb)) return false;
  const hdal__nvml *f = nvml(s);
  if (!f) return false;
  unsigned direct, a_switches, b_direct, b_switches;
  if (!links_of(f, a->pci, &pb, &direct, &a_switches)) return false;
  unsigned links = direct;
  if (!links) {
    /* The machine's NVSwitches are one fabric: both GPUs on it, as many links as the fewer of theirs. */
    if (!a_switches || !links_of(f, b->pci, &pa, &b_direct, &b_switches) || !b_switches) return false;
    links = a_switches < b_switches ? a_switches : b_switches;
  }
  out->fabric = "nvlink";
  out->bandwidth_mbps = 0; /* NVML gives no link's bandwidth before its field values */
  out->fabric_links = links;
  return true;
}
