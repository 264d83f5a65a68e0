/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: declares itself PjRt-compatible but provides no buffer
 * operations, so the loader must list its device as IFRT-native. */
#include <hdal/backend.h>

static hdal_error *noops_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  hdal_backend_device_info info = { .kind = "no-ops-device", .dlpack_device = {kDLExtDev, 0}, .numa_node = -1};
  return host->add_device(disc, &info) ? NULL : host->error_oom();
}

HDAL_BACKEND_DEFINE(pjrtnoops) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "pjrtnoops",
    .platform = "pjrtnoops",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .discover = noops_discover,
};
