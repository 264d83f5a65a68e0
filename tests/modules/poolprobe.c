/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: one PjRt-compatible, host-addressable device whose
 * allocations are counted and which has no fence operation (its work is done
 * when its calls return, so a block it gives back is reusable at once).  It hands the test program its host table and
 * device through the program's symbols hdal_test_pool_host / _device /
 * _counts (exported with -export-dynamic), so that the test can allocate
 * through hdal_backend_host::memory_allocate as a module would. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <hdal/backend.h>

static hdal_error *probe_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  (void)state;
  (void)dev;
  int *counts = dlsym(RTLD_DEFAULT, "hdal_test_pool_counts");
  if (!(*handle = malloc(nbytes ? nbytes : 1))) return NULL;
  if (counts) __atomic_add_fetch(&counts[0], 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void probe_release(void *state, void *dev, void *handle) {
  (void)state;
  (void)dev;
  int *counts = dlsym(RTLD_DEFAULT, "hdal_test_pool_counts");
  free(handle);
  if (counts) __atomic_add_fetch(&counts[1], 1, __ATOMIC_SEQ_CST);
}

static const hdal_backend_buffer_ops probe_ops = {
    .allocate = probe_allocate,
    .release = probe_release,
};

static hdal_error *probe_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  *state = NULL;
  hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
  info.kind = "poolprobe";
  info.dlpack_device = (DLDevice){kDLExtDev, 0};
  info.memory_bytes = 1u << 20;
  info.host_addressable = true;
  hdal_device *d = host->add_device(disc, &info);
  if (!d) return host->error_oom();
  const hdal_backend_host **h = dlsym(RTLD_DEFAULT, "hdal_test_pool_host");
  hdal_device **dv = dlsym(RTLD_DEFAULT, "hdal_test_pool_device");
  if (h) *h = host;
  if (dv) *dv = d;
  return NULL;
}

HDAL_BACKEND_DEFINE(poolprobe) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "poolprobe",
    .platform = "poolprobe",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .discover = probe_discover,
    .buffer_ops = &probe_ops,
};
