/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: one PjRt-compatible device of host memory whose buffer
 * operations are host memory's own (hdal_backend_host::host_buffer_ops), as a
 * module for pinned memory would reuse them, each call counted in the test
 * program's hdal_test_host_ops[] (exported with -export-dynamic).  Its device
 * also says host_addressable: a core that moved host memory's bytes itself
 * again, bypassing the operations, would show in the counts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <hdal/backend.h>

enum { ALLOCATE, RELEASE, READ, WRITE, COPY, HOST_POINTER };

static const hdal_backend_buffer_ops *base; /* the core's; the same in every context */

static void count(int op) {
  int *counts = dlsym(RTLD_DEFAULT, "hdal_test_host_ops");
  if (counts) __atomic_add_fetch(&counts[op], 1, __ATOMIC_SEQ_CST);
}

static bool probe_can_alias(void *state, void *dev, const DLTensor *t) {
  (void)state, (void)dev;
  return t->device.device_type == kDLExtDev;
}

static hdal_error *probe_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  count(ALLOCATE);
  return base->allocate(state, dev, nbytes, handle);
}

static void probe_release(void *state, void *dev, void *handle) {
  count(RELEASE);
  base->release(state, dev, handle);
}

static hdal_error *probe_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                              const intptr_t *stream) {
  count(READ);
  return base->read(state, dev, handle, offset, dst, n, stream);
}

static hdal_error *probe_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                               const intptr_t *stream) {
  count(WRITE);
  return base->write(state, dev, handle, offset, src, n, stream);
}

static hdal_error *probe_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                              const void *src, uint64_t src_offset, size_t n, const intptr_t *stream) {
  count(COPY);
  return base->copy(state, dst_dev, dst, dst_offset, src_dev, src, src_offset, n, stream);
}

static void *probe_host_pointer(void *state, void *dev, void *handle, uint64_t offset) {
  count(HOST_POINTER);
  return base->host_pointer(state, dev, handle, offset);
}

static const hdal_backend_buffer_ops probe_ops = {
    .can_alias = probe_can_alias,
    .allocate = probe_allocate,
    .release = probe_release,
    .write = probe_write,
    .read = probe_read,
    .copy = probe_copy,
    .host_pointer = probe_host_pointer,
};

static hdal_error *probe_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  *state = NULL;
  base = host->host_buffer_ops;
  hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
  info.kind = "hostprobe";
  info.dlpack_device = (DLDevice){kDLExtDev, 0};
  info.host_addressable = true;
  return host->add_device(disc, &info) ? NULL : host->error_oom();
}

HDAL_BACKEND_DEFINE(hostprobe) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "hostprobe",
    .platform = "hostprobe",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = probe_discover,
    .buffer_ops = &probe_ops,
};
