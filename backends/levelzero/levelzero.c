/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Level Zero backend — a loadable module on Intel's GPU driver API.
 *
 * Nothing of Level Zero is linked: discover() dlopens the loader
 * (libze_loader.so.1, or the file named by HDAL_LEVELZERO_LIBRARY), so a
 * context that does not ask for this backend never initialises Level Zero.
 * No loader, no driver or no GPU leaves the backend "unavailable: <why>" and
 * the context goes on without it (docs/levelzero.md).
 */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "levelzero.h"
#include "../device_nodes.h"

/* More than any machine has: a count above it is a broken driver's. */
#define MAX_DRIVERS 64
#define MAX_DEVICES 1024

static void levelzero_finalize(void *state) {
  hdal__levelzero_state *s = state;
  if (!s) return;
  if (s->gpu.devices) {
    hdal__levelzero_devices_close(s);
    hdal__levelzero_device *d = s->gpu.devices;
    for (int i = 0; i < s->gpu.ndevices; i++) pthread_mutex_destroy(&d[i].lock);
  }
  for (int i = 0; i < s->ndrivers; i++)
    if (s->drivers[i].context) s->ze.zeContextDestroy(s->drivers[i].context);
  free(s->drivers);
  free(s->gpu.devices);
  if (s->lib) dlclose(s->lib);
  free(s);
}

/* Without a driver (none installed, or none with a GPU) the loader's zeInit
 * says ZE_RESULT_ERROR_UNINITIALIZED: the loader is there, the driver not. */
static hdal_error *init_error(hdal__levelzero_state *s, ze_result_t r) {
  if (r == ZE_RESULT_ERROR_UNINITIALIZED)
    return s->gpu.host->error_new(HDAL_UNAVAILABLE, "no Level Zero driver (zeInit: %s)",
                                  hdal__levelzero_result_name(r));
  return hdal__levelzero_error(s, r, "zeInit");
}

/* The UUID as 8-4-4-4-12 hex digits, the spelling of Intel's tools. */
static void uuid_text(const ze_device_uuid_t *u, char *buf, size_t len) {
  const uint8_t *b = u->id;
  snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
           b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Adds root device `dev` of driver `drv` as hdal's device `ordinal`. */
static hdal_error *add_device(hdal__levelzero_state *s, hdal_backend_discovery *disc, const hdal__levelzero_driver *drv,
                              ze_device_handle_t dev, int ordinal, uint32_t driver_version) {
  const hdal_backend_host *host = s->gpu.host;
  const hdal__ze_api *ze = &s->ze;
  hdal__levelzero_device *d = &((hdal__levelzero_device *)s->gpu.devices)[ordinal];
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  ze_pci_ext_properties_t pci_props = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
  uint32_t nmem = 0, nsub = 0;
  const char *call = "zeDeviceGetProperties";
  ze_result_t r = ze->zeDeviceGetProperties(dev, &p);
  if (r == ZE_RESULT_SUCCESS && (r = ze->zeDeviceGetMemoryProperties(dev, &nmem, NULL)))
    call = "zeDeviceGetMemoryProperties";
  if (r == ZE_RESULT_SUCCESS && (r = ze->zeDeviceGetSubDevices(dev, &nsub, NULL))) call = "zeDeviceGetSubDevices";
  if (r != ZE_RESULT_SUCCESS) return hdal__levelzero_error(s, r, "%s (device %d)", call, ordinal);
  /* The device's memories (one per tile of a multi-tile GPU): their sizes summed. */
  uint64_t mem = 0;
  if (nmem > 64) nmem = 64;
  if (nmem) {
    ze_device_memory_properties_t m[64];
    for (uint32_t i = 0; i < nmem; i++) m[i] = (ze_device_memory_properties_t){.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    if ((r = ze->zeDeviceGetMemoryProperties(dev, &nmem, m)))
      return hdal__levelzero_error(s, r, "zeDeviceGetMemoryProperties (device %d)", ordinal);
    for (uint32_t i = 0; i < nmem && i < 64; i++) mem += m[i].totalSize;
  }
  /* A driver without the PCI extension leaves the device without a bus id;
   * any other failure (out of memory...) is the discovery's. */
  r = ze->zeDevicePciGetPropertiesExt(dev, &pci_props);
  bool has_pci = r == ZE_RESULT_SUCCESS;
  if (!has_pci && r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE && r != ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    return hdal__levelzero_error(s, r, "zeDevicePciGetPropertiesExt (device %d)", ordinal);
  char pci[32] = "", uuid[48], text[32];
  if (has_pci)
    snprintf(pci, sizeof pci, "%04x:%02x:%02x.%x", pci_props.address.domain & 0xffff, pci_props.address.bus & 0xff,
             pci_props.address.device & 0x1f, pci_props.address.function & 0x7);
  p.name[sizeof p.name - 1] = '\0';
  uuid_text(&p.uuid, uuid, sizeof uuid);
  /* Execution units, as Intel's OpenCL ICD and SYCL count compute units. */
  uint64_t eus = (uint64_t)p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;

  d->gpu.gpu = &s->gpu;
  d->gpu.ordinal = ordinal;
  d->driver = drv->driver;
  d->context = drv->context;
  d->dev = dev;
  hdal_backend_device_info info = {
      .kind = p.name[0] ? p.name : "Level Zero device",
      .local_hardware_id = ordinal,
      .dlpack_device = {(DLDeviceType)kDLOneAPI, ordinal},
      .memory_bytes = mem,
      .numa_node = has_pci ? host->numa_node_of_pci(disc, pci) : -1,
      .data = d,
  };
  hdal_device *hd = host->add_device(disc, &info);
  bool ok = hd != NULL;
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("name", p.name));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_UUID, uuid));
  ok = ok && (!has_pci || host->add_attribute(hd, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_PCI_BUS_ID, pci)));
  /* Identifiers, shown as text (hex ids, a driver's build number), not quantities. */
  snprintf(text, sizeof text, "0x%04x", p.vendorId & 0xffff);
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("vendor_id", text));
  snprintf(text, sizeof text, "0x%04x", p.deviceId & 0xffff);
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("device_id", text));
  snprintf(text, sizeof text, "%u", driver_version);
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_STRING("driver_version", text));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_MEMORY_BYTES("memory_bytes"));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_UINT("compute_units", eus));
  ok = ok && host->add_attribute(hd, HDAL_BACKEND_UINT("sub_devices", nsub));
  if (!ok) return host->error_oom();
  host->debug(disc, "device %d: %s, %s, %llu bytes, %u sub-devices, NUMA node %d", ordinal, info.kind,
              has_pci ? pci : "no PCI bus id", (unsigned long long)mem, nsub, info.numa_node);
  return NULL;
}

/* The root devices of every driver, in the loader's order: their handles in
 * *out (driver index in *of), their count in *n. */
static hdal_error *list_devices(hdal__levelzero_state *s, ze_device_handle_t **out, int **of, int *n) {
  const hdal__ze_api *ze = &s->ze;
  ze_device_handle_t *all = NULL;
  int *drv_of = NULL, total = 0;
  for (int i = 0; i < s->ndrivers; i++) {
    uint32_t m = 0;
    ze_result_t r = ze->zeDeviceGet(s->drivers[i].driver, &m, NULL);
    if (r == ZE_RESULT_SUCCESS && m > MAX_DEVICES) {
      free(all);
      free(drv_of);
      return s->gpu.host->error_new(HDAL_UNAVAILABLE, "zeDeviceGet (driver %d): %u root devices, more than %d: a broken driver",
                                    i, m, MAX_DEVICES);
    }
    ze_device_handle_t *more = NULL;
    int *more_of = NULL;
    if (r == ZE_RESULT_SUCCESS && m) {
      more = realloc(all, ((size_t)total + m) * sizeof *all);
      if (more) all = more;
      more_of = realloc(drv_of, ((size_t)total + m) * sizeof *drv_of);
      if (more_of) drv_of = more_of;
      if (!more || !more_of) {
        free(all);
        free(drv_of);
        return s->gpu.host->error_oom();
      }
      uint32_t got = m;
      r = ze->zeDeviceGet(s->drivers[i].driver, &got, all + total);
      if (got < m) m = got;
    }
    if (r != ZE_RESULT_SUCCESS) {
      free(all);
      free(drv_of);
      return hdal__levelzero_error(s, r, "zeDeviceGet (driver %d)", i);
    }
    for (uint32_t j = 0; j < m; j++) drv_of[total + (int)j] = i;
    total += (int)m;
  }
  *out = all;
  *of = drv_of;
  *n = total;
  return NULL;
}

static hdal_error *open_drivers(hdal__levelzero_state *s) {
  const hdal__ze_api *ze = &s->ze;
  uint32_t n = 0;
  ze_result_t r = ze->zeDriverGet(&n, NULL);
  if (r != ZE_RESULT_SUCCESS) return hdal__levelzero_error(s, r, "zeDriverGet");
  if (n > MAX_DRIVERS)
    return s->gpu.host->error_new(HDAL_UNAVAILABLE, "zeDriverGet: %u drivers, more than %d: a broken loader", n, MAX_DRIVERS);
  if (n == 0) return s->gpu.host->error_new(HDAL_UNAVAILABLE, "no Level Zero driver (zeDriverGet: 0 drivers)");
  ze_driver_handle_t h[MAX_DRIVERS];
  if ((r = ze->zeDriverGet(&n, h))) return hdal__levelzero_error(s, r, "zeDriverGet");
  if (!(s->drivers = calloc(n, sizeof *s->drivers))) return s->gpu.host->error_oom();
  for (uint32_t i = 0; i < n; i++) {
    /* One context per driver for all of hdal's work on its devices. */
    ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    s->drivers[i].driver = h[i];
    if ((r = ze->zeContextCreate(h[i], &desc, &s->drivers[i].context))) {
      s->drivers[i].context = NULL;
      return hdal__levelzero_error(s, r, "zeContextCreate (driver %u)", i);
    }
    s->ndrivers = (int)i + 1;
  }
  return NULL;
}

/* The nodes Level Zero drivers drive: Intel's GPUs' DRM render nodes, its NPUs'
 * accel nodes, WSL's /dev/dxg. */
static const char *const device_nodes[] = {"/dev/dri/renderD*", "/dev/accel/accel*", "/dev/dxg"};

/* Whether to start the loader: a driver has a node to drive here, or the user
 * asked for Level Zero by name, chose its drivers or named a loader.  Loading
 * the loader and its zeInit to learn that no driver is there costs a third of
 * a millisecond and takes the dynamic loader's lock the other backends'
 * runtimes load under (docs/levelzero.md, "Start-up"). */
static bool worth_starting(const hdal_backend_host *host, hdal_backend_discovery *disc, bool loader_named) {
  static const char *const chosen[] = {"ZE_ENABLE_ALT_DRIVERS", "ZE_ENABLE_NULL_DRIVER"};
  return loader_named || hdal__env_chosen(chosen, sizeof chosen / sizeof chosen[0]) || host->named(disc) ||
         hdal__device_node_present(device_nodes, sizeof device_nodes / sizeof device_nodes[0]);
}

static hdal_error *levelzero_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  /* secure_getenv: a variable that loads code is ignored in setuid programs. */
  const char *env = secure_getenv("HDAL_LEVELZERO_LIBRARY");
  bool named = env && *env;
  const char *path = named ? env : HDAL__ZE_LOADER;
  if (!worth_starting(host, disc, named)) {
    host->debug(disc, "no GPU or NPU device node: the Level Zero loader is not started");
    return host->error_new(HDAL_UNAVAILABLE, "no Level Zero device node (/dev/dri/renderD*, /dev/accel/accel*, /dev/dxg)");
  }
  hdal_error *err;
  hdal__levelzero_state *s = calloc(1, sizeof *s);
  if (!s) return host->error_oom();
  s->gpu.host = host;
  s->gpu.drv = &hdal__levelzero_gpu_driver;
  s->gpu.device_size = sizeof(hdal__levelzero_device);
  if ((err = hdal__levelzero_loader_open(s, path))) {
    free(s);
    return err;
  }
  ze_result_t r = s->ze.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) {
    err = init_error(s, r);
    levelzero_finalize(s);
    return err;
  }
  ze_device_handle_t *devs = NULL;
  int *drv_of = NULL, n = 0;
  if ((err = open_drivers(s)) || (err = list_devices(s, &devs, &drv_of, &n))) {
    levelzero_finalize(s);
    return err;
  }
  host->debug(disc, "%s: %d driver(s), %d root device(s)", path, s->ndrivers, n);
  if (n == 0) {
    err = host->error_new(HDAL_UNAVAILABLE, "no Level Zero device (%d driver%s, no device)", s->ndrivers,
                          s->ndrivers == 1 ? "" : "s");
    levelzero_finalize(s);
    return err;
  }
  s->gpu.devices = calloc((size_t)n, sizeof(hdal__levelzero_device));
  if (!s->gpu.devices) {
    free(devs);
    free(drv_of);
    levelzero_finalize(s);
    return host->error_oom();
  }
  hdal__levelzero_device *d = s->gpu.devices;
  for (int i = 0; i < n; i++) pthread_mutex_init(&d[i].lock, NULL);
  s->gpu.ndevices = n;
  uint32_t version[MAX_DRIVERS];
  for (int i = 0; i < s->ndrivers && !err; i++) {
    ze_driver_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    ze_result_t pr = s->ze.zeDriverGetProperties(s->drivers[i].driver, &p);
    if (pr != ZE_RESULT_SUCCESS) err = hdal__levelzero_error(s, pr, "zeDriverGetProperties (driver %d)", i);
    version[i] = p.driverVersion;
  }
  for (int i = 0; i < n && !err; i++) err = add_device(s, disc, &s->drivers[drv_of[i]], devs[i], i, version[drv_of[i]]);
  free(devs);
  free(drv_of);
  if (err) {
    levelzero_finalize(s);
    return err;
  }
  *state = s;
  return NULL;
}

/* ZE_AFFINITY_MASK set empty shows every device, as unset. */
static const hdal_backend_visibility levelzero_visibility[] = {
    {"ZE_AFFINITY_MASK", HDAL_BACKEND_VISIBILITY_EMPTY_IS_ALL}, {NULL, 0}};
static const hdal_native_handle levelzero_native_handles[] = {
    HDAL_NATIVE_LEVEL_ZERO_DRIVER, HDAL_NATIVE_LEVEL_ZERO_DEVICE, HDAL_NATIVE_LEVEL_ZERO_CONTEXT, 0};

HDAL_BACKEND_DEFINE(levelzero) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "levelzero",
    .platform = "levelzero",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLOneAPI),
    .discover = levelzero_discover,
    .finalize = levelzero_finalize,
    .buffer_ops = &hdal__gpu_buffer_ops,
    .pci_vendor = 0x8086, /* Intel */
    .visibility = levelzero_visibility,
    .native_handles = levelzero_native_handles,
};
