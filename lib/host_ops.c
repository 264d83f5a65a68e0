/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the buffer operations of host memory (docs/backend-abi.md,
 * "Host memory").  The CPU backend uses them, a module reuses them for pinned
 * or managed memory (hdal_backend_host::host_buffer_ops), and the core reads
 * host memory that no device was asked about through them: host memory goes
 * through an operations table like any device's. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define ALIGN 64 /* a cache line, and every DLPack alignment */

/* Host memory, pinned and managed memory among it (docs/dlpack.md). */
static bool host_can_alias(void *state, void *dev, const DLTensor *t) {
  (void)state, (void)dev;
  return hdal__host_readable_type(t->device.device_type);
}

static hdal_error *host_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  (void)state, (void)dev;
  void *p = NULL;
  if (posix_memalign(&p, ALIGN, nbytes ? nbytes : 1)) return hdal__error_oom();
  *handle = p;
  return NULL;
}

static void host_release(void *state, void *dev, void *handle) {
  (void)state, (void)dev;
  free(handle);
}

hdal_error *hdal__host_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                             const intptr_t *stream) {
  (void)state, (void)dev, (void)stream;
  if (n) memcpy((char *)handle + offset, src, n);
  return NULL;
}

hdal_error *hdal__host_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                            const intptr_t *stream) {
  (void)state, (void)dev, (void)stream;
  if (n) memcpy(dst, (const char *)handle + offset, n);
  return NULL;
}

hdal_error *hdal__host_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev, const void *src,
                            uint64_t src_offset, size_t n, const intptr_t *stream) {
  (void)state, (void)dst_dev, (void)src_dev, (void)stream;
  if (n) memcpy((char *)dst + dst_offset, (const char *)src + src_offset, n);
  return NULL;
}

void *hdal__host_pointer(void *state, void *dev, void *handle, uint64_t offset) {
  (void)state, (void)dev;
  return handle ? (char *)handle + offset : NULL; /* no arithmetic on NULL (UBSan) */
}

const hdal_backend_buffer_ops hdal__host_buffer_ops = {
    .can_alias = host_can_alias,
    .allocate = host_allocate,
    .release = host_release,
    .write = hdal__host_write,
    .read = hdal__host_read,
    .copy = hdal__host_copy,
    .host_pointer = hdal__host_pointer,
};
