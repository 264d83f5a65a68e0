/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake Vulkan driver (ICD) for the tests of hdal's Vulkan backend: test-only,
 * never installed.  The real Vulkan loader (libvulkan.so.1) loads it through a
 * driver manifest (fakevk_icd.json.in, named by VK_DRIVER_FILES or
 * VK_ICD_FILENAMES), so hdal is tested against the loader it meets in the
 * field.  Written from the loader-driver interface (LoaderDriverInterface.md of
 * KhronosGroup/Vulkan-Loader) and the Vulkan specification; the types are
 * hdal's own (backends/vulkan/vk_api.h) plus the few declared below.
 *
 * Interface version 5: the loader checks the application's apiVersion itself
 * (a driver at 4 or below must refuse anything above 1.0, and loaders warn
 * that a 1.1+ driver needs 5), there are no surfaces to handle (3) and no
 * adapter sorting (6, Windows only).  vk_icdGetPhysicalDeviceProcAddr (4) is
 * exported for completeness; the loader knows every entry point this has.
 *
 * The devices are the fake CUDA driver's (tests/fakes/cuda, tests/fakes/fakegpu.c):
 * same names, UUIDs and PCI addresses, so that tests can match them across
 * backends.  Like NVIDIA's Vulkan driver (and AMD's and Intel's), it honours
 * no visibility variable (CUDA_VISIBLE_DEVICES and the like): it always lists
 * every device of the machine.  Scripted by the environment, read once:
 *   FAKEVK_DEVICES          device count (default 2, at most 8)
 *   FAKEVK_TYPES            comma list per device of discrete, integrated,
 *                           virtual, cpu, other (default and missing: discrete)
 *   FAKEVK_NAMES            comma list (default "Fake GPU <n>")
 *   FAKEVK_PCI_BUS_IDS      comma list "dddd:bb:dd.f" (default 0000:<10+n>:00.0)
 *   FAKEVK_VENDOR_IDS       comma list of PCI vendor ids (default and missing:
 *                           0x10de), so that a device can play an AMD (0x1002)
 *                           or Intel (0x8086) GPU's Vulkan face
 *   FAKEVK_MEMORY           device-local heap bytes (default 16 GiB); a cpu
 *                           device has none (only a 64 GiB host heap) unless set
 *   FAKEVK_NO_PCI=1         no VK_EXT_pci_bus_info (its structure is left alone)
 *   FAKEVK_CREATE_RESULT    non-zero: vkCreateInstance returns it, creating nothing
 *   FAKEVK_ENUMERATE_RESULT negative: vkEnumeratePhysicalDevices (and ...Groups)
 *                           return it, writing nothing; positive: they fill
 *                           normally and return it
 *   FAKEVK_TRACE=1          every entry point called, and every name looked up,
 *                           is written to stderr ("fakevk: ...")
 *
 * Every device: vendorID 0x10de (unless FAKEVK_VENDOR_IDS), deviceID 0x2330 + n, apiVersion 1.3.0,
 * driverVersion 550.54.14 encoded as NVIDIA's (10.8.8.6 bits), deviceUUID
 * fa ce c0 da 00 01 40 00 80 00 00 00 00 00 00 <n>, driverUUID the 16 ASCII
 * bytes "hdal-fakevk-drv1", driverID 0x7fffffff (no registered driver),
 * driverName "fakevk", driverInfo "hdal test driver", conformance 0.0.0.0 (it
 * passed no conformance test).  Memory: heap 0 device-local, heap 1 host (64
 * GiB); types 0 device-local, 1 host-visible|coherent, 2 ...|cached.  Queue
 * families: 0 graphics|compute|transfer x16, 1 compute|transfer x8, 2 transfer
 * x2.  No feature, no format, no image.  A logical device can be created (as
 * vulkaninfo does) but does nothing: it has vkDestroyDevice and nothing else.
 * Instance extension: VK_KHR_get_physical_device_properties2 (vulkaninfo reads
 * the ...2 structures only with it; the loader calls the KHR names for
 * applications of Vulkan 1.0).
 * Device extensions: VK_KHR_driver_properties, VK_EXT_pci_bus_info.
 *
 * No global state changes after the configuration (pthread_once), so it is
 * safe from any thread; every object is freed by its destroy call.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../backends/vulkan/vk_api.h"
#include "../fake_list.h"

#define FAKEVK_EXPORT __attribute__((visibility("default")))

/* ---- what vk_api.h does not declare, from the specification ---- */

#define ICD_LOADER_MAGIC 0x01CDC0DE /* the loader checks it in every dispatchable object */
#define FAKEVK_INTERFACE_VERSION 5u
#define FAKEVK_ERROR_FEATURE_NOT_PRESENT (-8)
#define FAKEVK_ERROR_FORMAT_NOT_SUPPORTED (-11)
#define FAKEVK_MAX_DEVICE_GROUP_SIZE 32
enum {
  FAKEVK_MEMORY_PROPERTY_DEVICE_LOCAL = 0x1,
  FAKEVK_MEMORY_PROPERTY_HOST_VISIBLE = 0x2,
  FAKEVK_MEMORY_PROPERTY_HOST_COHERENT = 0x4,
  FAKEVK_MEMORY_PROPERTY_HOST_CACHED = 0x8,
};

typedef struct VkDevice_T *VkDevice;

/* The head every extensible structure starts with, to walk pNext chains. */
typedef struct {
  VkStructureType sType;
  void *pNext;
} fakevk_base;

typedef struct {
  VkBool32 feature[55]; /* robustBufferAccess ... inheritedQueries */
} VkPhysicalDeviceFeatures;

typedef struct {
  VkStructureType sType;
  void *pNext;
  VkPhysicalDeviceFeatures features;
} VkPhysicalDeviceFeatures2;

typedef struct {
  VkStructureType sType;
  void *pNext;
  VkPhysicalDeviceMemoryProperties memoryProperties;
} VkPhysicalDeviceMemoryProperties2;

typedef struct {
  VkStructureType sType;
  void *pNext;
  VkQueueFamilyProperties queueFamilyProperties;
} VkQueueFamilyProperties2;

typedef struct {
  VkFlags linearTilingFeatures;
  VkFlags optimalTilingFeatures;
  VkFlags bufferFeatures;
} VkFormatProperties;

typedef struct {
  VkStructureType sType;
  void *pNext;
  VkFormatProperties formatProperties;
} VkFormatProperties2;

typedef struct {
  VkStructureType sType;
  void *pNext;
  uint32_t physicalDeviceCount;
  VkPhysicalDevice physicalDevices[FAKEVK_MAX_DEVICE_GROUP_SIZE];
  VkBool32 subsetAllocation;
} VkPhysicalDeviceGroupProperties;

typedef struct {
  VkStructureType sType;
  const void *pNext;
  VkFlags flags;
  uint32_t queueCreateInfoCount;
  const void *pQueueCreateInfos;
  uint32_t enabledLayerCount;
  const char *const *ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char *const *ppEnabledExtensionNames;
  const VkPhysicalDeviceFeatures *pEnabledFeatures;
} VkDeviceCreateInfo;

#if defined(__LP64__)
_Static_assert(sizeof(VkPhysicalDeviceFeatures) == 220, "VkPhysicalDeviceFeatures");
_Static_assert(sizeof(VkPhysicalDeviceFeatures2) == 240, "VkPhysicalDeviceFeatures2");
_Static_assert(sizeof(VkPhysicalDeviceMemoryProperties2) == 536, "VkPhysicalDeviceMemoryProperties2");
_Static_assert(sizeof(VkQueueFamilyProperties2) == 40, "VkQueueFamilyProperties2");
_Static_assert(sizeof(VkFormatProperties2) == 32, "VkFormatProperties2");
_Static_assert(sizeof(VkPhysicalDeviceGroupProperties) == 288, "VkPhysicalDeviceGroupProperties");
_Static_assert(sizeof(VkDeviceCreateInfo) == 72, "VkDeviceCreateInfo");
#endif

/* ---- configuration ---- */

#define FAKEVK_MAX_DEVICES 8
#define FAKEVK_DEFAULT_DEVICES 2
#define FAKEVK_VENDOR_ID 0x10de
#define FAKEVK_FIRST_DEVICE_ID 0x2330
#define FAKEVK_FIRST_BUS 0x10
#define FAKEVK_API_VERSION VK_MAKE_API_VERSION(0, 1, 3, 0)
#define FAKEVK_DRIVER_VERSION ((550u << 22) | (54u << 14) | (14u << 6)) /* NVIDIA's 10.8.8.6 */
#define FAKEVK_DRIVER_ID 0x7fffffffu /* VK_DRIVER_ID_MAX_ENUM: no registered driver */
#define FAKEVK_HOST_HEAP ((VkDeviceSize)64 << 30)
#define FAKEVK_DEFAULT_MEMORY ((VkDeviceSize)16 << 30)

static const uint8_t driver_uuid[VK_UUID_SIZE] = {'h', 'd', 'a', 'l', '-', 'f', 'a', 'k',
                                                  'e', 'v', 'k', '-', 'd', 'r', 'v', '1'};

typedef struct {
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  VkPhysicalDeviceType type;
  unsigned domain, bus, slot, function;
  uint32_t vendor;
  VkDeviceSize device_local; /* 0: no device-local heap */
} fakevk_device;

static struct {
  int ndev;
  fakevk_device devs[FAKEVK_MAX_DEVICES];
  bool no_pci, trace;
  VkResult create_result, enumerate_result;
} config;

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
/* What the loader negotiated; 1 until it does (a loader that does not
 * negotiate speaks version 0 or 1). */
static atomic_uint interface_version = 1;

/* The i-th item of a comma list in variable `var`, or NULL. */
static const char *list_item(const char *var, int i, char *buf, size_t len) {
  return fake_list_item(getenv(var), i, buf, len);
}

static VkPhysicalDeviceType parse_type(const char *s) {
  static const struct {
    const char *name;
    VkPhysicalDeviceType type;
  } types[] = {{"discrete", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU}, {"integrated", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU},
               {"virtual", VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU},   {"cpu", VK_PHYSICAL_DEVICE_TYPE_CPU},
               {"other", VK_PHYSICAL_DEVICE_TYPE_OTHER}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(s, types[i].name)) return types[i].type;
  return VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
}

static void configure(void) {
  const char *e = getenv("FAKEVK_DEVICES");
  int n = e ? atoi(e) : FAKEVK_DEFAULT_DEVICES;
  config.ndev = n < 0 ? 0 : n > FAKEVK_MAX_DEVICES ? FAKEVK_MAX_DEVICES : n;
  config.no_pci = (e = getenv("FAKEVK_NO_PCI")) && !strcmp(e, "1");
  config.trace = (e = getenv("FAKEVK_TRACE")) && !strcmp(e, "1");
  config.create_result = (e = getenv("FAKEVK_CREATE_RESULT")) ? (VkResult)strtol(e, NULL, 0) : VK_SUCCESS;
  config.enumerate_result = (e = getenv("FAKEVK_ENUMERATE_RESULT")) ? (VkResult)strtol(e, NULL, 0) : VK_SUCCESS;
  const char *mem = getenv("FAKEVK_MEMORY");
  for (int i = 0; i < config.ndev; i++) {
    fakevk_device *d = &config.devs[i];
    char buf[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    if (!list_item("FAKEVK_NAMES", i, d->name, sizeof d->name)) snprintf(d->name, sizeof d->name, "Fake GPU %d", i);
    d->type = list_item("FAKEVK_TYPES", i, buf, sizeof buf) ? parse_type(buf) : VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    d->bus = FAKEVK_FIRST_BUS + (unsigned)i; /* domain, slot, function 0 */
    d->vendor = list_item("FAKEVK_VENDOR_IDS", i, buf, sizeof buf) ? (uint32_t)strtoul(buf, NULL, 0) : FAKEVK_VENDOR_ID;
    if (list_item("FAKEVK_PCI_BUS_IDS", i, buf, sizeof buf))
      sscanf(buf, "%x:%x:%x.%x", &d->domain, &d->bus, &d->slot, &d->function);
    /* A CPU's memory is the host's: no device-local heap unless asked for. */
    d->device_local = mem ? strtoull(mem, NULL, 0) : d->type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : FAKEVK_DEFAULT_MEMORY;
  }
}

/* One write a line, so that threads' lines do not mix. */
__attribute__((format(printf, 1, 2))) static void trace(const char *format, ...) {
  if (!config.trace) return;
  char line[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  fprintf(stderr, "fakevk: %s\n", line);
}

/* Every entry point starts with it: configuration first, then the trace
 * (with the Vulkan name: fake_CreateInstance is vkCreateInstance). */
#define ENTER() (pthread_once(&config_once, configure), trace_call(__func__))
static void trace_call(const char *func) {
  if (!strncmp(func, "fake_", 5))
    trace("vk%s", func + 5);
  else
    trace("%s", func);
}

/* ---- dispatchable objects: the loader's slot first, set to ICD_LOADER_MAGIC ---- */

struct VkPhysicalDevice_T {
  void *loader_data;
  struct VkInstance_T *instance;
  int index;
};

struct VkInstance_T {
  void *loader_data;
  int ndev;
  struct VkPhysicalDevice_T devices[FAKEVK_MAX_DEVICES];
};

struct VkDevice_T {
  void *loader_data;
  VkPhysicalDevice physical;
};

#define LOADER_MAGIC ((void *)(uintptr_t)ICD_LOADER_MAGIC)

static const fakevk_device *device_of(VkPhysicalDevice p) { return &config.devs[p->index]; }

/* The enumeration idiom: no array, the count; an array, at most *count items
 * and VK_INCOMPLETE when they were not all. */
static VkResult enumerate(uint32_t *count, void *out, const void *items, uint32_t n, size_t size) {
  if (!out) {
    *count = n;
    return VK_SUCCESS;
  }
  uint32_t k = *count < n ? *count : n;
  if (k) memcpy(out, items, k * size);
  *count = k;
  return k < n ? VK_INCOMPLETE : VK_SUCCESS;
}

/* ---- extensions ---- */

static const VkExtensionProperties instance_extensions[] = {
    {"VK_KHR_get_physical_device_properties2", 2},
};

static const VkExtensionProperties device_extensions[] = {
    {"VK_KHR_driver_properties", 1},
    {"VK_EXT_pci_bus_info", 2}, /* last: FAKEVK_NO_PCI leaves it out */
};

static uint32_t device_extension_count(void) {
  uint32_t n = sizeof device_extensions / sizeof device_extensions[0];
  return config.no_pci ? n - 1 : n;
}

static bool offered(const char *name, const VkExtensionProperties *list, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!strcmp(name, list[i].extensionName)) return true;
  return false;
}

static VkResult fake_EnumerateInstanceExtensionProperties(const char *layer, uint32_t *count,
                                                          VkExtensionProperties *properties) {
  ENTER();
  if (layer) return VK_ERROR_LAYER_NOT_PRESENT; /* a driver has no layer */
  return enumerate(count, properties, instance_extensions, sizeof instance_extensions / sizeof instance_extensions[0],
                   sizeof(VkExtensionProperties));
}

static VkResult fake_EnumerateDeviceExtensionProperties(VkPhysicalDevice physical, const char *layer, uint32_t *count,
                                                        VkExtensionProperties *properties) {
  ENTER();
  (void)physical;
  if (layer) return VK_ERROR_LAYER_NOT_PRESENT;
  return enumerate(count, properties, device_extensions, device_extension_count(), sizeof(VkExtensionProperties));
}

/* ---- instance ---- */

static VkResult fake_EnumerateInstanceVersion(uint32_t *version) {
  ENTER();
  *version = FAKEVK_API_VERSION;
  return VK_SUCCESS;
}

static VkResult fake_CreateInstance(const VkInstanceCreateInfo *info, const void *allocator, VkInstance *instance) {
  ENTER();
  (void)allocator; /* malloc and free throughout, which is all the loader needs */
  if (config.create_result != VK_SUCCESS) return config.create_result;
  /* Below interface 5 the loader does not check the version: a 1.0 loader. */
  if (atomic_load(&interface_version) < 5 && info->pApplicationInfo &&
      info->pApplicationInfo->apiVersion > VK_API_VERSION_1_0)
    return VK_ERROR_INCOMPATIBLE_DRIVER;
  for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
    if (!offered(info->ppEnabledExtensionNames[i], instance_extensions,
                 sizeof instance_extensions / sizeof instance_extensions[0]))
      return VK_ERROR_EXTENSION_NOT_PRESENT;
  struct VkInstance_T *inst = calloc(1, sizeof *inst);
  if (!inst) return VK_ERROR_OUT_OF_HOST_MEMORY;
  inst->loader_data = LOADER_MAGIC;
  inst->ndev = config.ndev;
  for (int i = 0; i < inst->ndev; i++)
    inst->devices[i] = (struct VkPhysicalDevice_T){.loader_data = LOADER_MAGIC, .instance = inst, .index = i};
  *instance = inst;
  return VK_SUCCESS;
}

static void fake_DestroyInstance(VkInstance instance, const void *allocator) {
  ENTER();
  (void)allocator;
  free(instance);
}

static VkResult fake_EnumeratePhysicalDevices(VkInstance instance, uint32_t *count, VkPhysicalDevice *devices) {
  ENTER();
  if (config.enumerate_result < 0) return config.enumerate_result;
  VkPhysicalDevice all[FAKEVK_MAX_DEVICES];
  for (int i = 0; i < instance->ndev; i++) all[i] = &instance->devices[i];
  VkResult r = enumerate(count, devices, all, (uint32_t)instance->ndev, sizeof all[0]);
  return config.enumerate_result > 0 ? config.enumerate_result : r;
}

/* One group per device: none is linked to another. */
static VkResult fake_EnumeratePhysicalDeviceGroups(VkInstance instance, uint32_t *count,
                                                   VkPhysicalDeviceGroupProperties *groups) {
  ENTER();
  if (config.enumerate_result < 0) return config.enumerate_result;
  uint32_t n = (uint32_t)instance->ndev;
  VkResult r = VK_SUCCESS;
  if (!groups) {
    *count = n;
  } else {
    if (*count < n) {
      n = *count;
      r = VK_INCOMPLETE;
    }
    for (uint32_t i = 0; i < n; i++) {
      groups[i].physicalDeviceCount = 1;
      memset(groups[i].physicalDevices, 0, sizeof groups[i].physicalDevices);
      groups[i].physicalDevices[0] = &instance->devices[i];
      groups[i].subsetAllocation = 0; /* must be with a single device */
    }
    *count = n;
  }
  return config.enumerate_result > 0 ? config.enumerate_result : r;
}

/* ---- physical device ---- */

static void fake_GetPhysicalDeviceProperties(VkPhysicalDevice physical, VkPhysicalDeviceProperties *p) {
  ENTER();
  const fakevk_device *d = device_of(physical);
  memset(p, 0, sizeof *p); /* limits and sparse properties: none */
  p->apiVersion = FAKEVK_API_VERSION;
  p->driverVersion = FAKEVK_DRIVER_VERSION;
  p->vendorID = d->vendor;
  p->deviceID = FAKEVK_FIRST_DEVICE_ID + (uint32_t)physical->index;
  p->deviceType = d->type;
  snprintf(p->deviceName, sizeof p->deviceName, "%s", d->name);
  memcpy(p->pipelineCacheUUID, driver_uuid, VK_UUID_SIZE);
}

/* The structures the chain may hold that this driver knows; others are left as they are. */
static void fill_properties_chain(VkPhysicalDevice physical, void *next) {
  const fakevk_device *d = device_of(physical);
  for (fakevk_base *s = next; s; s = s->pNext) {
    switch ((int)s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES: {
      VkPhysicalDeviceIDProperties *id = (VkPhysicalDeviceIDProperties *)s;
      static const uint8_t uuid[VK_UUID_SIZE] = {0xfa, 0xce, 0xc0, 0xda, 0x00, 0x01, 0x40, 0x00,
                                                 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
      memcpy(id->deviceUUID, uuid, VK_UUID_SIZE);
      id->deviceUUID[15] = (uint8_t)physical->index;
      memcpy(id->driverUUID, driver_uuid, VK_UUID_SIZE);
      memset(id->deviceLUID, 0, VK_LUID_SIZE); /* LUIDs are Windows' */
      id->deviceNodeMask = 0;
      id->deviceLUIDValid = 0;
      break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES: {
      VkPhysicalDeviceDriverProperties *dp = (VkPhysicalDeviceDriverProperties *)s;
      dp->driverID = FAKEVK_DRIVER_ID;
      snprintf(dp->driverName, sizeof dp->driverName, "fakevk");
      snprintf(dp->driverInfo, sizeof dp->driverInfo, "hdal test driver");
      dp->conformanceVersion = (VkConformanceVersion){0, 0, 0, 0};
      break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT:
      if (!config.no_pci) { /* without the extension, a structure this driver does not know */
        VkPhysicalDevicePCIBusInfoPropertiesEXT *pci = (VkPhysicalDevicePCIBusInfoPropertiesEXT *)s;
        pci->pciDomain = d->domain;
        pci->pciBus = d->bus;
        pci->pciDevice = d->slot;
        pci->pciFunction = d->function;
      }
      break;
    default:
      break;
    }
  }
}

static void fake_GetPhysicalDeviceProperties2(VkPhysicalDevice physical, VkPhysicalDeviceProperties2 *p) {
  ENTER();
  fake_GetPhysicalDeviceProperties(physical, &p->properties);
  fill_properties_chain(physical, p->pNext);
}

static void fake_GetPhysicalDeviceMemoryProperties(VkPhysicalDevice physical, VkPhysicalDeviceMemoryProperties *m) {
  ENTER();
  const fakevk_device *d = device_of(physical);
  const VkFlags host = FAKEVK_MEMORY_PROPERTY_HOST_VISIBLE | FAKEVK_MEMORY_PROPERTY_HOST_COHERENT;
  memset(m, 0, sizeof *m);
  uint32_t host_heap = 0;
  if (d->device_local) {
    m->memoryHeaps[m->memoryHeapCount++] = (VkMemoryHeap){d->device_local, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
    m->memoryTypes[m->memoryTypeCount++] = (VkMemoryType){FAKEVK_MEMORY_PROPERTY_DEVICE_LOCAL, 0};
    host_heap = 1;
  }
  m->memoryHeaps[m->memoryHeapCount++] = (VkMemoryHeap){FAKEVK_HOST_HEAP, 0};
  m->memoryTypes[m->memoryTypeCount++] = (VkMemoryType){host, host_heap};
  m->memoryTypes[m->memoryTypeCount++] = (VkMemoryType){host | FAKEVK_MEMORY_PROPERTY_HOST_CACHED, host_heap};
}

static void fake_GetPhysicalDeviceMemoryProperties2(VkPhysicalDevice physical, VkPhysicalDeviceMemoryProperties2 *m) {
  ENTER();
  fake_GetPhysicalDeviceMemoryProperties(physical, &m->memoryProperties);
}

static const VkQueueFamilyProperties queue_families[] = {
    {VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT, 16, 64, {1, 1, 1}},
    {VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT, 8, 64, {1, 1, 1}},
    {VK_QUEUE_TRANSFER_BIT, 2, 64, {1, 1, 1}},
};
#define NFAMILIES ((uint32_t)(sizeof queue_families / sizeof queue_families[0]))

static void fake_GetPhysicalDeviceQueueFamilyProperties(VkPhysicalDevice physical, uint32_t *count,
                                                        VkQueueFamilyProperties *families) {
  ENTER();
  (void)physical;
  enumerate(count, families, queue_families, NFAMILIES, sizeof queue_families[0]);
}

/* The same, into the caller's structures, keeping their sType and pNext. */
static void fake_GetPhysicalDeviceQueueFamilyProperties2(VkPhysicalDevice physical, uint32_t *count,
                                                         VkQueueFamilyProperties2 *families) {
  ENTER();
  (void)physical;
  if (!families) {
    *count = NFAMILIES;
    return;
  }
  if (*count > NFAMILIES) *count = NFAMILIES;
  for (uint32_t i = 0; i < *count; i++) families[i].queueFamilyProperties = queue_families[i];
}

static void fake_GetPhysicalDeviceFeatures(VkPhysicalDevice physical, VkPhysicalDeviceFeatures *f) {
  ENTER();
  (void)physical;
  memset(f, 0, sizeof *f);
}

static void fake_GetPhysicalDeviceFeatures2(VkPhysicalDevice physical, VkPhysicalDeviceFeatures2 *f) {
  ENTER();
  fake_GetPhysicalDeviceFeatures(physical, &f->features);
}

/* No format has any feature, no image can be made. */
static void fake_GetPhysicalDeviceFormatProperties(VkPhysicalDevice physical, int32_t format, VkFormatProperties *p) {
  ENTER();
  (void)physical, (void)format;
  memset(p, 0, sizeof *p);
}

static void fake_GetPhysicalDeviceFormatProperties2(VkPhysicalDevice physical, int32_t format, VkFormatProperties2 *p) {
  ENTER();
  fake_GetPhysicalDeviceFormatProperties(physical, format, &p->formatProperties);
}

static VkResult fake_GetPhysicalDeviceImageFormatProperties(VkPhysicalDevice physical, int32_t format, int32_t type,
                                                            int32_t tiling, VkFlags usage, VkFlags flags, void *p) {
  ENTER();
  (void)physical, (void)format, (void)type, (void)tiling, (void)usage, (void)flags, (void)p;
  return FAKEVK_ERROR_FORMAT_NOT_SUPPORTED;
}

static VkResult fake_GetPhysicalDeviceImageFormatProperties2(VkPhysicalDevice physical, const void *info, void *p) {
  ENTER();
  (void)physical, (void)info, (void)p;
  return FAKEVK_ERROR_FORMAT_NOT_SUPPORTED;
}

static void fake_GetPhysicalDeviceSparseImageFormatProperties(VkPhysicalDevice physical, int32_t format, int32_t type,
                                                              int32_t samples, VkFlags usage, int32_t tiling,
                                                              uint32_t *count, void *p) {
  ENTER();
  (void)physical, (void)format, (void)type, (void)samples, (void)usage, (void)tiling, (void)p;
  *count = 0;
}

static void fake_GetPhysicalDeviceSparseImageFormatProperties2(VkPhysicalDevice physical, const void *info,
                                                               uint32_t *count, void *p) {
  ENTER();
  (void)physical, (void)info, (void)p;
  *count = 0;
}

/* Vulkan 1.3's: no tool is active. */
static VkResult fake_GetPhysicalDeviceToolProperties(VkPhysicalDevice physical, uint32_t *count, void *p) {
  ENTER();
  (void)physical, (void)p;
  *count = 0;
  return VK_SUCCESS;
}

/* ---- logical device: only made and destroyed (the loader requires
 * vkCreateDevice of a driver; vulkaninfo makes one per device) ---- */

static PFN_vkVoidFunction fake_GetDeviceProcAddr(VkDevice device, const char *name);

static VkResult fake_CreateDevice(VkPhysicalDevice physical, const VkDeviceCreateInfo *info, const void *allocator,
                                  VkDevice *device) {
  ENTER();
  (void)allocator;
  for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
    if (!offered(info->ppEnabledExtensionNames[i], device_extensions, device_extension_count()))
      return VK_ERROR_EXTENSION_NOT_PRESENT;
  if (info->pEnabledFeatures) /* none is supported */
    for (size_t i = 0; i < sizeof info->pEnabledFeatures->feature / sizeof info->pEnabledFeatures->feature[0]; i++)
      if (info->pEnabledFeatures->feature[i]) return FAKEVK_ERROR_FEATURE_NOT_PRESENT;
  struct VkDevice_T *dev = malloc(sizeof *dev);
  if (!dev) return VK_ERROR_OUT_OF_HOST_MEMORY;
  *dev = (struct VkDevice_T){.loader_data = LOADER_MAGIC, .physical = physical};
  *device = dev;
  return VK_SUCCESS;
}

static void fake_DestroyDevice(VkDevice device, const void *allocator) {
  ENTER();
  (void)allocator;
  free(device);
}

/* ---- entry points by name ---- */

FAKEVK_EXPORT PFN_vkVoidFunction vk_icdGetInstanceProcAddr(VkInstance instance, const char *name);

enum { GLOBAL, INSTANCE, PHYSICAL, DEVICE }; /* the level, by the first parameter */

#define FN(name, level, fn) {name, level, (PFN_vkVoidFunction)(fn)}
static const struct {
  const char *name;
  int level;
  PFN_vkVoidFunction fn;
} entry_points[] = {
    FN("vkCreateInstance", GLOBAL, fake_CreateInstance),
    FN("vkEnumerateInstanceExtensionProperties", GLOBAL, fake_EnumerateInstanceExtensionProperties),
    FN("vkEnumerateInstanceVersion", GLOBAL, fake_EnumerateInstanceVersion),
    FN("vkGetInstanceProcAddr", GLOBAL, vk_icdGetInstanceProcAddr),
    FN("vkDestroyInstance", INSTANCE, fake_DestroyInstance),
    FN("vkEnumeratePhysicalDevices", INSTANCE, fake_EnumeratePhysicalDevices),
    FN("vkEnumeratePhysicalDeviceGroups", INSTANCE, fake_EnumeratePhysicalDeviceGroups),
    FN("vkGetPhysicalDeviceProperties", PHYSICAL, fake_GetPhysicalDeviceProperties),
    FN("vkGetPhysicalDeviceProperties2", PHYSICAL, fake_GetPhysicalDeviceProperties2),
    FN("vkGetPhysicalDeviceProperties2KHR", PHYSICAL, fake_GetPhysicalDeviceProperties2),
    FN("vkGetPhysicalDeviceMemoryProperties", PHYSICAL, fake_GetPhysicalDeviceMemoryProperties),
    FN("vkGetPhysicalDeviceMemoryProperties2", PHYSICAL, fake_GetPhysicalDeviceMemoryProperties2),
    FN("vkGetPhysicalDeviceMemoryProperties2KHR", PHYSICAL, fake_GetPhysicalDeviceMemoryProperties2),
    FN("vkGetPhysicalDeviceQueueFamilyProperties", PHYSICAL, fake_GetPhysicalDeviceQueueFamilyProperties),
    FN("vkGetPhysicalDeviceQueueFamilyProperties2", PHYSICAL, fake_GetPhysicalDeviceQueueFamilyProperties2),
    FN("vkGetPhysicalDeviceQueueFamilyProperties2KHR", PHYSICAL, fake_GetPhysicalDeviceQueueFamilyProperties2),
    FN("vkGetPhysicalDeviceFeatures", PHYSICAL, fake_GetPhysicalDeviceFeatures),
    FN("vkGetPhysicalDeviceFeatures2", PHYSICAL, fake_GetPhysicalDeviceFeatures2),
    FN("vkGetPhysicalDeviceFeatures2KHR", PHYSICAL, fake_GetPhysicalDeviceFeatures2),
    FN("vkGetPhysicalDeviceFormatProperties", PHYSICAL, fake_GetPhysicalDeviceFormatProperties),
    FN("vkGetPhysicalDeviceFormatProperties2", PHYSICAL, fake_GetPhysicalDeviceFormatProperties2),
    FN("vkGetPhysicalDeviceFormatProperties2KHR", PHYSICAL, fake_GetPhysicalDeviceFormatProperties2),
    FN("vkGetPhysicalDeviceImageFormatProperties", PHYSICAL, fake_GetPhysicalDeviceImageFormatProperties),
    FN("vkGetPhysicalDeviceImageFormatProperties2", PHYSICAL, fake_GetPhysicalDeviceImageFormatProperties2),
    FN("vkGetPhysicalDeviceImageFormatProperties2KHR", PHYSICAL, fake_GetPhysicalDeviceImageFormatProperties2),
    FN("vkGetPhysicalDeviceSparseImageFormatProperties", PHYSICAL, fake_GetPhysicalDeviceSparseImageFormatProperties),
    FN("vkGetPhysicalDeviceSparseImageFormatProperties2", PHYSICAL, fake_GetPhysicalDeviceSparseImageFormatProperties2),
    FN("vkGetPhysicalDeviceSparseImageFormatProperties2KHR", PHYSICAL,
       fake_GetPhysicalDeviceSparseImageFormatProperties2),
    FN("vkGetPhysicalDeviceToolProperties", PHYSICAL, fake_GetPhysicalDeviceToolProperties),
    FN("vkEnumerateDeviceExtensionProperties", PHYSICAL, fake_EnumerateDeviceExtensionProperties),
    FN("vkCreateDevice", PHYSICAL, fake_CreateDevice),
    FN("vkGetDeviceProcAddr", DEVICE, fake_GetDeviceProcAddr),
    FN("vkDestroyDevice", DEVICE, fake_DestroyDevice),
};
#undef FN

/* The entry point `name` of one of the levels in the `levels` mask, or NULL. */
static PFN_vkVoidFunction lookup(const char *name, unsigned levels) {
  PFN_vkVoidFunction fn = NULL;
  if (name)
    for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++)
      if ((levels & (1u << entry_points[i].level)) && !strcmp(name, entry_points[i].name)) {
        fn = entry_points[i].fn;
        break;
      }
  trace("  lookup %s%s", name ? name : "(null)", fn ? "" : ": NULL");
  return fn;
}

static PFN_vkVoidFunction fake_GetDeviceProcAddr(VkDevice device, const char *name) {
  (void)device;
  pthread_once(&config_once, configure);
  return lookup(name, 1u << DEVICE);
}

/* ---- the three exports ---- */

FAKEVK_EXPORT VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version) {
  ENTER();
  if (*version < 2) return VK_ERROR_INCOMPATIBLE_DRIVER; /* a loader that does not negotiate never calls */
  uint32_t offered_version = *version;
  if (*version > FAKEVK_INTERFACE_VERSION) *version = FAKEVK_INTERFACE_VERSION;
  atomic_store(&interface_version, *version);
  trace("  interface version %u (the loader's: %u)", *version, offered_version);
  return VK_SUCCESS;
}

/* Without an instance, only the global commands; with one, every command
 * (device ones too, as vkGetInstanceProcAddr gives them). */
FAKEVK_EXPORT PFN_vkVoidFunction vk_icdGetInstanceProcAddr(VkInstance instance, const char *name) {
  pthread_once(&config_once, configure);
  return lookup(name, instance ? ~0u : 1u << GLOBAL);
}

/* Only the commands whose first parameter is a VkPhysicalDevice. */
FAKEVK_EXPORT PFN_vkVoidFunction vk_icdGetPhysicalDeviceProcAddr(VkInstance instance, const char *name) {
  (void)instance;
  pthread_once(&config_once, configure);
  return lookup(name, 1u << PHYSICAL);
}
