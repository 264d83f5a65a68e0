/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal CPU backend — buffer operations on host memory.
 *
 * Allocations carry a 64-byte header (release() gets no size).  Large ones are
 * mapped directly, placed on the device's NUMA node when the machine has more
 * than one, and populated in one call (transparent huge pages where allowed):
 * fresh 4 KiB pages faulted one by one cost more than the copy that fills them. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "cpu.h"

#define HEADER 64                  /* keeps the data 64-byte aligned */
#define MAP_THRESHOLD (1u << 20)   /* from here on: a mapping of its own */
#define HUGE_ALIGN ((size_t)2 << 20)

typedef struct {
  void *base;      /* what to free or unmap */
  size_t length;   /* mapping length; 0 for malloc'd blocks */
} alloc_header;

/* Moving bytes is host memory's (hdal_backend_host::host_buffer_ops, lib/host_ops.c);
 * allocation stays here, for NUMA placement. */
#define HOST_OPS(state) (((hdal__cpu_state *)(state))->host->host_buffer_ops)

/* Host memory's rule (docs/dlpack.md, "Zero-copy view or copy"), which the
 * core's import applies to this backend's devices without the call. */
static bool cpu_can_alias(void *state, void *dev, const DLTensor *t) {
  return HOST_OPS(state)->can_alias(NULL, dev, t);
}

/* kDLCPU tensors: the device whose NUMA node holds the first element's page
 * (hwloc), else the first device. */
static hdal_error *cpu_route(void *state, const DLTensor *t, size_t *local_index) {
  hdal__cpu_state *s = state;
  *local_index = 0;
  if (t->device.device_type == kDLCPU && t->device.device_id != 0)
    return s->host->error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack device (kDLCPU, %d) is out of range: the CPU backend's devices are all (kDLCPU, 0)",
                           t->device.device_id);
  if (s->ndevices <= 1 || !t->data || !hwloc_topology_is_thissystem(s->topology)) return NULL;
  hwloc_nodeset_t where = hwloc_bitmap_alloc();
  if (!where) return NULL;
  const char *first = (const char *)t->data + t->byte_offset;
  if (hwloc_get_area_memlocation(s->topology, first, 1, where, HWLOC_MEMBIND_BYNODESET) == 0)
    for (size_t i = 0; i < s->ndevices; i++)
      if (hwloc_bitmap_intersects(s->devices[i]->node->nodeset, where)) {
        *local_index = i;
        break;
      }
  hwloc_bitmap_free(where);
  return NULL;
}

static void *map_large(hdal__cpu_state *s, hdal__cpu_device *d, size_t nbytes, alloc_header *h) {
  size_t length = nbytes + HEADER + HUGE_ALIGN;
  char *base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  char *start = (char *)(((uintptr_t)base + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
  size_t used = nbytes + HEADER;
#ifdef MADV_HUGEPAGE
  madvise(start, used, MADV_HUGEPAGE);
#endif
  /* Place before the first touch: pages go where they are first faulted. */
  if (s->ndevices > 1 && d && hwloc_topology_is_thissystem(s->topology))
    hwloc_set_area_membind(s->topology, start, used, d->node->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
#ifdef MADV_POPULATE_WRITE
  /* One call instead of a fault per page.  It also tells, as an error rather
   * than a later crash, that the memory is not there; older kernels refuse the
   * advice (EINVAL) and fault pages as they come. */
  if (madvise(start, used, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) {
    munmap(base, length);
    return NULL;
  }
#endif
  h->base = base;
  h->length = length;
  return start;
}

static hdal_error *cpu_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  hdal__cpu_state *s = state;
  alloc_header h = {NULL, 0};
  char *start;
  if (nbytes > SIZE_MAX - HEADER - HUGE_ALIGN) return s->host->error_oom();
  if (nbytes >= MAP_THRESHOLD) {
    if (!(start = map_large(s, dev, nbytes, &h))) return s->host->error_oom();
  } else {
    void *p = NULL;
    if (posix_memalign(&p, HEADER, nbytes + HEADER)) return s->host->error_oom();
    start = p;
    h.base = p;
  }
  memcpy(start, &h, sizeof h);
  *handle = start + HEADER;
  return NULL;
}

static void cpu_release(void *state, void *dev, void *handle) {
  if (!handle) return;
  alloc_header h;
  memcpy(&h, (char *)handle - HEADER, sizeof h);
  if (h.length)
    munmap(h.base, h.length);
  else
    free(h.base);
}

static hdal_error *cpu_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t n,
                             const intptr_t *stream) {
  return HOST_OPS(state)->write(NULL, dev, handle, offset, src, n, stream);
}

static hdal_error *cpu_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t n,
                            const intptr_t *stream) {
  return HOST_OPS(state)->read(NULL, dev, handle, offset, dst, n, stream);
}

static hdal_error *cpu_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev, const void *src,
                            uint64_t src_offset, size_t n, const intptr_t *stream) {
  return HOST_OPS(state)->copy(NULL, dst_dev, dst, dst_offset, src_dev, src, src_offset, n, stream);
}

static void *cpu_host_pointer(void *state, void *dev, void *handle, uint64_t offset) {
  return HOST_OPS(state)->host_pointer(NULL, dev, handle, offset);
}

const hdal_backend_buffer_ops hdal__cpu_buffer_ops = {
    .can_alias = cpu_can_alias,
    .route = cpu_route,
    .allocate = cpu_allocate,
    .release = cpu_release,
    .write = cpu_write,
    .read = cpu_read,
    .copy = cpu_copy,
    .host_pointer = cpu_host_pointer,
};
