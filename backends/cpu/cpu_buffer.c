/* hdal CPU backend — buffer operations on host memory. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

static bool cpu_can_alias(void *state, void *dev, const DLTensor *t) {
  return t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost ||
         t->device.device_type == kDLCUDAManaged;
}

static hdal_error *cpu_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  void *p = NULL;
  if (posix_memalign(&p, 64, nbytes ? nbytes : 1)) return hdal__error_oom();
  *handle = p;
  return NULL;
}

static void cpu_release(void *state, void *dev, void *handle) { free(handle); }

static hdal_error *cpu_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                             const intptr_t *stream) {
  memcpy((char *)handle + offset, src, n);
  return NULL;
}

static hdal_error *cpu_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                            const intptr_t *stream) {
  memcpy(dst, (const char *)handle + offset, n);
  return NULL;
}

const hdal_backend_buffer_ops hdal__cpu_buffer_ops = {
    .struct_size = sizeof(hdal_backend_buffer_ops),
    .can_alias = cpu_can_alias,
    .allocate = cpu_allocate,
    .release = cpu_release,
    .write = cpu_write,
    .read = cpu_read,
};
