/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the one way into a backend's buffer operations (device_ops.c).
 *
 * No other file of the core reads an operations table: each operation of
 * hdal_backend_buffer_ops has one function here, taking the device (the
 * backend's state and per-device data come from it).  What every call needs
 * is written once, in device_ops.c: the fork() rule, the rule for optional
 * operations (a module's table may end before an operation, or leave it NULL),
 * host memory's operations for what a module does not move itself, and the
 * errors for what a backend lacks.  docs/backend-abi.md describes each
 * operation from the backend's side. */
#ifndef HDAL_DEVICE_OPS_H
#define HDAL_DEVICE_OPS_H

#include <stdint.h>
#include "internal.h"

/* An operation of a table, NULL when the backend has no table (IFRT-native). */
#define HDAL__OP(ops, f) ((ops) ? (ops)->f : NULL)

/* ---- fork() (fork.c counts them) ---- */
/* A device whose backend must not be called here: a fork() child of the
 * process that made the context, and a module's device (CPU devices are
 * plain memory and keep working). */
HDAL__HIDDEN bool hdal__op_forked(const hdal_device *d);
/* HDAL_FAILED_PRECONDITION saying why, when hdal__op_forked(d); else NULL.
 * Every operation below checks it; a path that must refuse before its other
 * checks (an import, before it plans a view) asks first.  Inline: the test
 * is false in every process but a fork() child, and the import path asks it. */
HDAL__HIDDEN hdal_error *hdal__op_fork_refusal(const hdal_device *d);
static inline hdal_error *hdal__op_usable(const hdal_device *d) {
  return __builtin_expect(hdal__forked(d->ctx), 0) ? hdal__op_fork_refusal(d) : NULL;
}

/* ---- what a device is served by ---- */
/* Whether a buffer runtime serves the device here (not a remote or IFRT-native one). */
static inline bool hdal__op_served(const hdal_device *d) { return d->ops != NULL; }

/* ---- the operations: NULL device = host memory no device was asked about ---- */
/* Routes a tensor of one of the backend's DLPack types to its device: *index,
 * or SIZE_MAX when the backend has no route operation (the core matches
 * device ids).  Inline: every routed import asks. */
static inline hdal_error *hdal__op_route(const hdal__backend *b, const DLTensor *t, size_t *index) {
  *index = SIZE_MAX;
  hdal_error *(*route)(void *, const DLTensor *, size_t *) = HDAL__OP(b->desc->buffer_ops, route);
  hdal_error *e;
  if (b->ndevices && (e = hdal__op_usable(b->devices[0]))) return e; /* before route() calls the runtime */
  return route ? route(b->state, t, index) : NULL;
}
/* Whether the device addresses the tensor's memory in place; false without
 * the operation.  The caller has made sure of the device, served here
 * (hdal__op_served) and not in a fork() child (hdal__op_usable): the import
 * does, before it plans, so this asks nothing more.  Inline, with
 * retains/retain: the zero-copy import's operations. */
static inline __attribute__((always_inline)) bool hdal__op_can_alias(const hdal_device *d, const DLTensor *t) {
  /* The built-in backend's can_alias is host memory's rule, known here
   * without the call (docs/design.md, "Layout and data flow"). */
  if (__builtin_expect(d->host_rule, 1)) return hdal__host_readable_type(t->device.device_type);
  bool (*f)(void *, void *, const DLTensor *) = d->ops->can_alias;
  return f && f(d->backend->state, d->data, t);
}
HDAL__HIDDEN hdal_error *hdal__op_allocate(const hdal_device *d, size_t nbytes, void **handle);
/* The refusal hdal__op_allocate gives a device whose backend cannot allocate; NULL when it can. */
HDAL__HIDDEN hdal_error *hdal__op_allocate_check(const hdal_device *d);
/* A reference on a foreign handle; nothing to do without the operation, of
 * which hdal__op_retains says whether the backend has it (then the handle
 * must be released).  Of a served device, as hdal__op_can_alias. */
static inline bool hdal__op_retains(const hdal_device *d) { return d->ops->retain != NULL; }
static inline hdal_error *hdal__op_retain(const hdal_device *d, void *handle) {
  hdal_error *(*f)(void *, void *, void *) = d->ops->retain;
  hdal_error *e = hdal__op_usable(d);
  return e ? e : f ? f(d->backend->state, d->data, handle) : NULL;
}
/* Gives a handle back; skipped without the operation, and in a fork() child. */
HDAL__HIDDEN void hdal__op_release(const hdal_device *d, void *handle);
/* Moving bytes: the module's operations, host memory's for a device of host
 * memory whose module has no host_pointer (docs/backend-abi.md, "Host memory"). */
HDAL__HIDDEN hdal_error *hdal__op_read(const hdal_device *d, const void *handle, uint64_t offset, void *dst,
                                       size_t nbytes, const intptr_t *stream);
HDAL__HIDDEN hdal_error *hdal__op_write(const hdal_device *d, void *handle, uint64_t offset, const void *src,
                                        size_t nbytes, const intptr_t *stream);
/* Whether hdal__op_copy can copy from src_dev to dst_dev: devices of one backend that has the operation. */
HDAL__HIDDEN bool hdal__op_copies(const hdal_device *dst_dev, const hdal_device *src_dev);
HDAL__HIDDEN hdal_error *hdal__op_copy(const hdal_device *dst_dev, void *dst, uint64_t dst_offset,
                                       const hdal_device *src_dev, const void *src, uint64_t src_offset, size_t nbytes,
                                       const intptr_t *stream);
/* The host address of a handle's byte; NULL when the memory is not host-addressable. */
HDAL__HIDDEN void *hdal__op_host_pointer(const hdal_device *d, void *handle, uint64_t offset);
/* A handle of its own that starts `offset` bytes in; *out NULL without the
 * operation (host and device pointers are addresses: the caller adds). */
HDAL__HIDDEN hdal_error *hdal__op_subrange(const hdal_device *d, void *handle, uint64_t offset, size_t nbytes,
                                           void **out);
/* Orders the device's work after the caller's stream; nothing without the operation. */
HDAL__HIDDEN hdal_error *hdal__op_stream_wait(const hdal_device *d, intptr_t stream);
/* The stream hdal's work on the device goes to; 0 without the operation. */
HDAL__HIDDEN hdal_error *hdal__op_work_stream(const hdal_device *d, intptr_t *stream);
/* Waits for the work queued so far on the device's work stream; nothing without the operation. */
HDAL__HIDDEN hdal_error *hdal__op_synchronize(const hdal_device *d);
/* The native handle `which`: true with *handle, or with *error (a refusal or the runtime's); false when the
 * backend has none of that kind, or no operation. */
/* Whether a and b, two devices of one backend of this process, give each other peer access: *can
 * false when the backend has no peer_access or refuses (a fork() child), with the error. */
HDAL__HIDDEN hdal_error *hdal__op_peer_access(const hdal_device *a, const hdal_device *b, bool *can);
/* Whether the backend knows a fabric joining a and b (the same conditions): false without the operation, or
 * in a fork() child. */
HDAL__HIDDEN bool hdal__op_fabric(const hdal_device *a, const hdal_device *b, hdal_link *out);
HDAL__HIDDEN bool hdal__op_native_handle(const hdal_device *d, hdal_native_handle which, intptr_t *handle,
                                         hdal_error **error);
/* The pool's markers (pool.c): *fence NULL without the operation; fence_done true without it. */
HDAL__HIDDEN hdal_error *hdal__op_fence(const hdal_device *d, void *handle, void **fence);
HDAL__HIDDEN bool hdal__op_fence_done(const hdal_device *d, void *fence, bool wait);
/* The runtime's own pool; false without the operation. */
HDAL__HIDDEN bool hdal__op_runtime_pool(const hdal_device *d, hdal_backend_pool_request request, uint64_t *reserved);

#endif
