/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: one PjRt-compatible device whose 17 buffer operations
 * count their calls (in the test program's hdal_test_ops_counts, found with
 * dlsym; the program is linked with -export-dynamic) and that has no fork()
 * guard of its own: tests/pool/test_dispatch.c shows that every path of the core
 * reaches the backend through the dispatch layer (lib/device_ops.c), which
 * also keeps a fork() child away from it.  Its memory is malloc'ed but not
 * host-addressable as far as the core knows: bytes move through read/write. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <hdal/backend.h>
#include "../pool/opsprobe.h"

static int *counts(void) {
  static int none[OPSPROBE_NOPS];
  int *c = dlsym(RTLD_DEFAULT, "hdal_test_ops_counts");
  return c ? c : none;
}
#define COUNT(op) __atomic_add_fetch(&counts()[op], 1, __ATOMIC_SEQ_CST)

/* What this module allocated (release() frees only those: an imported view's memory is the test's). */
static void *mine[256];
static pthread_mutex_t mine_lock = PTHREAD_MUTEX_INITIALIZER;
static void *own(size_t n) {
  void *p = malloc(n ? n : 1);
  pthread_mutex_lock(&mine_lock);
  for (size_t i = 0; p && i < sizeof mine / sizeof *mine; i++)
    if (!mine[i]) {
      mine[i] = p;
      break;
    }
  pthread_mutex_unlock(&mine_lock);
  return p;
}
static void disown(void *p) {
  pthread_mutex_lock(&mine_lock);
  for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
    if (mine[i] == p) {
      mine[i] = NULL;
      free(p);
    }
  pthread_mutex_unlock(&mine_lock);
}

static bool op_can_alias(void *s, void *d, const DLTensor *t) {
  (void)s, (void)d;
  COUNT(OPSPROBE_CAN_ALIAS);
  return t->device.device_type == kDLExtDev;
}
static hdal_error *op_route(void *s, const DLTensor *t, size_t *i) {
  (void)s, (void)t;
  COUNT(OPSPROBE_ROUTE);
  *i = 0;
  return NULL;
}
static hdal_error *op_allocate(void *s, void *d, size_t n, void **h) {
  (void)s, (void)d;
  COUNT(OPSPROBE_ALLOCATE);
  *h = own(n);
  return NULL;
}
static hdal_error *op_retain(void *s, void *d, void *h) {
  (void)s, (void)d, (void)h;
  COUNT(OPSPROBE_RETAIN);
  return NULL;
}
static void op_release(void *s, void *d, void *h) {
  (void)s, (void)d;
  COUNT(OPSPROBE_RELEASE);
  disown(h);
}
static hdal_error *op_write(void *s, void *d, void *h, uint64_t off, const void *src, size_t n, const intptr_t *st) {
  (void)s, (void)d, (void)st;
  COUNT(OPSPROBE_WRITE);
  memcpy((char *)h + off, src, n);
  return NULL;
}
static hdal_error *op_read(void *s, void *d, const void *h, uint64_t off, void *dst, size_t n, const intptr_t *st) {
  (void)s, (void)d, (void)st;
  COUNT(OPSPROBE_READ);
  memcpy(dst, (const char *)h + off, n);
  return NULL;
}
static hdal_error *op_copy(void *s, void *dd, void *dst, uint64_t doff, void *sd, const void *src, uint64_t soff,
                           size_t n, const intptr_t *st) {
  (void)s, (void)dd, (void)sd, (void)st;
  COUNT(OPSPROBE_COPY);
  memcpy((char *)dst + doff, (const char *)src + soff, n);
  return NULL;
}
static hdal_error *op_subrange(void *s, void *d, void *h, uint64_t off, size_t n, void **out) {
  (void)s, (void)d, (void)h, (void)off, (void)n;
  COUNT(OPSPROBE_SUBRANGE);
  *out = own(1); /* a handle of its own, released through release() */
  return NULL;
}
static hdal_error *op_stream_wait(void *s, void *d, intptr_t stream) {
  (void)s, (void)d, (void)stream;
  COUNT(OPSPROBE_STREAM_WAIT);
  return NULL;
}
static hdal_error *op_fence(void *s, void *d, void *h, void **f) {
  (void)s, (void)d, (void)h;
  COUNT(OPSPROBE_FENCE);
  *f = (void *)1;
  return NULL;
}
static bool op_fence_done(void *s, void *d, void *f, bool wait) {
  (void)s, (void)d, (void)f, (void)wait;
  COUNT(OPSPROBE_FENCE_DONE);
  return true;
}
static bool op_runtime_pool(void *s, void *d, hdal_backend_pool_request r, uint64_t *reserved) {
  (void)s, (void)d, (void)r;
  COUNT(OPSPROBE_RUNTIME_POOL);
  *reserved = 0;
  return false; /* hdal's own pool caches */
}
static void *op_host_pointer(void *s, void *d, void *h, uint64_t off) {
  (void)s, (void)d, (void)h, (void)off;
  COUNT(OPSPROBE_HOST_POINTER);
  return NULL; /* not host-addressable: bytes move through read and write */
}
static hdal_error *op_work_stream(void *s, void *d, intptr_t *stream) {
  (void)s, (void)d;
  COUNT(OPSPROBE_WORK_STREAM);
  *stream = 42;
  return NULL;
}

static hdal_error *op_synchronize(void *s, void *d) {
  (void)s, (void)d;
  COUNT(OPSPROBE_SYNCHRONIZE);
  return NULL;
}
/* One kind: its work stream, as if it were a CUDA stream. */
static bool op_native_handle(void *s, void *d, hdal_native_handle which, intptr_t *handle, hdal_error **error) {
  (void)s, (void)d, (void)error;
  COUNT(OPSPROBE_NATIVE_HANDLE);
  if (which != HDAL_NATIVE_CUDA_STREAM) return false;
  *handle = 42;
  return true;
}

static const hdal_backend_buffer_ops ops = {
    .can_alias = op_can_alias,
    .route = op_route,
    .allocate = op_allocate,
    .retain = op_retain,
    .release = op_release,
    .write = op_write,
    .read = op_read,
    .copy = op_copy,
    .subrange = op_subrange,
    .stream_wait = op_stream_wait,
    .fence = op_fence,
    .fence_done = op_fence_done,
    .runtime_pool = op_runtime_pool,
    .host_pointer = op_host_pointer,
    .work_stream = op_work_stream,
    .synchronize = op_synchronize,
    .native_handle = op_native_handle,
};

static hdal_error *opsprobe_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  *state = NULL;
  hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
  info.kind = "opsprobe";
  info.dlpack_device = (DLDevice){kDLExtDev, 0};
  info.memory_bytes = 1u << 20;
  return host->add_device(disc, &info) ? NULL : host->error_oom();
}

static const hdal_native_handle native_handles[] = {HDAL_NATIVE_CUDA_STREAM, 0};

HDAL_BACKEND_DEFINE(opsprobe) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "opsprobe",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = opsprobe_discover,
    .buffer_ops = &ops,
    .native_handles = native_handles,
};
