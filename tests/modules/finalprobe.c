/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: one IFRT-native device, and a finalize() that counts in
 * the test program (its symbol hdal_test_finalized, exported with
 * -export-dynamic), so that a test sees the moment a context is really freed:
 * hdal finalizes its backends when the context's last reference goes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <hdal/backend.h>

static hdal_error *finalprobe_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  *state = NULL;
  hdal_backend_device_info info = {
      .kind = "finalprobe",
      .dlpack_device = {kDLExtDev, 0},
      .numa_node = -1,
      .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
      .runtime_class_reason = "test module",
  };
  return host->add_device(disc, &info) ? NULL : host->error_oom();
}

static void finalprobe_finalize(void *state) {
  (void)state;
  int *count = dlsym(RTLD_DEFAULT, "hdal_test_finalized");
  if (count) __atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
}

HDAL_BACKEND_DEFINE(finalprobe) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "finalprobe",
    .platform = "finalprobe",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .discover = finalprobe_discover,
    .finalize = finalprobe_finalize,
};
