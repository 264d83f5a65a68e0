/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — a loadable module on the HIP runtime API.
 *
 * Nothing of ROCm is linked: discover() dlopens libamdhip64.so (or the library
 * named by HDAL_ROCM_LIBRARY), so a context that does not ask for this backend
 * never initialises HIP.  No runtime, no GPU or a runtime of an unknown ABI
 * leaves the backend "unavailable: <why>" and the context goes on without it
 * (docs/rocm.md).
 */
#include "config.h"
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rocm.h"

static void rocm_finalize(void *state) {
  hdal__rocm_state *s = state;
  if (!s) return;
  if (s->gpu.devices) hdal__gpu_pools_trim(&s->gpu);
  free(s->gpu.devices);
  if (s->lib) dlclose(s->lib);
  free(s);
}

/* The reason the runtime cannot be used, for the backend's status.  Without a
 * GPU (no /dev/kfd, or none visible) ROCm 5's hipInit says hipErrorInvalidDevice,
 * later ones hipErrorNoDevice. */
static hdal_error *init_error(hdal__rocm_state *s, hipError_t r) {
  if (r == hipErrorNoDevice || r == hipErrorInvalidDevice) {
    const char *name = s->rt.hipGetErrorName(r);
    return s->gpu.host->error_new(HDAL_UNAVAILABLE, "no ROCm device (hipInit: %s)", name ? name : "hipError_t");
  }
  return hdal__rocm_error(s, r, "hipInit");
}

static void version_text(int v, char *buf, size_t len) {
  snprintf(buf, len, "%d.%d.%d", HDAL_HIP_VERSION_MAJOR(v), HDAL_HIP_VERSION_MINOR(v), HDAL_HIP_VERSION_PATCH(v));
}

/* AMD's runtime gives the 16 characters of the GPU's unique id, which rocminfo
 * prints after "GPU-"; other bytes are spelled as a CUDA UUID. */
static void uuid_text(const hipUUID *u, char *buf, size_t len) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  bool text = true;
  for (int i = 0; i < 16; i++) text = text && isalnum(b[i]);
  if (text)
    snprintf(buf, len, "GPU-%.16s", u->bytes);
  else
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* lspci's and hwloc's spelling, lower case; false when the runtime's is not "d:b:d.f". */
static bool pci_text(const char *raw, char *buf, size_t len) {
  unsigned domain, bus, slot, fn;
  if (sscanf(raw, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) != 4) return false;
  snprintf(buf, len, "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff, slot & 0x1f, fn & 0x7);
  return true;
}

/* Adds HIP device `ordinal` with its attributes. */
static hdal_error *add_device(hdal__rocm_state *s, hdal_backend_discovery *disc, int ordinal) {
  const hdal_backend_host *host = s->gpu.host;
  const hdal__hip_runtime *rt = &s->rt;
  hdal__rocm_device *d = &((hdal__rocm_device *)s->gpu.devices)[ordinal];
  char name[256] = "", raw_pci[64] = "", uuid[48], pci[32], text[32];
  hipUUID u;
  hipDevice_t dev = 0;
  size_t mem = 0;
  /* hipDeviceProp_t of either ABI, read at the layout's offsets. */
  _Alignas(16) unsigned char props[HDAL_HIP_PROPS_BUFFER] = {0};
  const char *call = "hipDeviceGet";
  hipError_t r = rt->hipDeviceGet(&dev, ordinal);
  if (r == hipSuccess && (r = rt->hipDeviceGetName(name, (int)sizeof name - 1, dev))) call = "hipDeviceGetName";
  if (r == hipSuccess && (r = rt->hipDeviceGetUuid(&u, dev))) call = "hipDeviceGetUuid";
  if (r == hipSuccess && (r = rt->hipDeviceGetPCIBusId(raw_pci, (int)sizeof raw_pci - 1, ordinal)))
    call = "hipDeviceGetPCIBusId";
  if (r == hipSuccess && (r = rt->hipDeviceTotalMem(&mem, dev))) call = "hipDeviceTotalMem";
  if (r == hipSuccess && (r = rt->hipGetDeviceProperties(props, ordinal))) call = s->props->get_properties;
  if (r != hipSuccess) return hdal__rocm_error(s, r, "%s (device %d)", call, ordinal);
  name[sizeof name - 1] = raw_pci[sizeof raw_pci - 1] = '\0';
  char *arch = (char *)props + s->props->gcn_arch_name;
  arch[255] = '\0';
  int cus;
  memcpy(&cus, props + s->props->multi_processor_count, sizeof cus);
  uuid_text(&u, uuid, sizeof uuid);
  bool has_pci = pci_text(raw_pci, pci, sizeof pci);

  d->gpu.gpu = &s->gpu;
  d->gpu.ordinal = ordinal;
  d->has_pci = has_pci && sscanf(pci, "%x:%x:%x.%x", &d->domain, &d->bus, &d->slot, &d->function) == 4;
  hdal_backend_device_info info = {
      .kind = name[0] ? name : arch, /* an unnamed board: its architecture */
      .local_hardware_id = ordinal,
      .dlpack_device = {kDLROCM, ordinal},
      .memory_bytes = mem,
      .numa_node = has_pci ? host->numa_node_of_pci(disc, pci) : -1,
      .data = d,
  };
  hdal_device *hd = host->add_device(disc, &info);
  bool ok = hd != NULL;
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("name", name));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_UUID, uuid));
  ok = ok && (!has_pci || host->add_attribute(hd, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_PCI_BUS_ID, pci)));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("architecture", arch));
  version_text(s->driver_version, text, sizeof text);
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("driver_version", text));
  version_text(s->runtime_version, text, sizeof text);
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("runtime_version", text));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_MEMORY_BYTES("memory_bytes"));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_UINT("compute_units", (uint64_t)cus));
  if (!ok) return host->error_oom();
  host->debug(disc, "device %d: %s, %s, %s, NUMA node %d", ordinal, info.kind, has_pci ? pci : raw_pci, arch,
              info.numa_node);
  return NULL;
}

static hdal_error *rocm_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  hdal_error *err;
  hdal__rocm_state *s = calloc(1, sizeof *s);
  if (!s) return host->error_oom();
  s->gpu.host = host;
  s->gpu.drv = &hdal__rocm_gpu_driver;
  s->gpu.device_size = sizeof(hdal__rocm_device);
  const char *path = NULL;
  err = hdal__rocm_runtime_open(s, disc, &path);
  if (err) {
    free(s);
    return err;
  }
  hipError_t r = s->rt.hipInit(0);
  if (r != hipSuccess) {
    err = init_error(s, r);
    rocm_finalize(s);
    return err;
  }
  /* A runtime that cannot say its driver's version or count its devices is
   * broken: the backend is unavailable, rather than listing made-up values. */
  int n = 0;
  const char *call = "hipDriverGetVersion";
  if ((r = s->rt.hipDriverGetVersion(&s->driver_version)) == hipSuccess &&
      (r = s->rt.hipGetDeviceCount(&n)) != hipSuccess)
    call = "hipGetDeviceCount";
  if (r != hipSuccess) {
    err = r == hipErrorNoDevice ? host->error_new(HDAL_UNAVAILABLE, "no ROCm device (%s: hipErrorNoDevice)", call)
                                : hdal__rocm_error(s, r, "%s", call);
    rocm_finalize(s);
    return err;
  }
  host->debug(disc, "%s: driver %d, %d device(s)", path, s->driver_version, n);
  s->gpu.devices = calloc(n > 0 ? (size_t)n : 1, sizeof(hdal__rocm_device));
  if (!s->gpu.devices) {
    rocm_finalize(s);
    return host->error_oom();
  }
  s->gpu.ndevices = n > 0 ? n : 0;
  for (int i = 0; i < s->gpu.ndevices; i++)
    if ((err = add_device(s, disc, i))) {
      rocm_finalize(s);
      return err;
    }
  *state = s;
  return NULL;
}

/* As AMD's runtimes apply them: ROCr's own first, then HIP's, which reads CUDA's name where its own is
 * unset. */
static const hdal_backend_visibility rocm_visibility[] = {
    {"ROCR_VISIBLE_DEVICES", HDAL_BACKEND_VISIBILITY_ORDINALS},
    {"HIP_VISIBLE_DEVICES", HDAL_BACKEND_VISIBILITY_ORDINALS},
    {"CUDA_VISIBLE_DEVICES", HDAL_BACKEND_VISIBILITY_ORDINALS | HDAL_BACKEND_VISIBILITY_FALLBACK},
    {NULL, 0}};
static const hdal_native_handle rocm_native_handles[] = {HDAL_NATIVE_HIP_DEVICE, HDAL_NATIVE_HIP_STREAM, 0};

HDAL_BACKEND_DEFINE(rocm) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "rocm",
    .platform = "rocm",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLROCM) | HDAL_DL_TYPE_BIT(kDLROCMHost),
    .discover = rocm_discover,
    .finalize = rocm_finalize,
    .buffer_ops = &hdal__gpu_buffer_ops,
    .pci_vendor = 0x1002, /* AMD */
    .visibility = rocm_visibility,
    .native_handles = rocm_native_handles,
};
