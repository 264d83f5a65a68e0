/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the one way into a backend's buffer operations (device_ops.h).
 *
 * The rules, once:
 *  - fork(): a module's runtime does not survive one (fork.c).  In a fork()
 *    child of the process that made the context, every operation on a
 *    module's device refuses with the reason, or, where it cannot fail
 *    (release, fence_done), does nothing; can_alias is asked only after the
 *    import has refused a fork() child (device_ops.h); the CPU backend's
 *    devices are plain memory and keep working.  A module needs no guard of
 *    its own.
 *  - optional operations: a module may leave an operation NULL; each function
 *    says what stands in for a missing one.
 *  - host memory: a NULL device is host memory no device was asked about,
 *    moved by host memory's operations (host_ops.c); so is the memory of a
 *    device of host memory whose module has no host_pointer.
 *  - arguments: each operation gets its backend's state and the device's data,
 *    from the device. */
#include "config.h"
#include <stdint.h>
#include "device_ops.h"

#define OP HDAL__OP

static void *state_of(const hdal_device *d) { return d ? d->backend->state : NULL; }
static void *data_of(const hdal_device *d) { return d ? d->data : NULL; }

/* The operations that move a device's bytes: its own, or host memory's (see the file's comment). */
static const hdal_backend_buffer_ops *moves_of(const hdal_device *d) {
  if (!d) return &hdal__host_buffer_ops;
  if (d->ops && d->host_addressable && !OP(d->ops, host_pointer)) return &hdal__host_buffer_ops;
  return d->ops;
}

static hdal_error *missing(const hdal_device *d, const char *op) {
  return hdal__error_new(HDAL_UNIMPLEMENTED, "backend '%s' has no '%s' buffer operation (device %d)",
                         d->backend ? d->backend->name : "?", op, d->id);
}

/* ---- fork() ---- */

bool hdal__op_forked(const hdal_device *d) {
  /* Another process's device has no backend; a built-in one (the CPU's) no module. */
  return hdal__forked(d->ctx) && !(d->backend && !d->backend->module);
}

hdal_error *hdal__op_fork_refusal(const hdal_device *d) {
  if (!hdal__op_forked(d)) return NULL;
  const char *name = d->backend ? d->backend->name : d->platform;
  return hdal__error_new(HDAL_FAILED_PRECONDITION,
                         "hdal device %d (%s) cannot be used in this process: it is a fork() child of the process "
                         "that created the context, and the %s runtime does not survive fork() (only CPU buffers "
                         "do); create contexts after fork(), in the process that uses them",
                         d->id, d->platform, name);
}

/* The refusal for a device of host memory's own (NULL) is none. */
static hdal_error *refusal(const hdal_device *d) { return d ? hdal__op_usable(d) : NULL; }
static bool callable(const hdal_device *d) { return !d || !hdal__op_forked(d); }

/* ---- the operations ---- */

hdal_error *hdal__op_allocate(const hdal_device *d, size_t nbytes, void **handle) {
  hdal_error *(*f)(void *, void *, size_t, void **) = OP(d->ops, allocate);
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), nbytes, handle) : missing(d, "allocate");
}

hdal_error *hdal__op_allocate_check(const hdal_device *d) {
  return OP(d->ops, allocate) ? NULL : missing(d, "allocate");
}

void hdal__op_release(const hdal_device *d, void *handle) {
  void (*f)(void *, void *, void *) = OP(d->ops, release);
  if (f && callable(d)) f(state_of(d), data_of(d), handle);
}

hdal_error *hdal__op_read(const hdal_device *d, const void *handle, uint64_t offset, void *dst, size_t nbytes,
                          const intptr_t *stream) {
  const hdal_backend_buffer_ops *ops = moves_of(d);
  hdal_error *(*f)(void *, void *, const void *, uint64_t, void *, size_t, const intptr_t *) = OP(ops, read);
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), handle, offset, dst, nbytes, stream) : missing(d, "read");
}

hdal_error *hdal__op_write(const hdal_device *d, void *handle, uint64_t offset, const void *src, size_t nbytes,
                           const intptr_t *stream) {
  const hdal_backend_buffer_ops *ops = moves_of(d);
  hdal_error *(*f)(void *, void *, void *, uint64_t, const void *, size_t, const intptr_t *) = OP(ops, write);
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), handle, offset, src, nbytes, stream) : missing(d, "write");
}

bool hdal__op_copies(const hdal_device *dst_dev, const hdal_device *src_dev) {
  return dst_dev && src_dev && dst_dev->backend == src_dev->backend && OP(moves_of(dst_dev), copy);
}

hdal_error *hdal__op_copy(const hdal_device *dst_dev, void *dst, uint64_t dst_offset, const hdal_device *src_dev,
                          const void *src, uint64_t src_offset, size_t nbytes, const intptr_t *stream) {
  if (!hdal__op_copies(dst_dev, src_dev)) return missing(dst_dev, "copy");
  hdal_error *e = refusal(dst_dev);
  if (!e) e = refusal(src_dev);
  return e ? e
           : moves_of(dst_dev)->copy(state_of(dst_dev), data_of(dst_dev), dst, dst_offset, data_of(src_dev), src,
                                     src_offset, nbytes, stream);
}

void *hdal__op_host_pointer(const hdal_device *d, void *handle, uint64_t offset) {
  void *(*f)(void *, void *, void *, uint64_t) = OP(moves_of(d), host_pointer);
  return f && handle && callable(d) ? f(state_of(d), data_of(d), handle, offset) : NULL;
}

hdal_error *hdal__op_subrange(const hdal_device *d, void *handle, uint64_t offset, size_t nbytes, void **out) {
  hdal_error *(*f)(void *, void *, void *, uint64_t, size_t, void **) = OP(d->ops, subrange);
  *out = NULL;
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), handle, offset, nbytes, out) : NULL;
}

hdal_error *hdal__op_stream_wait(const hdal_device *d, intptr_t stream) {
  hdal_error *(*f)(void *, void *, intptr_t) = OP(d->ops, stream_wait);
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), stream) : NULL;
}

hdal_error *hdal__op_work_stream(const hdal_device *d, intptr_t *stream) {
  hdal_error *(*f)(void *, void *, intptr_t *) = OP(d->ops, work_stream);
  *stream = 0;
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), stream) : NULL;
}

hdal_error *hdal__op_synchronize(const hdal_device *d) {
  hdal_error *(*f)(void *, void *) = OP(d->ops, synchronize);
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d)) : NULL;
}

/* Whether d's backend says its devices have native handles of kind `which` (hdal_backend::native_handles). */
static bool offers(const hdal_device *d, hdal_native_handle which) {
  const hdal_native_handle *k = d->backend && d->backend->desc ? d->backend->desc->native_handles : NULL;
  while (k && *k && *k != which) k++;
  return k && *k;
}

bool hdal__op_native_handle(const hdal_device *d, hdal_native_handle which, intptr_t *handle, hdal_error **error) {
  bool (*f)(void *, void *, hdal_native_handle, intptr_t *, hdal_error **) = OP(d->ops, native_handle);
  *handle = 0;
  if ((*error = refusal(d))) return true;
  return f && offers(d, which) && f(state_of(d), data_of(d), which, handle, error);
}

/* Two devices of one backend of this process (hdal_device_link checks that). */
hdal_error *hdal__op_peer_access(const hdal_device *a, const hdal_device *b, bool *can) {
  hdal_error *(*f)(void *, void *, void *, bool *) = OP(a->ops, peer_access);
  *can = false;
  hdal_error *e = refusal(a);
  return e ? e : f ? f(state_of(a), data_of(a), data_of(b), can) : NULL;
}

bool hdal__op_fabric(const hdal_device *a, const hdal_device *b, hdal_link *out) {
  bool (*f)(void *, void *, void *, hdal_link *) = OP(a->ops, fabric);
  return f && callable(a) && f(state_of(a), data_of(a), data_of(b), out);
}

hdal_error *hdal__op_fence(const hdal_device *d, void *handle, void **fence) {
  hdal_error *(*f)(void *, void *, void *, void **) = OP(d->ops, fence);
  *fence = NULL;
  hdal_error *e = refusal(d);
  return e ? e : f ? f(state_of(d), data_of(d), handle, fence) : NULL;
}

bool hdal__op_fence_done(const hdal_device *d, void *fence, bool wait) {
  bool (*f)(void *, void *, void *, bool) = OP(d->ops, fence_done);
  return !f || !callable(d) || f(state_of(d), data_of(d), fence, wait);
}

bool hdal__op_runtime_pool(const hdal_device *d, hdal_backend_pool_request request, uint64_t *reserved) {
  bool (*f)(void *, void *, hdal_backend_pool_request, uint64_t *) = OP(d->ops, runtime_pool);
  *reserved = 0;
  return f && callable(d) && f(state_of(d), data_of(d), request, reserved);
}
