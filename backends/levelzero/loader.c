/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Level Zero backend — opening the loader at run time and naming its results.
 *
 * Level Zero applications link its loader, libze_loader.so.1, which finds the
 * drivers (Intel's libze_intel_gpu.so.1, or those of ZE_ENABLE_ALT_DRIVERS)
 * and dispatches every call to the one that owns the handle.  hdal opens the
 * loader like any other: every entry point is looked up by name, and one that
 * is missing leaves the backend unavailable.  API 1.4 (loader 1.8) has no call
 * that names a result, so the names are the specification's, here.
 */
#include "config.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "levelzero.h"
#include "../library_file.h"

typedef struct {
  const char *name;
  size_t offset;
} entry;

static const entry entries[] = {
#define HDAL__ZE_ENTRY(fn, params) {#fn, offsetof(hdal__ze_api, fn)},
    HDAL__ZE_FUNCTIONS(HDAL__ZE_ENTRY)
#undef HDAL__ZE_ENTRY
};

hdal_error *hdal__levelzero_loader_open(hdal__levelzero_state *s, const char *path) {
  const hdal_backend_host *host = s->gpu.host;
  char why[HDAL__LIBRARY_WHY_MAX];
  void *h = hdal__library_open(path, why);
  if (!h) return host->error_new(HDAL_UNAVAILABLE, "%s", why);
  memset(&s->ze, 0, sizeof s->ze);
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *fn = dlsym(h, entries[i].name);
    if (!fn) {
      dlclose(h);
      return host->error_new(HDAL_UNAVAILABLE, "%s: the loader has no entry point %s", path, entries[i].name);
    }
    memcpy((char *)&s->ze + entries[i].offset, &fn, sizeof fn);
  }
  s->lib = h;
  return NULL;
}

static const struct {
  ze_result_t r;
  const char *name;
} names[] = {
#define N(x) {x, #x}
    N(ZE_RESULT_SUCCESS),
    N(ZE_RESULT_NOT_READY),
    N(ZE_RESULT_ERROR_DEVICE_LOST),
    N(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY),
    N(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
    N(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET),
    N(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE),
    N(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS),
    N(ZE_RESULT_ERROR_NOT_AVAILABLE),
    N(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE),
    N(ZE_RESULT_ERROR_UNINITIALIZED),
    N(ZE_RESULT_ERROR_UNSUPPORTED_VERSION),
    N(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
    N(ZE_RESULT_ERROR_INVALID_ARGUMENT),
    N(ZE_RESULT_ERROR_INVALID_NULL_HANDLE),
    N(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE),
    N(ZE_RESULT_ERROR_INVALID_NULL_POINTER),
    N(ZE_RESULT_ERROR_INVALID_SIZE),
    N(ZE_RESULT_ERROR_UNSUPPORTED_SIZE),
    N(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT),
    N(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT),
    N(ZE_RESULT_ERROR_INVALID_ENUMERATION),
    N(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION),
    N(ZE_RESULT_ERROR_OVERLAPPING_REGIONS),
    N(ZE_RESULT_ERROR_UNKNOWN),
#undef N
};

const char *hdal__levelzero_result_name(ze_result_t r) {
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].r == r) return names[i].name;
  return "ze_result_t";
}

void hdal__levelzero_describe(ze_result_t r, char *buf, size_t len) {
  snprintf(buf, len, "%s (0x%x)", hdal__levelzero_result_name(r), (unsigned)r);
}

hdal_code hdal__levelzero_code_of(int r) {
  switch (r) {
  case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
  case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return HDAL_RESOURCE_EXHAUSTED;
  case ZE_RESULT_ERROR_INVALID_ARGUMENT:
  case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
  case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
  case ZE_RESULT_ERROR_INVALID_SIZE:
  case ZE_RESULT_ERROR_INVALID_ENUMERATION:
  case ZE_RESULT_ERROR_OVERLAPPING_REGIONS: return HDAL_INVALID_ARGUMENT;
  case ZE_RESULT_ERROR_UNINITIALIZED:
  case ZE_RESULT_ERROR_DEVICE_LOST:
  case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET: return HDAL_FAILED_PRECONDITION;
  case ZE_RESULT_ERROR_NOT_AVAILABLE:
  case ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE: return HDAL_UNAVAILABLE;
  case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS: return HDAL_PERMISSION_DENIED;
  case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
  case ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return HDAL_UNIMPLEMENTED;
  default: return HDAL_INTERNAL;
  }
}
