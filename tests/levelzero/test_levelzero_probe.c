/* SPDX-License-Identifier: BSD-3-Clause */
/* For tests/gpu/: is there a Level Zero driver with a GPU here?  Prints what
 * it found ("<loader>: driver <API version>, <n> device(s)", the line
 * run-real.sh reads); exit 0 when a device answers, 1 otherwise.  Never part
 * of `make check` on its own. */
#include <stdio.h>
#include "fakes/ze/testze.h"

int main(void) {
  test_ze z;
  if (!test_ze_open(&z)) {
    printf("%s: %s\n", TEST_ZE_LOADER, dlerror() ? dlerror() : "an entry point is missing");
    return 1;
  }
  ze_result_t r = z.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  uint32_t ndrivers = 0, ndevices = 0;
  ze_api_version_t version = 0;
  ze_driver_handle_t drivers[16];
  if (!r) r = z.zeDriverGet(&ndrivers, NULL);
  if (ndrivers > 16) ndrivers = 16;
  if (!r && ndrivers) r = z.zeDriverGet(&ndrivers, drivers);
  for (uint32_t i = 0; !r && i < ndrivers; i++) {
    uint32_t n = 0;
    if (!(r = z.zeDeviceGet(drivers[i], &n, NULL))) ndevices += n;
    if (!r && i == 0) r = z.zeDriverGetApiVersion(drivers[0], &version);
  }
  if (r || ndevices == 0) {
    printf("%s: zeInit/zeDriverGet/zeDeviceGet: ze_result_t 0x%x, %u device(s)\n", TEST_ZE_LOADER, (unsigned)r, ndevices);
    return 1;
  }
  printf("%s: driver %u, %u device(s)\n", TEST_ZE_LOADER, (unsigned)version, ndevices);
  return 0;
}
