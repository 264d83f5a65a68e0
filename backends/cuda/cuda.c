/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CUDA backend — a loadable module on the CUDA driver API.
 *
 * Nothing of CUDA is linked: discover() dlopens libcuda.so.1 (or the library
 * named by HDAL_CUDA_LIBRARY), so a context that does not ask for this backend
 * never initialises CUDA.  No driver, a stub driver or no device leaves the
 * backend "unavailable: <why>" and the context goes on without it.
 */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

static hdal__cuda_device *device(hdal__cuda_state *s, int i) { return &((hdal__cuda_device *)s->gpu.devices)[i]; }

static void cuda_finalize(void *state) {
  hdal__cuda_state *s = state;
  if (!s) return;
  /* Before the primary contexts go: another user of one keeps it, and the pool's cache. */
  if (s->gpu.devices) hdal__gpu_pools_trim(&s->gpu);
  for (int i = 0; i < s->gpu.ndevices; i++) {
    hdal__cuda_device *d = device(s, i);
    if (d->ctx) s->drv.cuDevicePrimaryCtxRelease(d->dev);
    pthread_mutex_destroy(&d->lock);
  }
  free(s->gpu.devices);
  hdal__cuda_nvml_close(s);
  pthread_mutex_destroy(&s->nvml_lock);
  if (s->lib) dlclose(s->lib);
  free(s);
}

/* The reason the driver cannot be used, for the backend's status. */
static hdal_error *init_error(hdal__cuda_state *s, const char *path, CUresult r) {
  /* A stub answers every call with CUDA_ERROR_STUB_LIBRARY, its error strings included. */
  if (r == CUDA_ERROR_STUB_LIBRARY)
    return s->gpu.host->error_new(HDAL_UNAVAILABLE, "%s is a stub library, not the CUDA driver (cuInit: CUDA_ERROR_STUB_LIBRARY)",
                              path);
  if (r == CUDA_ERROR_NO_DEVICE)
    return s->gpu.host->error_new(HDAL_UNAVAILABLE, "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
  return hdal__cuda_error(s, r, "cuInit");
}

static int attribute(hdal__cuda_state *s, CUdevice dev, int attr, CUresult *r) {
  int v = 0;
  if (*r == CUDA_SUCCESS) *r = s->drv.cuDeviceGetAttribute(&v, attr, dev);
  return v;
}

/* Adds CUDA device `ordinal` with its attributes. */
static hdal_error *add_device(hdal__cuda_state *s, hdal_backend_discovery *disc, int ordinal) {
  const hdal_backend_host *host = s->gpu.host;
  hdal__cuda_device *d = device(s, ordinal);
  char name[256] = "", uuid[48], pci[16], cc[24], text[24];
  CUuuid u;
  size_t mem = 0;
  CUresult r = s->drv.cuDeviceGet(&d->dev, ordinal);
  const char *call = "cuDeviceGet";
  if (r == CUDA_SUCCESS && (r = s->drv.cuDeviceGetName(name, (int)sizeof name - 1, d->dev))) call = "cuDeviceGetName";
  if (r == CUDA_SUCCESS && (r = s->drv.cuDeviceGetUuid(&u, d->dev))) call = "cuDeviceGetUuid";
  if (r == CUDA_SUCCESS && (r = s->drv.cuDeviceTotalMem(&mem, d->dev))) call = "cuDeviceTotalMem";
  if (r != CUDA_SUCCESS) return hdal__cuda_error(s, r, "%s (device %d)", call, ordinal);
  int domain = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &r);
  int bus = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &r);
  int slot = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &r);
  int major = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &r);
  int minor = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &r);
  int sms = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &r);
  int uva = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, &r);
  int managed = attribute(s, d->dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, &r);
  if (r != CUDA_SUCCESS) return hdal__cuda_error(s, r, "cuDeviceGetAttribute (device %d)", ordinal);
  name[sizeof name - 1] = '\0';

  const unsigned char *b = u.bytes;
  /* nvidia-smi's spelling, so that users can match the two. */
  snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  /* lspci's and hwloc's spelling; GPUs are function 0. */
  snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", (unsigned)domain & 0xffff, (unsigned)bus & 0xff,
           (unsigned)slot & 0x1f);
  snprintf(cc, sizeof cc, "%d.%d", major, minor);
  memcpy(d->pci, pci, sizeof d->pci);

  d->gpu.gpu = &s->gpu;
  d->gpu.ordinal = ordinal;
  hdal_backend_device_info info = {
      .kind = name,
      .local_hardware_id = ordinal,
      .dlpack_device = {kDLCUDA, ordinal},
      .memory_bytes = mem,
      .numa_node = host->numa_node_of_pci(disc, pci),
      .data = d,
  };
  hdal_device *dev = host->add_device(disc, &info);
  bool ok = dev != NULL;
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_STRING("name", name));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_UUID, uuid));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_PCI_BUS_ID, pci));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_STRING("compute_capability", cc));
  snprintf(text, sizeof text, "%d.%d", s->driver_version / 1000, s->driver_version % 1000 / 10);
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_STRING("driver_version", text));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_MEMORY_BYTES("memory_bytes"));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_UINT("multiprocessors", (uint64_t)sms));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_BOOL("unified_addressing", uva));
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_BOOL("managed_memory", managed));
  if (!ok) return host->error_oom();
  host->debug(disc, "device %d: %s, %s, compute capability %s, NUMA node %d", ordinal, name, pci, cc,
              info.numa_node);
  return NULL;
}

static hdal_error *cuda_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  /* It names code to load: not trusted in setuid and setgid programs. */
  const char *env = secure_getenv("HDAL_CUDA_LIBRARY");
  const char *path = env && *env ? env : "libcuda.so.1";
  hdal_error *err;
  hdal__cuda_state *s = calloc(1, sizeof *s);
  if (!s) return host->error_oom();
  s->gpu.host = host;
  s->gpu.drv = &hdal__cuda_gpu_driver;
  s->gpu.device_size = sizeof(hdal__cuda_device);
  pthread_mutex_init(&s->nvml_lock, NULL);
  err = hdal__cuda_driver_open(host, disc, path, &s->lib, &s->drv);
  if (err) {
    pthread_mutex_destroy(&s->nvml_lock);
    free(s);
    return err;
  }
  CUresult r = s->drv.cuInit(0);
  if (r != CUDA_SUCCESS) {
    err = init_error(s, path, r);
    cuda_finalize(s);
    return err;
  }
  /* A driver that cannot say its version or count its devices is broken:
   * the backend is unavailable, rather than listing made-up values. */
  int n = 0;
  const char *call = "cuDriverGetVersion";
  if ((r = s->drv.cuDriverGetVersion(&s->driver_version)) == CUDA_SUCCESS &&
      (r = s->drv.cuDeviceGetCount(&n)) != CUDA_SUCCESS)
    call = "cuDeviceGetCount";
  if (r != CUDA_SUCCESS) {
    err = hdal__cuda_error(s, r, "%s", call);
    cuda_finalize(s);
    return err;
  }
  host->debug(disc, "%s: driver %d, %d device(s)", path, s->driver_version, n);
  s->gpu.devices = calloc(n > 0 ? (size_t)n : 1, sizeof(hdal__cuda_device));
  if (!s->gpu.devices) {
    cuda_finalize(s);
    return host->error_oom();
  }
  for (int i = 0; i < n; i++) {
    pthread_mutex_init(&device(s, i)->lock, NULL);
    s->gpu.ndevices = i + 1; /* finalize() owns the mutex from here */
    if ((err = add_device(s, disc, i))) {
      cuda_finalize(s);
      return err;
    }
  }
  *state = s;
  return NULL;
}

/* CUDA_VISIBLE_DEVICES: ordinals and "GPU-"/"MIG-" UUIDs; "" or "-1" leave the driver no device. */
static const hdal_backend_visibility cuda_visibility[] = {{"CUDA_VISIBLE_DEVICES", HDAL_BACKEND_VISIBILITY_ORDINALS},
                                                          {NULL, 0}};
static const hdal_native_handle cuda_native_handles[] = {HDAL_NATIVE_CUDA_DEVICE, HDAL_NATIVE_CUDA_CONTEXT,
                                                         HDAL_NATIVE_CUDA_STREAM, 0};

HDAL_BACKEND_DEFINE(cuda) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "cuda",
    .platform = "cuda",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLCUDA) | HDAL_DL_TYPE_BIT(kDLCUDAHost) | HDAL_DL_TYPE_BIT(kDLCUDAManaged),
    .discover = cuda_discover,
    .finalize = cuda_finalize,
    .buffer_ops = &hdal__gpu_buffer_ops,
    .pci_vendor = 0x10de, /* NVIDIA */
    .visibility = cuda_visibility,
    .native_handles = cuda_native_handles,
};
