/* SPDX-License-Identifier: BSD-3-Clause */
/* The Level Zero calls hdal's tests make themselves (to allocate device,
 * shared and host memory and copy to and from it), resolved from the system's
 * loader, libze_loader.so.1, which loads the fake driver (tests/fakes/ze/)
 * named by ZE_ENABLE_ALT_DRIVERS.  The fake's own hooks (fakeze_*) come from
 * the fake, once the loader has loaded it. */
#ifndef HDAL_TESTZE_H
#define HDAL_TESTZE_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../backends/levelzero/ze_api.h"

typedef struct {
  void *lib, *fake;
#define TEST_ZE_FIELD(name, params) ze_result_t(*name) params;
  HDAL__ZE_FUNCTIONS(TEST_ZE_FIELD)
#undef TEST_ZE_FIELD
  ze_result_t (*zeMemAllocShared)(ze_context_handle_t, const ze_device_mem_alloc_desc_t *,
                                  const ze_host_mem_alloc_desc_t *, size_t, size_t, ze_device_handle_t, void **);
  /* the fake's hooks */
  size_t (*fakeze_live_allocations)(void);
  unsigned (*fakeze_calls)(const char *entry);
  void (*fakeze_slow_launch)(void);
  int (*fakeze_live)(const char *what);
  /* after test_ze_init: the driver, its devices, a context of the test's own and a list on device 0 */
  ze_driver_handle_t driver;
  ze_device_handle_t devices[8];
  uint32_t ndevices;
  ze_context_handle_t context;
  ze_command_list_handle_t list;
  ze_event_pool_handle_t pool;
  ze_event_handle_t event;
} test_ze;

#define TEST_ZE_LOADER "libze_loader.so.1"

/* Opens the loader; false when it or a call is missing. */
static inline bool test_ze_open(test_ze *z) {
  *z = (test_ze){0};
  if (!(z->lib = dlopen(TEST_ZE_LOADER, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) return false;
  bool ok = true;
#define TEST_ZE_SYM(name, params) ok = ok && (*(void **)&z->name = dlsym(z->lib, #name)) != NULL;
  HDAL__ZE_FUNCTIONS(TEST_ZE_SYM)
  TEST_ZE_SYM(zeMemAllocShared, ())
#undef TEST_ZE_SYM
  return ok;
}

/* The fake's hooks, once the loader has loaded it (zeInit). */
static inline void test_ze_hooks(test_ze *z) {
  const char *path = getenv("ZE_ENABLE_ALT_DRIVERS");
  z->fake = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!z->fake) return;
  *(void **)&z->fakeze_live_allocations = dlsym(z->fake, "fakeze_live_allocations");
  *(void **)&z->fakeze_calls = dlsym(z->fake, "fakeze_calls");
  *(void **)&z->fakeze_slow_launch = dlsym(z->fake, "fakeze_slow_launch");
  *(void **)&z->fakeze_live = dlsym(z->fake, "fakeze_live");
}

/* zeInit, the first driver and its devices, a context, an immediate list on device 0 and an event. */
static inline ze_result_t test_ze_init(test_ze *z) {
  ze_result_t r = z->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  uint32_t n = 1;
  if (!r) r = z->zeDriverGet(&n, &z->driver);
  z->ndevices = 8;
  if (!r) r = z->zeDeviceGet(z->driver, &z->ndevices, z->devices);
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  if (!r) r = z->zeContextCreate(z->driver, &cd, &z->context);
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
  if (!r) r = z->zeCommandListCreateImmediate(z->context, z->devices[0], &qd, &z->list);
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE, .count = 1};
  if (!r) r = z->zeEventPoolCreate(z->context, &pd, 0, NULL, &z->pool);
  ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .signal = ZE_EVENT_SCOPE_FLAG_HOST, .wait = ZE_EVENT_SCOPE_FLAG_HOST};
  if (!r) r = z->zeEventCreate(z->pool, &ed, &z->event);
  test_ze_hooks(z);
  return r;
}

/* A copy on the test's list, waited for. */
static inline ze_result_t test_ze_copy(test_ze *z, void *dst, const void *src, size_t n) {
  ze_result_t r = z->zeCommandListAppendMemoryCopy(z->list, dst, src, n, z->event, 0, NULL);
  if (!r) r = z->zeEventHostSynchronize(z->event, UINT64_MAX);
  if (!r) r = z->zeEventHostReset(z->event);
  return r;
}

/* The GPU suites' Level Zero face (testze.c, tests/gpusuite/gpusuite.h): the
 * loader it opened, with the test's own context. */
extern test_ze ze;

#endif /* HDAL_TESTZE_H */
