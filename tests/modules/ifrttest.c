/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only backend module (never installed): two IFRT-native devices, no buffer
 * operations, so that the suite walks the non-PjRt paths. */
#include <stdio.h>
#include <hdal/backend.h>

static hdal_error *ifrttest_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  /* Added in reverse: the core lists devices by local hardware id. */
  for (int i = 1; i >= 0; i--) {
    char kind[32];
    snprintf(kind, sizeof kind, "ifrt-test-device-%d", i);
    hdal_backend_device_info info = {
        .kind = kind,
        .local_hardware_id = i,
        .dlpack_device = {kDLExtDev, i},
        .memory_bytes = (uint64_t)(i + 1) << 30,
        .numa_node = -1,
        .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
        .runtime_class_reason = "test module: devices listed for IFRT only, no buffer runtime",
    };
    hdal_device *d = host->add_device(disc, &info);
    if (!d || !host->add_attribute(d, HDAL_BACKEND_STRING("test_attribute", i ? "one" : "zero"))) return host->error_oom();
  }
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(ifrttest) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "ifrttest",
    .platform = "ifrttest",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = ifrttest_discover,
};
