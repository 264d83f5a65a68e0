/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake NVML for hdal's tests: the NVLink calls the CUDA module makes (backends/cuda/nvml.c), on a
 * machine scripted by the environment, read at nvmlInit_v2.  Built for `make check` only; the suite
 * names it through HDAL_NVML_LIBRARY.
 *   FAKENVML_GPUS          comma-separated PCI bus ids of the machine's GPUs ("0000:34:00.0,..."),
 *                          their indices 0, 1, ... in that order
 *   FAKENVML_LINKS         direct links "a-b:n" between GPU indices, comma-separated ("0-1:2,2-3:2"):
 *                          n links of a to b and n of b to a
 *   FAKENVML_SWITCH_LINKS  links "i:n" of GPU i to NVSwitches ("0:6,1:6"): the k-th to a made-up
 *                          switch at 00000000:<f0 + k>:00.0, device type SWITCH
 *   FAKENVML_INIT          "fail": nvmlInit_v2 answers NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKENVML_DEVICE_TYPE   "unsupported": nvmlDeviceGetNvLinkRemoteDeviceType answers
 *                          NVML_ERROR_NOT_SUPPORTED (an NVML without the call)
 * Links are numbered in that order from 0, up to NVML_NVLINK_MAX_LINKS; the others are inactive.
 * Hook for tests: fakenvml_calls("nvmlInit_v2"), also "nvmlShutdown". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
  OK = 0,
  E_UNINITIALIZED = 1,
  E_INVALID_ARGUMENT = 2,
  E_NOT_SUPPORTED = 3,
  E_NOT_FOUND = 6,
  E_DRIVER_NOT_LOADED = 9,
};
enum { MAXGPU = 16, MAXLINK = 18, TYPE_GPU = 0, TYPE_SWITCH = 2 };

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned domain, bus, slot, function;
} address;

typedef struct {
  address to;
  int type;
} link;

struct nvmlDevice_st {
  address at;
  int nlinks;
  link links[MAXLINK];
};
typedef struct nvmlDevice_st *nvmlDevice_t;

static struct nvmlDevice_st gpus[MAXGPU];
static int ngpus, inits;
static unsigned init_calls, shutdown_calls;
static int type_unsupported;

unsigned fakenvml_calls(const char *entry);
unsigned fakenvml_calls(const char *entry) {
  return !strcmp(entry, "nvmlInit_v2") ? init_calls : !strcmp(entry, "nvmlShutdown") ? shutdown_calls : 0;
}

static int parse(const char *text, address *a) {
  return sscanf(text, "%x:%x:%x.%x", &a->domain, &a->bus, &a->slot, &a->function) == 4;
}

static void add_link(int from, address to, int type) {
  if (from < 0 || from >= ngpus || gpus[from].nlinks >= MAXLINK) return;
  gpus[from].links[gpus[from].nlinks++] = (link){to, type};
}

static void configure(void) {
  memset(gpus, 0, sizeof gpus);
  ngpus = 0;
  const char *e = getenv("FAKENVML_GPUS");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", e ? e : "");
  for (char *save, *t = strtok_r(buf, ",", &save); t && ngpus < MAXGPU; t = strtok_r(NULL, ",", &save))
    if (parse(t, &gpus[ngpus].at)) ngpus++;
  snprintf(buf, sizeof buf, "%s", (e = getenv("FAKENVML_LINKS")) ? e : "");
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int a, b, n;
    if (sscanf(t, "%d-%d:%d", &a, &b, &n) != 3 || a < 0 || b < 0 || a >= ngpus || b >= ngpus) continue;
    for (int k = 0; k < n; k++) {
      add_link(a, gpus[b].at, TYPE_GPU);
      add_link(b, gpus[a].at, TYPE_GPU);
    }
  }
  snprintf(buf, sizeof buf, "%s", (e = getenv("FAKENVML_SWITCH_LINKS")) ? e : "");
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int i, n;
    if (sscanf(t, "%d:%d", &i, &n) != 2) continue;
    for (int k = 0; k < n; k++) add_link(i, (address){0, 0xf0 + (unsigned)k, 0, 0}, TYPE_SWITCH);
  }
  type_unsupported = (e = getenv("FAKENVML_DEVICE_TYPE")) && !strcmp(e, "unsupported");
}

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void) {
  init_calls++;
  const char *e = getenv("FAKENVML_INIT");
  if (e && !strcmp(e, "fail")) return E_DRIVER_NOT_LOADED;
  if (!inits++) configure();
  return OK;
}

nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void) {
  shutdown_calls++;
  if (!inits) return E_UNINITIALIZED;
  inits--;
  return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *device) {
  address a;
  if (!inits) return E_UNINITIALIZED;
  if (!id || !device || !parse(id, &a)) return E_INVALID_ARGUMENT;
  for (int i = 0; i < ngpus; i++)
    if (gpus[i].at.domain == a.domain && gpus[i].at.bus == a.bus && gpus[i].at.slot == a.slot &&
        gpus[i].at.function == a.function) {
      *device = &gpus[i];
      return OK;
    }
  return E_NOT_FOUND;
}

static nvmlReturn_t check(nvmlDevice_t d, unsigned l, const void *out) {
  if (!inits) return E_UNINITIALIZED;
  if (!d || d < gpus || d >= gpus + ngpus || !out) return E_INVALID_ARGUMENT;
  return l < MAXLINK ? OK : E_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned l, int *active);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned l, int *active) {
  nvmlReturn_t r = check(d, l, active);
  if (r == OK) *active = (int)l < d->nlinks; /* NVML_FEATURE_ENABLED 1, DISABLED 0 */
  return r;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned l, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned l, nvmlPciInfo_t *pci) {
  nvmlReturn_t r = check(d, l, pci);
  if (r != OK) return r;
  if ((int)l >= d->nlinks) return E_NOT_SUPPORTED;
  const address *a = &d->links[l].to;
  memset(pci, 0, sizeof *pci);
  pci->domain = a->domain;
  pci->bus = a->bus;
  pci->device = a->slot;
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", a->domain, a->bus, a->slot, a->function);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", a->domain, a->bus, a->slot, a->function);
  return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned l, int *type);
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned l, int *type) {
  nvmlReturn_t r = check(d, l, type);
  if (r != OK) return r;
  if (type_unsupported || (int)l >= d->nlinks) return E_NOT_SUPPORTED;
  *type = d->links[l].type;
  return OK;
}
