/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU suites' Level Zero face (tests/gpusuite/gpusuite.h): the test's
 * own calls through the system's loader, in a context of the test's own, to
 * the fake driver (ZE_ENABLE_ALT_DRIVERS) or, under tests/gpu/, the
 * machine's driver.  Level Zero has no stream that hdal takes. */
#include "gpusuite/gpusuite.h"
#include "testze.h"

test_ze ze;

/* Never an empty value: the loader crashes on one. */
static void name_fake(const char *path) {
  setenv("ZE_ENABLE_ALT_DRIVERS", path, 1);
  unsetenv("HDAL_LEVELZERO_LIBRARY");
}

static bool open_loader(gpu_hooks *hooks) {
  if (!test_ze_open(&ze) || test_ze_init(&ze)) return false;
  *hooks = (gpu_hooks){ze.fakeze_live_allocations, ze.fakeze_calls, ze.fakeze_slow_launch};
  return true;
}

static const char *library(void) { return TEST_ZE_LOADER; }

/* Every driver's root devices, as tests/gpu/'s probe counts them. */
static int count(int *n) {
  ze_driver_handle_t drivers[16];
  uint32_t ndrivers = 16;
  ze_result_t r = ze.zeDriverGet(&ndrivers, drivers);
  *n = 0;
  for (uint32_t i = 0; !r && i < ndrivers; i++) {
    uint32_t k = 0;
    if (!(r = ze.zeDeviceGet(drivers[i], &k, NULL))) *n += (int)k;
  }
  return r;
}

static int alloc(int ordinal, const void *host, size_t n, void **out) {
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  *out = NULL;
  if ((uint32_t)ordinal >= ze.ndevices) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_result_t r = ze.zeMemAllocDevice(ze.context, &d, n, 0, ze.devices[ordinal], out);
  return r ? r : test_ze_copy(&ze, *out, host, n);
}

static int usm_free(int ordinal, void *p) { return ze.zeMemFree(ze.context, p); }

static int read_back(void *host, const void *p, size_t n) { return test_ze_copy(&ze, host, p, n); }

/* Host USM: mapped by the devices at its address. */
static int host_alloc(size_t n, void **out) {
  ze_host_mem_alloc_desc_t h = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  return ze.zeMemAllocHost(ze.context, &h, n, 0, out);
}

static int host_free(void *p) { return ze.zeMemFree(ze.context, p); }

const gpu_face gpu_face_ze = {
    .platform = "levelzero",
    .vendor = 0x8086,
    .memory = (DLDeviceType)kDLOneAPI,
    .pinned = (DLDeviceType)kDLOneAPI,
    .real = "HDAL_TEST_REAL_LEVELZERO",
    .devices = "HDAL_TEST_LEVELZERO_DEVICES",
    .fake = "fakeze",
    .prefix = "FAKEZE_",
    .slow = "FAKEZE_SLOW_LIST",
    .guarded = true,
    .name_fake = name_fake,
    .open = open_loader,
    .library = library,
    .count = count,
    .alloc = alloc,
    .free = usm_free,
    .read = read_back,
    .pinned_alloc = host_alloc,
    .pinned_free = host_free,
};
