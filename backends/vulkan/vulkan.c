/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Vulkan backend — Vulkan's physical devices, listed: hdal's first
 * IFRT-native backend (docs/vulkan.md).
 *
 * DLPack has a device type for Vulkan (kDLVulkan) but no agreed meaning of a
 * tensor's `data` on it, so no buffer can be exchanged: the devices are listed
 * with what Vulkan says of them and refused by every DLPack path with the
 * IFRT-native messages.  The module has no buffer operations.
 *
 * Nothing of Vulkan is linked: discover() dlopens the loader (libvulkan.so.1,
 * or HDAL_VULKAN_LIBRARY) and asks it for every other entry point, makes one
 * instance (API 1.1, no layers, no extensions), reads the physical devices and
 * destroys the instance again: nothing of Vulkan is held after discovery.
 *
 * Start-up.  Creating an instance loads every installed driver; Mesa's CPU
 * driver, lavapipe, is on most desktops and starts LLVM, which costs more than
 * the rest of a context.  By default the loader is started only where a GPU
 * driver has a device node to drive; a CPU driver's device is left out unless
 * the user names the backend or chooses the drivers (docs/vulkan.md).
 */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdal/backend.h>
#include "vk_api.h"
#include "../library_file.h"
#include "../device_nodes.h"
#include "../process_cpuset.h"

#define VULKAN_LOADER "libvulkan.so.1"
/* More than any machine has: a count above it is a broken driver's. */
#define MAX_DEVICES 1024
#define MAX_FAMILIES 256

#define REASON "Vulkan memory has no DLPack convention (kDLVulkan); hdal lists this device but does not create buffers on it"

/* The loader's entry points, for one discovery. */
typedef struct {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define HDAL__VK_FIELD(fn, ret, params) ret(HDAL__VK_CALL *fn) params;
  HDAL__VK_GLOBAL_FUNCTIONS(HDAL__VK_FIELD)
  HDAL__VK_INSTANCE_FUNCTIONS(HDAL__VK_FIELD)
#undef HDAL__VK_FIELD
} vk_api;

static const char *result_name(VkResult r) {
  switch (r) {
  case VK_SUCCESS: return "VK_SUCCESS";
  case VK_INCOMPLETE: return "VK_INCOMPLETE";
  case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
  case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
  default: return "VkResult";
  }
}

static hdal_error *vk_error(const hdal_backend_host *host, VkResult r, const char *call) {
  hdal_code code = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? HDAL_RESOURCE_EXHAUSTED
                                                                                           : HDAL_INTERNAL;
  return host->error_new(code, "%s: %s (%d)", call, result_name(r), (int)r);
}

/* ---- when to start the loader ---- */

/* The variables with which a user chooses the Vulkan drivers (the loader's own). */
static const char *const driver_variables[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"};

static const char *drivers_chosen(void) {
  return hdal__env_chosen(driver_variables, sizeof driver_variables / sizeof driver_variables[0]);
}

/* The nodes of GPU drivers: a DRM render node (Mesa's drivers, and every GPU
 * kernel driver in Linux), NVIDIA's control node, WSL's /dev/dxg. */
static const char *const gpu_nodes[] = {"/dev/dri/renderD*", "/dev/nvidiactl", "/dev/dxg"};

/* ---- the loader ---- */

/* Opens `library` (HDAL_VULKAN_LIBRARY), NULL: the system's loader. */
static hdal_error *loader_open(const hdal_backend_host *host, const char *library, vk_api *vk, const char **path) {
  *path = library ? library : VULKAN_LOADER;
  char why[HDAL__LIBRARY_WHY_MAX];
  void *h = hdal__library_open(*path, why);
  if (!h) return host->error_new(HDAL_UNAVAILABLE, "%s", why);
  /* The one symbol the specification has applications look up by name (RTLD_NODELETE: h is not closed). */
  void *gipa = dlsym(h, "vkGetInstanceProcAddr");
  if (!gipa) return host->error_new(HDAL_UNAVAILABLE, "%s: not a Vulkan loader (no vkGetInstanceProcAddr)", *path);
  memcpy(&vk->vkGetInstanceProcAddr, &gipa, sizeof gipa);
  return NULL;
}

/* The entry points of `instance` (NULL: the global ones); the first missing one's name, or NULL. */
static const char *resolve(vk_api *vk, VkInstance instance) {
  PFN_vkVoidFunction fn;
#define HDAL__VK_RESOLVE(name, ret, params)                              \
  if (!(fn = vk->vkGetInstanceProcAddr(instance, #name))) return #name; \
  memcpy(&vk->name, &fn, sizeof fn);
  if (!instance) {
    HDAL__VK_GLOBAL_FUNCTIONS(HDAL__VK_RESOLVE)
  } else {
    HDAL__VK_INSTANCE_FUNCTIONS(HDAL__VK_RESOLVE)
  }
#undef HDAL__VK_RESOLVE
  return NULL;
}

static hdal_error *instance_create(const hdal_backend_host *host, vk_api *vk, const char *path, VkInstance *out) {
  const char *missing = resolve(vk, NULL);
  uint32_t version = VK_API_VERSION_1_0;
  /* A 1.0 loader has no vkEnumerateInstanceVersion. */
  if (missing || vk->vkEnumerateInstanceVersion(&version) != VK_SUCCESS || version < VK_API_VERSION_1_1)
    return host->error_new(HDAL_UNAVAILABLE, "%s: Vulkan %u.%u loader; hdal needs Vulkan 1.1", path,
                           VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
  const VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                 .pApplicationName = "hdal",
                                 .pEngineName = "hdal",
                                 .apiVersion = VK_API_VERSION_1_1};
  const VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkResult r = vk->vkCreateInstance(&info, NULL, out);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return host->error_new(HDAL_UNAVAILABLE, "no Vulkan driver (vkCreateInstance: %s)", result_name(r));
  if (r != VK_SUCCESS) return vk_error(host, r, "vkCreateInstance");
  if ((missing = resolve(vk, *out))) {
    if (vk->vkDestroyInstance) vk->vkDestroyInstance(*out, NULL);
    return host->error_new(HDAL_UNAVAILABLE, "%s: the loader has no entry point %s", path, missing);
  }
  return NULL;
}

/* ---- one device ---- */

static bool has_extension(const VkExtensionProperties *e, uint32_t n, const char *name) {
  for (uint32_t i = 0; i < n; i++)
    if (!strncmp(e[i].extensionName, name, sizeof e[i].extensionName)) return true;
  return false;
}

/* What the device offers of the extensions discovery reads. */
static hdal_error *extensions(const hdal_backend_host *host, const vk_api *vk, VkPhysicalDevice pd, bool *pci,
                              bool *driver) {
  uint32_t n = 0;
  VkResult r = vk->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
  VkExtensionProperties *e = NULL;
  if (r == VK_SUCCESS && n) {
    if (n > 4096) n = 4096;
    if (!(e = calloc(n, sizeof *e))) return host->error_oom();
    r = vk->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
    if (r == VK_INCOMPLETE) r = VK_SUCCESS; /* more came since: those read are enough */
  }
  if (r != VK_SUCCESS) {
    free(e);
    return vk_error(host, r, "vkEnumerateDeviceExtensionProperties");
  }
  *pci = has_extension(e, n, "VK_EXT_pci_bus_info");
  *driver = has_extension(e, n, "VK_KHR_driver_properties");
  free(e);
  return NULL;
}

static const char *type_name(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
  default: return "other";
  }
}

/* hdal's device_type, the word the device selector matches (vulkan:gpu). */
static const char *hdal_type(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "gpu";
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
  default: return "accelerator";
  }
}

#define NVIDIA 0x10de

/* driverVersion is the vendor's encoding: NVIDIA packs 10.8.8.6 bits; Mesa
 * and most others use Vulkan's own version encoding. */
static void driver_version_text(uint32_t vendor, uint32_t v, char *buf, size_t len) {
  if (vendor == NVIDIA) {
    snprintf(buf, len, "%u.%u.%u", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff);
    if (v & 0x3f) snprintf(buf + strlen(buf), len - strlen(buf), ".%u", v & 0x3f);
  } else {
    snprintf(buf, len, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
  }
}

/* 8-4-4-4-12 hex digits, as vulkaninfo prints them; "GPU-" first on NVIDIA's
 * GPUs, whose deviceUUID is the one CUDA and nvidia-smi name so: one GPU has
 * one UUID string in every backend (hdal-ls pairs devices by it). */
static void uuid_text(const uint8_t *b, const char *prefix, char *buf, size_t len) {
  snprintf(buf, len, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static bool add_uint(const hdal_backend_host *host, hdal_device *d, const char *key, uint64_t v) {
  return host->add_attribute(d, HDAL_BACKEND_UINT(key, v));
}

static bool add_string(const hdal_backend_host *host, hdal_device *d, const char *key, const char *v) {
  return host->add_attribute(d, HDAL_BACKEND_STRING(key, v));
}

/* Physical device `index` (the loader's order), unless it is a CPU driver's and they are left out. */
static hdal_error *add_device(const hdal_backend_host *host, hdal_backend_discovery *disc, const vk_api *vk,
                              VkPhysicalDevice pd, int index, bool cpu_drivers, unsigned *left_out) {
  bool has_pci = false, has_driver = false;
  hdal_error *err = extensions(host, vk, pd, &has_pci, &has_driver);
  if (err) return err;
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci_props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id};
  /* Only structures of what the device offers may be chained (driver properties are Vulkan 1.2 core too,
   * but the instance is 1.1: the extension is what makes them readable here). */
  void **tail = &id.pNext;
  if (has_driver) *tail = &drv, tail = &drv.pNext;
  if (has_pci) *tail = &pci_props;
  vk->vkGetPhysicalDeviceProperties2(pd, &p);
  const VkPhysicalDeviceProperties *props = &p.properties;
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 1];
  snprintf(name, sizeof name, "%.*s", VK_MAX_PHYSICAL_DEVICE_NAME_SIZE, props->deviceName);
  if (props->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !cpu_drivers) {
    host->debug(disc, "device %d: %s, a CPU driver's: left out (docs/vulkan.md)", index, name);
    ++*left_out;
    return NULL;
  }

  VkPhysicalDeviceMemoryProperties mem;
  memset(&mem, 0, sizeof mem);
  vk->vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  /* The largest device-local heap: the memory a device's own allocations come from. */
  uint64_t memory = 0;
  for (uint32_t i = 0; i < mem.memoryHeapCount && i < VK_MAX_MEMORY_HEAPS; i++)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT && mem.memoryHeaps[i].size > memory)
      memory = mem.memoryHeaps[i].size;
  uint32_t nfam = 0;
  vk->vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, NULL);
  if (nfam > MAX_FAMILIES) nfam = MAX_FAMILIES;
  VkQueueFamilyProperties fam[MAX_FAMILIES];
  vk->vkGetPhysicalDeviceQueueFamilyProperties(pd, &nfam, fam);
  uint64_t compute_families = 0, compute_queues = 0;
  for (uint32_t i = 0; i < nfam && i < MAX_FAMILIES; i++)
    if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) compute_families++, compute_queues += fam[i].queueCount;

  char pci[32] = "", uuid[48], driver_uuid[48], text[48];
  if (has_pci)
    snprintf(pci, sizeof pci, "%04x:%02x:%02x.%x", pci_props.pciDomain & 0xffff, pci_props.pciBus & 0xff,
             pci_props.pciDevice & 0x1f, pci_props.pciFunction & 0x7);
  uuid_text(id.deviceUUID, props->vendorID == NVIDIA ? "GPU-" : "", uuid, sizeof uuid);
  uuid_text(id.driverUUID, "", driver_uuid, sizeof driver_uuid);
  hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
  info.kind = name[0] ? name : "Vulkan device";
  info.local_hardware_id = index;
  info.dlpack_device = (DLDevice){(DLDeviceType)kDLVulkan, index};
  info.memory_bytes = memory;
  info.numa_node = has_pci ? host->numa_node_of_pci(disc, pci) : -1;
  info.runtime_class = HDAL_RUNTIME_IFRT_NATIVE;
  info.runtime_class_reason = REASON;
  hdal_device *d = host->add_device(disc, &info);
  bool ok = d != NULL;
  ok = ok && add_string(host, d, "name", name);
  ok = ok && add_string(host, d, HDAL_ATTRIBUTE_DEVICE_TYPE, hdal_type(props->deviceType));
  ok = ok && add_string(host, d, "vulkan_device_type", type_name(props->deviceType));
  snprintf(text, sizeof text, "0x%04x", props->vendorID);
  ok = ok && add_string(host, d, "vendor_id", text);
  snprintf(text, sizeof text, "0x%04x", props->deviceID);
  ok = ok && add_string(host, d, "device_id", text);
  ok = ok && add_string(host, d, HDAL_ATTRIBUTE_UUID, uuid);
  ok = ok && add_string(host, d, "driver_uuid", driver_uuid);
  ok = ok && (!has_pci || add_string(host, d, HDAL_ATTRIBUTE_PCI_BUS_ID, pci));
  if (has_driver) {
    char s[VK_MAX_DRIVER_INFO_SIZE + 1];
    snprintf(s, sizeof s, "%.*s", VK_MAX_DRIVER_NAME_SIZE, drv.driverName);
    ok = ok && add_string(host, d, "driver_name", s);
    snprintf(s, sizeof s, "%.*s", VK_MAX_DRIVER_INFO_SIZE, drv.driverInfo);
    ok = ok && (!s[0] || add_string(host, d, "driver_info", s));
  }
  driver_version_text(props->vendorID, props->driverVersion, text, sizeof text);
  ok = ok && add_string(host, d, "driver_version", text);
  snprintf(text, sizeof text, "%u.%u.%u", VK_API_VERSION_MAJOR(props->apiVersion), VK_API_VERSION_MINOR(props->apiVersion),
           VK_API_VERSION_PATCH(props->apiVersion));
  ok = ok && add_string(host, d, "vulkan_version", text);
  ok = ok && host->add_attribute(d, HDAL_BACKEND_MEMORY_BYTES("memory_bytes"));
  ok = ok && add_uint(host, d, "compute_queue_families", compute_families);
  ok = ok && add_uint(host, d, "compute_queues", compute_queues);
  if (ok && props->deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !has_pci) {
    /* A CPU driver computes on this process's CPUs: hdal-ls pairs it with the CPU devices. */
    char *cpus;
    ok = hdal__process_cpuset(&cpus) &&
         (!cpus || host->add_attribute(d, &(const hdal_backend_attribute){HDAL_ATTRIBUTE_CPUSET,
                                                                          HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY,
                                                                          {.string = cpus}}));
    free(cpus);
  }
  if (!ok) return host->error_oom();
  host->debug(disc, "device %d: %s, %s, %s, %llu bytes device-local, NUMA node %d", index, info.kind,
              type_name(props->deviceType), has_pci ? pci : "no PCI bus id", (unsigned long long)memory, info.numa_node);
  return NULL;
}

static hdal_error *list_devices(const hdal_backend_host *host, hdal_backend_discovery *disc, const vk_api *vk,
                                VkInstance instance, bool cpu_drivers) {
  uint32_t n = 0;
  VkResult r = vk->vkEnumeratePhysicalDevices(instance, &n, NULL);
  /* The loader says so when no driver has a device (rather than 0 devices). */
  if (r == VK_ERROR_INITIALIZATION_FAILED)
    return host->error_new(HDAL_UNAVAILABLE, "no Vulkan device (vkEnumeratePhysicalDevices: %s)", result_name(r));
  if (r != VK_SUCCESS) return vk_error(host, r, "vkEnumeratePhysicalDevices");
  if (n > MAX_DEVICES)
    return host->error_new(HDAL_UNAVAILABLE, "vkEnumeratePhysicalDevices: %u devices, more than %d: a broken driver", n,
                           MAX_DEVICES);
  if (n == 0) return host->error_new(HDAL_UNAVAILABLE, "no Vulkan device (vkEnumeratePhysicalDevices: 0 devices)");
  VkPhysicalDevice *pd = calloc(n, sizeof *pd);
  if (!pd) return host->error_oom();
  r = vk->vkEnumeratePhysicalDevices(instance, &n, pd);
  if (r == VK_INCOMPLETE) r = VK_SUCCESS; /* fewer than counted: those read */
  hdal_error *err = r == VK_SUCCESS ? NULL : vk_error(host, r, "vkEnumeratePhysicalDevices");
  unsigned left_out = 0;
  for (uint32_t i = 0; i < n && !err; i++) err = add_device(host, disc, vk, pd[i], (int)i, cpu_drivers, &left_out);
  free(pd);
  if (!err && left_out == n)
    err = host->error_new(HDAL_UNAVAILABLE, "no Vulkan GPU (%u CPU driver device%s, listed when HDAL_BACKENDS names "
                                            "vulkan)", left_out, left_out == 1 ? "" : "s");
  return err;
}

static hdal_error *vulkan_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  *state = NULL; /* nothing is kept: no buffers, no runtime after discovery */
  /* secure_getenv: a variable that loads code is ignored in setuid programs. */
  const char *library = secure_getenv("HDAL_VULKAN_LIBRARY");
  if (library && !*library) library = NULL;
  /* Why the user asked for Vulkan, if they did: CPU drivers' devices are then listed too. */
  const char *asked = host->named(disc) ? "named in the backend list" : library ? "HDAL_VULKAN_LIBRARY" : drivers_chosen();
  if (!asked && !hdal__device_node_present(gpu_nodes, sizeof gpu_nodes / sizeof gpu_nodes[0])) {
    host->debug(disc, "no GPU device node: the Vulkan loader is not started");
    return host->error_new(HDAL_UNAVAILABLE, "no GPU device node (/dev/dri/renderD*, /dev/nvidiactl, /dev/dxg); CPU "
                                             "drivers such as lavapipe are listed when HDAL_BACKENDS names vulkan");
  }
  vk_api vk;
  memset(&vk, 0, sizeof vk);
  const char *path;
  hdal_error *err = loader_open(host, library, &vk, &path);
  if (err) return err;
  VkInstance instance;
  if ((err = instance_create(host, &vk, path, &instance))) return err;
  host->debug(disc, "%s: instance made (%s)", path, asked ? asked : "a GPU node is there");
  err = list_devices(host, disc, &vk, instance, asked != NULL);
  vk.vkDestroyInstance(instance, NULL);
  return err;
}

HDAL_BACKEND_DEFINE(vulkan) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "vulkan",
    .platform = "vulkan",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = 0, /* IFRT-native: a kDLVulkan tensor is served by no backend (docs/dlpack.md) */
    .discover = vulkan_discover,
    .finalize = NULL,
    .buffer_ops = NULL,
};
