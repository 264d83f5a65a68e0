/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Level Zero backend — the subset of the Level Zero API it uses,
 * declared here from the oneAPI Level Zero specification (API 1.4, the
 * loader 1.8 of Debian 12), with the specification's names.
 *
 * No Level Zero header or library is needed to build hdal: the loader
 * (libze_loader.so.1) is opened at run time and its entry points looked up by
 * name.  Only what hdal reads or fills is declared; every struct below is the
 * specification's layout, whole, since the driver writes all of it.  The fake
 * driver of the tests (tests/fakes/ze/) includes this header too.
 */
#ifndef HDAL_ZE_API_H
#define HDAL_ZE_API_H

#include <stddef.h>
#include <stdint.h>

typedef int ze_result_t; /* an enum in the specification: int-sized, values below 2^31 */
enum {
  ZE_RESULT_SUCCESS = 0,
  ZE_RESULT_NOT_READY = 1,
  ZE_RESULT_ERROR_DEVICE_LOST = 0x70000001,
  ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY = 0x70000002,
  ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY = 0x70000003,
  ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET = 0x70000006,
  ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE = 0x70000007,
  ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS = 0x70010000,
  ZE_RESULT_ERROR_NOT_AVAILABLE = 0x70010001,
  ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE = 0x70020000,
  ZE_RESULT_ERROR_UNINITIALIZED = 0x78000001,
  ZE_RESULT_ERROR_UNSUPPORTED_VERSION = 0x78000002,
  ZE_RESULT_ERROR_UNSUPPORTED_FEATURE = 0x78000003,
  ZE_RESULT_ERROR_INVALID_ARGUMENT = 0x78000004,
  ZE_RESULT_ERROR_INVALID_NULL_HANDLE = 0x78000005,
  ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE = 0x78000006,
  ZE_RESULT_ERROR_INVALID_NULL_POINTER = 0x78000007,
  ZE_RESULT_ERROR_INVALID_SIZE = 0x78000008,
  ZE_RESULT_ERROR_UNSUPPORTED_SIZE = 0x78000009,
  ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT = 0x7800000a,
  ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT = 0x7800000b,
  ZE_RESULT_ERROR_INVALID_ENUMERATION = 0x7800000c,
  ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION = 0x7800000d,
  ZE_RESULT_ERROR_OVERLAPPING_REGIONS = 0x7800001a,
  ZE_RESULT_ERROR_UNKNOWN = 0x7ffffffe,
};

/* ze_api_version_t: major << 16 | minor. */
typedef uint32_t ze_api_version_t;
#define ZE_MAKE_VERSION(major, minor) (((major) << 16) | ((minor) & 0x0000ffff))
#define ZE_MAJOR_VERSION(v) ((v) >> 16)
#define ZE_MINOR_VERSION(v) ((v) & 0x0000ffff)
#define ZE_API_VERSION_1_4 ZE_MAKE_VERSION(1, 4)

typedef struct _ze_driver_handle_t *ze_driver_handle_t;
typedef struct _ze_device_handle_t *ze_device_handle_t;
typedef struct _ze_context_handle_t *ze_context_handle_t;
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_event_pool_handle_t *ze_event_pool_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;

typedef uint32_t ze_structure_type_t;
typedef uint8_t ze_bool_t; /* 0 false, else true */
enum {
  ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES = 0x1,
  ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3,
  ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES = 0x7,
  ZE_STRUCTURE_TYPE_CONTEXT_DESC = 0xd,
  ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC = 0xe,
  ZE_STRUCTURE_TYPE_EVENT_POOL_DESC = 0x10,
  ZE_STRUCTURE_TYPE_EVENT_DESC = 0x11,
  ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC = 0x15,
  ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC = 0x16,
  ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES = 0x17,
  ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES = 0x10008,
};

enum { ZE_INIT_FLAG_GPU_ONLY = 1u << 0 };
enum { ZE_DEVICE_TYPE_GPU = 1 };
enum { ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE = 1u << 1 };
enum { ZE_MEMORY_TYPE_UNKNOWN = 0, ZE_MEMORY_TYPE_HOST = 1, ZE_MEMORY_TYPE_DEVICE = 2, ZE_MEMORY_TYPE_SHARED = 3 };
enum { ZE_COMMAND_QUEUE_MODE_DEFAULT = 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS = 1, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS = 2 };
enum { ZE_COMMAND_QUEUE_PRIORITY_NORMAL = 0 };
enum { ZE_EVENT_POOL_FLAG_HOST_VISIBLE = 1u << 0 };
enum { ZE_EVENT_SCOPE_FLAG_HOST = 1u << 2 };

#define ZE_MAX_DRIVER_UUID_SIZE 16
#define ZE_MAX_DEVICE_UUID_SIZE 16
#define ZE_MAX_DEVICE_NAME 256

typedef struct {
  uint8_t id[ZE_MAX_DRIVER_UUID_SIZE];
} ze_driver_uuid_t;

typedef struct {
  uint8_t id[ZE_MAX_DEVICE_UUID_SIZE];
} ze_device_uuid_t;

typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  ze_driver_uuid_t uuid;
  uint32_t driverVersion;
} ze_driver_properties_t;

typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  uint32_t type; /* ze_device_type_t */
  uint32_t vendorId;
  uint32_t deviceId;
  uint32_t flags; /* ze_device_property_flags_t */
  uint32_t subdeviceId;
  uint32_t coreClockRate;
  uint64_t maxMemAllocSize;
  uint32_t maxHardwareContexts;
  uint32_t maxCommandQueuePriority;
  uint32_t numThreadsPerEU;
  uint32_t physicalEUSimdWidth;
  uint32_t numEUsPerSubslice;
  uint32_t numSubslicesPerSlice;
  uint32_t numSlices;
  uint64_t timerResolution;
  uint32_t timestampValidBits;
  uint32_t kernelTimestampValidBits;
  ze_device_uuid_t uuid;
  char name[ZE_MAX_DEVICE_NAME];
} ze_device_properties_t;

typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  uint32_t flags;
  uint32_t maxClockRate;
  uint32_t maxBusWidth;
  uint64_t totalSize;
  char name[ZE_MAX_DEVICE_NAME];
} ze_device_memory_properties_t;

typedef struct {
  uint32_t domain, bus, device, function;
} ze_pci_address_ext_t;

typedef struct {
  int32_t genVersion;
  int32_t width;
  int64_t maxBandwidth;
} ze_pci_speed_ext_t;

typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  ze_pci_address_ext_t address;
  ze_pci_speed_ext_t maxSpeed;
} ze_pci_ext_properties_t;

typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  uint32_t type; /* ze_memory_type_t */
  uint64_t id;
  uint64_t pageSize;
} ze_memory_allocation_properties_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t flags;
} ze_context_desc_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t ordinal;
  uint32_t index;
  uint32_t flags;
  uint32_t mode;     /* ze_command_queue_mode_t */
  uint32_t priority; /* ze_command_queue_priority_t */
} ze_command_queue_desc_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t flags;
  uint32_t count;
} ze_event_pool_desc_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t index;
  uint32_t signal; /* ze_event_scope_flags_t */
  uint32_t wait;
} ze_event_desc_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t flags;
  uint32_t ordinal;
} ze_device_mem_alloc_desc_t;

typedef struct {
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t flags;
} ze_host_mem_alloc_desc_t;

/* The entry points, by the specification's names and signatures. */
#define HDAL__ZE_FUNCTIONS(X)                                                                                        \
  X(zeInit, (uint32_t flags))                                                                                        \
  X(zeDriverGet, (uint32_t * count, ze_driver_handle_t * drivers))                                                   \
  X(zeDriverGetApiVersion, (ze_driver_handle_t driver, ze_api_version_t * version))                                 \
  X(zeDriverGetProperties, (ze_driver_handle_t driver, ze_driver_properties_t * props))                             \
  X(zeDeviceGet, (ze_driver_handle_t driver, uint32_t * count, ze_device_handle_t * devices))                       \
  X(zeDeviceGetSubDevices, (ze_device_handle_t device, uint32_t * count, ze_device_handle_t * subdevices))          \
  X(zeDeviceGetProperties, (ze_device_handle_t device, ze_device_properties_t * props))                             \
  X(zeDeviceGetMemoryProperties, (ze_device_handle_t device, uint32_t * count, ze_device_memory_properties_t * props)) \
  X(zeDevicePciGetPropertiesExt, (ze_device_handle_t device, ze_pci_ext_properties_t * props))                      \
  X(zeDeviceCanAccessPeer, (ze_device_handle_t device, ze_device_handle_t peer, ze_bool_t * value))                \
  X(zeContextCreate, (ze_driver_handle_t driver, const ze_context_desc_t *desc, ze_context_handle_t *context))       \
  X(zeContextDestroy, (ze_context_handle_t context))                                                                 \
  X(zeCommandListCreateImmediate, (ze_context_handle_t context, ze_device_handle_t device,                          \
                                   const ze_command_queue_desc_t *desc, ze_command_list_handle_t *list))             \
  X(zeCommandListDestroy, (ze_command_list_handle_t list))                                                           \
  X(zeCommandListAppendMemoryCopy, (ze_command_list_handle_t list, void *dst, const void *src, size_t size,          \
                                    ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *wait))             \
  X(zeCommandListAppendSignalEvent, (ze_command_list_handle_t list, ze_event_handle_t event))                       \
  X(zeCommandListAppendWaitOnEvents, (ze_command_list_handle_t list, uint32_t n, ze_event_handle_t * events))       \
  X(zeEventPoolCreate, (ze_context_handle_t context, const ze_event_pool_desc_t *desc, uint32_t ndevices,           \
                        ze_device_handle_t *devices, ze_event_pool_handle_t *pool))                                  \
  X(zeEventPoolDestroy, (ze_event_pool_handle_t pool))                                                               \
  X(zeEventCreate, (ze_event_pool_handle_t pool, const ze_event_desc_t *desc, ze_event_handle_t *event))            \
  X(zeEventDestroy, (ze_event_handle_t event))                                                                       \
  X(zeEventHostSynchronize, (ze_event_handle_t event, uint64_t timeout))                                             \
  X(zeEventQueryStatus, (ze_event_handle_t event))                                                                   \
  X(zeEventHostReset, (ze_event_handle_t event))                                                                     \
  X(zeMemAllocDevice, (ze_context_handle_t context, const ze_device_mem_alloc_desc_t *desc, size_t size,            \
                       size_t alignment, ze_device_handle_t device, void **ptr))                                     \
  X(zeMemAllocHost, (ze_context_handle_t context, const ze_host_mem_alloc_desc_t *desc, size_t size,                 \
                     size_t alignment, void **ptr))                                                                  \
  X(zeMemFree, (ze_context_handle_t context, void *ptr))                                                             \
  X(zeMemGetAllocProperties, (ze_context_handle_t context, const void *ptr, ze_memory_allocation_properties_t *props, \
                              ze_device_handle_t *device))

#endif /* HDAL_ZE_API_H */
