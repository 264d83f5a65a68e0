/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module whose discovery fails after adding a device: the backend is
 * unavailable with that message and the device is dropped; with
 * HDAL_TEST_FAILING_INTERNAL set, its error is HDAL_INTERNAL (a runtime that
 * broke: the backend failed). */
#include <stdlib.h>
#include <hdal/backend.h>

static hdal_error *failing_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  hdal_backend_device_info info = { .kind = "doomed", .dlpack_device = {kDLExtDev, 0}, .numa_node = -1};
  host->add_device(disc, &info);
  if (getenv("HDAL_TEST_FAILING_INTERNAL")) return host->error_new(HDAL_INTERNAL, "failing: the runtime broke");
  return host->error_new(HDAL_UNAVAILABLE, "failing: no hardware of this kind here");
}

HDAL_BACKEND_DEFINE(failing) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "failing",
    .platform = "failing",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .discover = failing_discover,
};
