/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Vulkan backend — the part of the Vulkan 1.1 API it calls, written from
 * the specification (nothing of Vulkan is needed to build hdal).  The module
 * opens the loader, libvulkan.so.1, and asks it for every other entry point
 * through vkGetInstanceProcAddr, as the specification says applications do.
 * The fake driver of the tests (tests/fakes/vk/) uses the same definitions.
 *
 * Only what discovery reads is declared; the structures hdal never looks
 * inside (the device limits) are sized, not spelled out.
 */
#ifndef HDAL_VK_API_H
#define HDAL_VK_API_H

#include <stdint.h>

#define HDAL__VK_CALL /* the Linux calling convention: the platform's default */

typedef int32_t VkResult;
enum {
  VK_SUCCESS = 0,
  VK_INCOMPLETE = 5,
  VK_ERROR_OUT_OF_HOST_MEMORY = -1,
  VK_ERROR_OUT_OF_DEVICE_MEMORY = -2,
  VK_ERROR_INITIALIZATION_FAILED = -3,
  VK_ERROR_DEVICE_LOST = -4,
  VK_ERROR_LAYER_NOT_PRESENT = -6,
  VK_ERROR_EXTENSION_NOT_PRESENT = -7,
  VK_ERROR_INCOMPATIBLE_DRIVER = -9,
  VK_ERROR_UNKNOWN = -13,
};

typedef uint32_t VkFlags;
typedef uint32_t VkBool32;
typedef uint64_t VkDeviceSize;
typedef struct VkInstance_T *VkInstance;
typedef struct VkPhysicalDevice_T *VkPhysicalDevice;
typedef void(HDAL__VK_CALL *PFN_vkVoidFunction)(void);

#define VK_MAKE_API_VERSION(variant, major, minor, patch) \
  ((((uint32_t)(variant)) << 29) | (((uint32_t)(major)) << 22) | (((uint32_t)(minor)) << 12) | ((uint32_t)(patch)))
#define VK_API_VERSION_1_0 VK_MAKE_API_VERSION(0, 1, 0, 0)
#define VK_API_VERSION_1_1 VK_MAKE_API_VERSION(0, 1, 1, 0)
#define VK_API_VERSION_1_2 VK_MAKE_API_VERSION(0, 1, 2, 0)
#define VK_API_VERSION_MAJOR(v) (((uint32_t)(v) >> 22) & 0x7fu)
#define VK_API_VERSION_MINOR(v) (((uint32_t)(v) >> 12) & 0x3ffu)
#define VK_API_VERSION_PATCH(v) ((uint32_t)(v) & 0xfffu)

typedef enum {
  VK_STRUCTURE_TYPE_APPLICATION_INFO = 0,
  VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1,
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001,
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004,
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000,
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT = 1000212000,
  VK_STRUCTURE_TYPE_MAX_ENUM = 0x7fffffff,
} VkStructureType;

typedef enum {
  VK_PHYSICAL_DEVICE_TYPE_OTHER = 0,
  VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU = 1,
  VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU = 2,
  VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU = 3,
  VK_PHYSICAL_DEVICE_TYPE_CPU = 4,
  VK_PHYSICAL_DEVICE_TYPE_MAX_ENUM = 0x7fffffff,
} VkPhysicalDeviceType;

enum { VK_MEMORY_HEAP_DEVICE_LOCAL_BIT = 0x1 };
enum { VK_QUEUE_GRAPHICS_BIT = 0x1, VK_QUEUE_COMPUTE_BIT = 0x2, VK_QUEUE_TRANSFER_BIT = 0x4 };

#define VK_MAX_PHYSICAL_DEVICE_NAME_SIZE 256
#define VK_UUID_SIZE 16
#define VK_LUID_SIZE 8
#define VK_MAX_EXTENSION_NAME_SIZE 256
#define VK_MAX_DRIVER_NAME_SIZE 256
#define VK_MAX_DRIVER_INFO_SIZE 256
#define VK_MAX_MEMORY_TYPES 32
#define VK_MAX_MEMORY_HEAPS 16

typedef struct {
  VkStructureType sType;
  const void *pNext;
  const char *pApplicationName;
  uint32_t applicationVersion;
  const char *pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
} VkApplicationInfo;

typedef struct {
  VkStructureType sType;
  const void *pNext;
  VkFlags flags;
  const VkApplicationInfo *pApplicationInfo;
  uint32_t enabledLayerCount;
  const char *const *ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char *const *ppEnabledExtensionNames;
} VkInstanceCreateInfo;

/* VkPhysicalDeviceLimits: 504 bytes hdal does not read, 8-byte aligned (it
 * holds VkDeviceSize members). */
typedef struct {
  uint64_t opaque[63];
} VkPhysicalDeviceLimits;

typedef struct {
  VkBool32 residency[5];
} VkPhysicalDeviceSparseProperties;

typedef struct {
  uint32_t apiVersion;
  uint32_t driverVersion;
  uint32_t vendorID;
  uint32_t deviceID;
  VkPhysicalDeviceType deviceType;
  char deviceName[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  uint8_t pipelineCacheUUID[VK_UUID_SIZE];
  VkPhysicalDeviceLimits limits;
  VkPhysicalDeviceSparseProperties sparseProperties;
} VkPhysicalDeviceProperties;

typedef struct {
  VkStructureType sType;
  void *pNext;
  VkPhysicalDeviceProperties properties;
} VkPhysicalDeviceProperties2;

typedef struct {
  VkStructureType sType;
  void *pNext;
  uint8_t deviceUUID[VK_UUID_SIZE];
  uint8_t driverUUID[VK_UUID_SIZE];
  uint8_t deviceLUID[VK_LUID_SIZE];
  uint32_t deviceNodeMask;
  VkBool32 deviceLUIDValid;
} VkPhysicalDeviceIDProperties;

typedef struct {
  uint8_t major, minor, subminor, patch;
} VkConformanceVersion;

/* Vulkan 1.2, or VK_KHR_driver_properties. */
typedef struct {
  VkStructureType sType;
  void *pNext;
  uint32_t driverID;
  char driverName[VK_MAX_DRIVER_NAME_SIZE];
  char driverInfo[VK_MAX_DRIVER_INFO_SIZE];
  VkConformanceVersion conformanceVersion;
} VkPhysicalDeviceDriverProperties;

/* VK_EXT_pci_bus_info. */
typedef struct {
  VkStructureType sType;
  void *pNext;
  uint32_t pciDomain;
  uint32_t pciBus;
  uint32_t pciDevice;
  uint32_t pciFunction;
} VkPhysicalDevicePCIBusInfoPropertiesEXT;

typedef struct {
  VkFlags propertyFlags;
  uint32_t heapIndex;
} VkMemoryType;

typedef struct {
  VkDeviceSize size;
  VkFlags flags;
} VkMemoryHeap;

typedef struct {
  uint32_t memoryTypeCount;
  VkMemoryType memoryTypes[VK_MAX_MEMORY_TYPES];
  uint32_t memoryHeapCount;
  VkMemoryHeap memoryHeaps[VK_MAX_MEMORY_HEAPS];
} VkPhysicalDeviceMemoryProperties;

typedef struct {
  uint32_t width, height, depth;
} VkExtent3D;

typedef struct {
  VkFlags queueFlags;
  uint32_t queueCount;
  uint32_t timestampValidBits;
  VkExtent3D minImageTransferGranularity;
} VkQueueFamilyProperties;

typedef struct {
  char extensionName[VK_MAX_EXTENSION_NAME_SIZE];
  uint32_t specVersion;
} VkExtensionProperties;

#if defined(__LP64__)
/* The sizes of the specification's headers on LP64 Linux (vulkan_core.h 1.3). */
_Static_assert(sizeof(VkPhysicalDeviceProperties) == 824, "VkPhysicalDeviceProperties");
_Static_assert(sizeof(VkPhysicalDeviceProperties2) == 840, "VkPhysicalDeviceProperties2");
_Static_assert(sizeof(VkPhysicalDeviceIDProperties) == 64, "VkPhysicalDeviceIDProperties");
_Static_assert(sizeof(VkPhysicalDeviceDriverProperties) == 536, "VkPhysicalDeviceDriverProperties");
_Static_assert(sizeof(VkPhysicalDevicePCIBusInfoPropertiesEXT) == 32, "VkPhysicalDevicePCIBusInfoPropertiesEXT");
_Static_assert(sizeof(VkPhysicalDeviceMemoryProperties) == 520, "VkPhysicalDeviceMemoryProperties");
_Static_assert(sizeof(VkQueueFamilyProperties) == 24, "VkQueueFamilyProperties");
_Static_assert(sizeof(VkExtensionProperties) == 260, "VkExtensionProperties");
_Static_assert(sizeof(VkApplicationInfo) == 48 && sizeof(VkInstanceCreateInfo) == 64, "VkInstanceCreateInfo");
#endif

/* The entry points discovery calls: X(name, return type, parameters).  Global
 * ones are asked of vkGetInstanceProcAddr(NULL, ...), the others of the instance. */
#define HDAL__VK_GLOBAL_FUNCTIONS(X)                                                                         \
  X(vkCreateInstance, VkResult, (const VkInstanceCreateInfo *, const void *allocator, VkInstance *))          \
  X(vkEnumerateInstanceVersion, VkResult, (uint32_t *))
#define HDAL__VK_INSTANCE_FUNCTIONS(X)                                                                       \
  X(vkDestroyInstance, void, (VkInstance, const void *allocator))                                             \
  X(vkEnumeratePhysicalDevices, VkResult, (VkInstance, uint32_t *, VkPhysicalDevice *))                       \
  X(vkGetPhysicalDeviceProperties2, void, (VkPhysicalDevice, VkPhysicalDeviceProperties2 *))                  \
  X(vkGetPhysicalDeviceMemoryProperties, void, (VkPhysicalDevice, VkPhysicalDeviceMemoryProperties *))        \
  X(vkGetPhysicalDeviceQueueFamilyProperties, void, (VkPhysicalDevice, uint32_t *, VkQueueFamilyProperties *)) \
  X(vkEnumerateDeviceExtensionProperties, VkResult,                                                           \
    (VkPhysicalDevice, const char *layer, uint32_t *, VkExtensionProperties *))

typedef PFN_vkVoidFunction(HDAL__VK_CALL *PFN_vkGetInstanceProcAddr)(VkInstance, const char *);

#endif /* HDAL_VK_API_H */
