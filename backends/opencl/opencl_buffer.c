/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal OpenCL backend — buffer operations.  Handles are cl_mem.
 *
 * hdal's own buffers live in the device's own context; an imported cl_mem lives
 * in its producer's context, so work on it goes to a queue that hdal creates on
 * the device in that context (kept until finalize).  Transfers are blocking:
 * when an operation returns, the bytes are where they were asked to go.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "opencl.h"

static cl_context mem_context(cl_mem m, cl_int *err) {
  cl_context c = NULL;
  *err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof c, &c, NULL);
  return *err == CL_SUCCESS ? c : NULL;
}

static bool context_has_device(cl_context c, cl_device_id id) {
  cl_uint n = 0;
  if (clGetContextInfo(c, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL) != CL_SUCCESS || !n) return false;
  cl_device_id small[8], *ids = n <= 8 ? small : calloc(n, sizeof *ids);
  bool found = false;
  if (ids && clGetContextInfo(c, CL_CONTEXT_DEVICES, n * sizeof *ids, ids, NULL) == CL_SUCCESS)
    for (cl_uint i = 0; i < n && !found; i++) found = ids[i] == id;
  if (ids != small) free(ids);
  return found;
}

/* hdal's context on `d`, made on first need. */
static hdal_error *own_context(hdal__ocl_device *d, cl_context *out) {
  cl_int e = hdal__ocl_device_context(d, out);
  if (e == CL_SUCCESS) return NULL;
  return d->host->error_new(HDAL_FAILED_PRECONDITION,
                            "OpenCL device %d: no context can be created on it: clCreateContext: %s (%d)",
                            d->flat_index, hdal__ocl_error_name(e), (int)e);
}

/* The queue on `d` for memory of context `c` (hdal's own, or a foreign one). */
static hdal_error *queue_for(hdal__ocl_device *d, cl_context c, cl_command_queue *out) {
  cl_context own;
  hdal_error *err = own_context(d, &own);
  if (err) return err;
  cl_int e = CL_SUCCESS;
  pthread_mutex_lock(&d->lock);
  if (c == own) {
    if (!d->queue) {
      hdal__ocl_runtime_lock();
      d->queue = clCreateCommandQueue(own, d->id, 0, &e);
      hdal__ocl_runtime_unlock();
    }
    if (!d->queue) err = hdal__ocl_error(d->host, "clCreateCommandQueue", e);
    *out = d->queue;
  } else {
    hdal__ocl_foreign_queue *f = d->foreign;
    while (f && f->context != c) f = f->next;
    if (!f) {
      /* A queue of a context that does not hold the device is refused by OpenCL. */
      cl_command_queue q = NULL;
      if (context_has_device(c, d->id)) {
        hdal__ocl_runtime_lock();
        q = clCreateCommandQueue(c, d->id, 0, &e);
        hdal__ocl_runtime_unlock();
      }
      if (!q && e == CL_SUCCESS) e = CL_INVALID_CONTEXT;
      if (!q) err = hdal__ocl_error(d->host, "clCreateCommandQueue (the cl_mem's context)", e);
      else if (!(f = malloc(sizeof *f))) {
        clReleaseCommandQueue(q);
        err = d->host->error_oom();
      } else {
        f->context = c;
        f->queue = q;
        f->next = d->foreign;
        d->foreign = f;
      }
    }
    *out = f ? f->queue : NULL;
  }
  pthread_mutex_unlock(&d->lock);
  return err;
}

static hdal_error *queue_for_mem(hdal__ocl_device *d, cl_mem m, cl_command_queue *out) {
  cl_int e;
  cl_context c = mem_context(m, &e);
  if (!c) return hdal__ocl_error(d->host, "clGetMemObjectInfo(CL_MEM_CONTEXT)", e);
  return queue_for(d, c, out);
}

/* Orders what follows after the work already submitted to the caller's queue. */
static hdal_error *after_stream(hdal__ocl_device *d, const intptr_t *stream) {
  if (!stream) return NULL;
  if (!*stream) return d->host->error_new(HDAL_INVALID_ARGUMENT, "stream: a NULL cl_command_queue");
  cl_int e = clFinish((cl_command_queue)*stream);
  return e == CL_SUCCESS ? NULL : hdal__ocl_error(d->host, "clFinish (the caller's cl_command_queue)", e);
}

static bool ocl_can_alias(void *state, void *dev, const DLTensor *t) {
  hdal__ocl_device *d = dev;
  if (!d->servable || t->device.device_type != kDLOpenCL || !t->data) return false;
  /* hdal hands out an OpenCL buffer as a cl_mem that starts at its first element
   * (hdal_buffer_data, export): a sub-buffer, which cannot start off the device's
   * base address alignment.  Such a tensor is copied instead. */
  if (t->byte_offset % d->base_align) return false;
  cl_mem m = t->data;
  cl_mem_object_type type;
  cl_int e;
  if (clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, NULL) != CL_SUCCESS || type != CL_MEM_OBJECT_BUFFER)
    return false;
  cl_context c = mem_context(m, &e);
  return c && context_has_device(c, d->id);
}

/* The device a kDLOpenCL tensor names by its flat index, when its cl_mem lives
 * in a context that holds that device.  Memory of a context without it cannot
 * be read on that device (OpenCL refuses the queue); rather than guess which
 * device the producer meant, the error says what was claimed and where the
 * memory lives (docs/opencl.md).  An index out of range is left to the core. */
static hdal_error *ocl_route(void *state, const DLTensor *t, size_t *local_index) {
  hdal__ocl_state *s = state;
  size_t i = 0;
  while (i < s->ndevices && s->devices[i]->flat_index != t->device.device_id) i++;
  *local_index = i;
  if (i == s->ndevices || !t->data || !s->devices[i]->servable) return NULL;
  hdal__ocl_device *d = s->devices[i];
  cl_int e;
  cl_context c = mem_context(t->data, &e);
  if (!c) return hdal__ocl_error(d->host, "clGetMemObjectInfo(CL_MEM_CONTEXT)", e);
  if (context_has_device(c, d->id)) return NULL;
  /* Which devices the memory's context holds, as hdal numbers them. */
  char held[256] = "", name[128] = "";
  cl_device_id ids[8];
  cl_uint n = 0;
  size_t len = 0;
  if (clGetContextInfo(c, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL) != CL_SUCCESS) n = 0;
  if (n > 8 || clGetContextInfo(c, CL_CONTEXT_DEVICES, n * sizeof *ids, ids, NULL) != CL_SUCCESS) n = 0;
  for (cl_uint k = 0; k < n && len < sizeof held; k++) {
    size_t j = 0;
    while (j < s->ndevices && s->devices[j]->id != ids[k]) j++;
    int w = j < s->ndevices ? snprintf(held + len, sizeof held - len, "%sOpenCL device %d", len ? ", " : "",
                                       s->devices[j]->flat_index)
                            : snprintf(held + len, sizeof held - len, "%sa device hdal does not list", len ? ", " : "");
    if (w > 0) len += (size_t)w;
  }
  if (clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof name - 1, name, NULL) != CL_SUCCESS) name[0] = '\0';
  name[sizeof name - 1] = '\0';
  return d->host->error_new(HDAL_INVALID_ARGUMENT,
                            "DLPack tensor on (kDLOpenCL, %d) names OpenCL device %d (%s), but its cl_mem belongs to "
                            "an OpenCL context that does not hold that device (the context holds %s)",
                            (int)t->device.device_id, d->flat_index, name,
                            n > 8 ? "more than 8 devices" : len ? held : "no device it would name");
}

/* PoCL 3.1 (Debian 12) deadlocks in its event bookkeeping when several host
 * threads run blocking commands on its devices at once (seen with 4 threads:
 * pocl_update_event_running against POclReleaseEvent).  hdal's transfers are
 * blocking and each device's queue is in order anyway, so on PoCL's devices
 * they go one at a time, process-wide (PoCL's state is, and several contexts
 * may share it); other platforms' run concurrently, as OpenCL allows.  The
 * lock is never held while waiting on a caller's queue. */
static pthread_mutex_t pocl_transfer_lock = PTHREAD_MUTEX_INITIALIZER;

static void transfer_begin(bool serialise) {
  if (serialise) pthread_mutex_lock(&pocl_transfer_lock);
}
static void transfer_end(bool serialise) {
  if (serialise) pthread_mutex_unlock(&pocl_transfer_lock);
}

static hdal_error *ocl_allocate(void *state, void *dev, size_t nbytes, void **handle) {
  hdal__ocl_device *d = dev;
  if (d->max_alloc && nbytes > d->max_alloc)
    return d->host->error_new(HDAL_RESOURCE_EXHAUSTED,
                              "OpenCL device %d: %zu bytes exceed its largest allocation (%llu bytes)",
                              d->flat_index, nbytes, (unsigned long long)d->max_alloc);
  cl_context c;
  hdal_error *err = own_context(d, &c);
  if (err) return err;
  /* OpenCL has no empty buffer: a zero-size one takes one byte. */
  cl_int e;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE, nbytes ? nbytes : 1, NULL, &e);
  if (!m) {
    if (e == CL_INVALID_BUFFER_SIZE) e = CL_MEM_OBJECT_ALLOCATION_FAILURE; /* too big is out of memory */
    return hdal__ocl_error(d->host, "clCreateBuffer", e == CL_SUCCESS ? CL_OUT_OF_RESOURCES : e);
  }
  *handle = m;
  return NULL;
}

static hdal_error *ocl_retain(void *state, void *dev, void *handle) {
  hdal__ocl_device *d = dev;
  cl_int e = clRetainMemObject(handle);
  return e == CL_SUCCESS ? NULL : hdal__ocl_error(d->host, "clRetainMemObject", e);
}

static void ocl_release(void *state, void *dev, void *handle) {
  if (handle) clReleaseMemObject(handle);
}

static hdal_error *ocl_write(void *state, void *dev, void *handle, uint64_t offset, const void *src, size_t nbytes,
                             const intptr_t *stream) {
  hdal__ocl_device *d = dev;
  cl_command_queue q;
  hdal_error *err = after_stream(d, stream);
  if (err || !nbytes) return err;
  if ((err = queue_for_mem(d, handle, &q))) return err;
  transfer_begin(d->serialise_transfers);
  cl_int e = clEnqueueWriteBuffer(q, handle, CL_TRUE, offset, nbytes, src, 0, NULL, NULL);
  transfer_end(d->serialise_transfers);
  return e == CL_SUCCESS ? NULL : hdal__ocl_error(d->host, "clEnqueueWriteBuffer", e);
}

static hdal_error *ocl_read(void *state, void *dev, const void *handle, uint64_t offset, void *dst, size_t nbytes,
                            const intptr_t *stream) {
  hdal__ocl_device *d = dev;
  cl_mem m = (cl_mem)handle; /* OpenCL's API is not const-qualified; reading does not change it */
  cl_command_queue q;
  hdal_error *err = after_stream(d, stream);
  if (err || !nbytes) return err;
  if ((err = queue_for_mem(d, m, &q))) return err;
  transfer_begin(d->serialise_transfers);
  cl_int e = clEnqueueReadBuffer(q, m, CL_TRUE, offset, nbytes, dst, 0, NULL, NULL);
  transfer_end(d->serialise_transfers);
  return e == CL_SUCCESS ? NULL : hdal__ocl_error(d->host, "clEnqueueReadBuffer", e);
}

static hdal_error *ocl_copy(void *state, void *dst_dev, void *dst, uint64_t dst_offset, void *src_dev,
                            const void *src, uint64_t src_offset, size_t nbytes, const intptr_t *stream) {
  hdal__ocl_device *dd = dst_dev, *sd = src_dev;
  cl_mem sm = (cl_mem)src, dm = dst;
  hdal_error *err = after_stream(dd, stream);
  if (err || !nbytes) return err;
  cl_int e;
  cl_context sc = mem_context(sm, &e), dc = sc ? mem_context(dm, &e) : NULL;
  if (!dc) return hdal__ocl_error(dd->host, "clGetMemObjectInfo(CL_MEM_CONTEXT)", e);
  cl_command_queue sq, dq;
  bool serialise = dd->serialise_transfers || sd->serialise_transfers;
  if (sc == dc) {
    /* One context: the device copies by itself. */
    if ((err = queue_for(dd, dc, &dq))) return err;
    transfer_begin(serialise);
    e = clEnqueueCopyBuffer(dq, sm, dm, src_offset, dst_offset, nbytes, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clFinish(dq);
    transfer_end(serialise);
    return e == CL_SUCCESS ? NULL : hdal__ocl_error(dd->host, "clEnqueueCopyBuffer", e);
  }
  /* Across contexts, through the host: the source mapped, written from there. */
  if ((err = queue_for(sd, sc, &sq)) || (err = queue_for(dd, dc, &dq))) return err;
  transfer_begin(serialise);
  void *p = clEnqueueMapBuffer(sq, sm, CL_TRUE, CL_MAP_READ, src_offset, nbytes, 0, NULL, NULL, &e);
  if (!p) {
    transfer_end(serialise);
    return hdal__ocl_error(dd->host, "clEnqueueMapBuffer", e);
  }
  e = clEnqueueWriteBuffer(dq, dm, CL_TRUE, dst_offset, nbytes, p, 0, NULL, NULL);
  if (e != CL_SUCCESS) err = hdal__ocl_error(dd->host, "clEnqueueWriteBuffer", e);
  e = clEnqueueUnmapMemObject(sq, sm, p, 0, NULL, NULL);
  if (e == CL_SUCCESS) e = clFinish(sq);
  transfer_end(serialise);
  if (e != CL_SUCCESS && !err) err = hdal__ocl_error(dd->host, "clEnqueueUnmapMemObject", e);
  return err;
}

static hdal_error *ocl_subrange(void *state, void *dev, void *handle, uint64_t offset, size_t nbytes, void **out) {
  hdal__ocl_device *d = dev;
  cl_mem m = handle, parent = NULL;
  size_t size = 0, base = 0;
  cl_int e = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
  if (e == CL_SUCCESS) e = clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
  if (e == CL_SUCCESS && parent) e = clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof base, &base, NULL);
  if (e != CL_SUCCESS) return hdal__ocl_error(d->host, "clGetMemObjectInfo", e);
  if (offset > size || nbytes > size - offset)
    return d->host->error_new(HDAL_OUT_OF_RANGE, "bytes [%llu, %llu) are outside the %zu-byte cl_mem",
                              (unsigned long long)offset, (unsigned long long)offset + nbytes, size);
  /* The whole object, or nothing to address: the handle itself, one more reference. */
  if ((offset == 0 && nbytes == size) || nbytes == 0) {
    if ((e = clRetainMemObject(m)) != CL_SUCCESS) return hdal__ocl_error(d->host, "clRetainMemObject", e);
    *out = m;
    return NULL;
  }
  /* A sub-buffer cannot be cut from a sub-buffer: cut from its parent. */
  uint64_t origin = base + offset;
  if (origin % d->base_align)
    return d->host->error_new(HDAL_FAILED_PRECONDITION,
                              "cl_mem offset %llu is not a multiple of the device's base address alignment "
                              "(%llu bytes): no sub-buffer can start there",
                              (unsigned long long)origin, (unsigned long long)d->base_align);
  cl_buffer_region region = {(size_t)origin, nbytes};
  cl_mem sub = clCreateSubBuffer(parent ? parent : m, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
  if (!sub) return hdal__ocl_error(d->host, "clCreateSubBuffer", e == CL_SUCCESS ? CL_OUT_OF_RESOURCES : e);
  *out = sub;
  return NULL;
}

static hdal_error *ocl_stream_wait(void *state, void *dev, intptr_t stream) { return after_stream(dev, &stream); }

/* The memory pool's fence (docs/memory.md) is the cl_mem itself.  hdal's
 * transfers are blocking, but a consumer's queue may still hold commands on an
 * exported cl_mem; OpenCL cannot be asked for them, yet implementations that
 * hold a reference per queued command (PoCL) show them in the reference count:
 * the block is reused once hdal's reference is the only one.  Giving the block
 * back needs no wait: OpenCL frees it after the commands that use it. */
static hdal_error *ocl_fence(void *state, void *dev, void *handle, void **fence) {
  *fence = handle;
  return NULL;
}

static bool ocl_fence_done(void *state, void *dev, void *fence, bool wait) {
  cl_uint refs = 0;
  return wait || clGetMemObjectInfo(fence, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL) != CL_SUCCESS ||
         refs <= 1;
}

/* hdal's queue on the device, in its own context: what hdal's work goes to (docs/dlpack.md). */
static hdal_error *ocl_work_stream(void *state, void *dev, intptr_t *stream) {
  hdal__ocl_device *d = dev;
  cl_context own;
  cl_command_queue q = NULL;
  hdal_error *e = own_context(d, &own);
  if (!e) e = queue_for(d, own, &q);
  *stream = e ? 0 : (intptr_t)q;
  return e;
}

/* The work queued on hdal's queue so far, the application's with it; none when the queue was never made. */
static hdal_error *ocl_synchronize(void *state, void *dev) {
  hdal__ocl_device *d = dev;
  pthread_mutex_lock(&d->lock);
  cl_command_queue q = d->queue;
  pthread_mutex_unlock(&d->lock);
  cl_int e = q ? clFinish(q) : CL_SUCCESS;
  return e == CL_SUCCESS ? NULL : hdal__ocl_error(d->host, "clFinish (hdal's queue)", e);
}

/* The device's platform and id, and hdal's context and queue on it (made on first use), as
 * hdal_device_native_handle gives them: the queue is the work stream. */
static bool ocl_native_handle(void *state, void *dev, hdal_native_handle which, intptr_t *handle, hdal_error **error) {
  hdal__ocl_device *d = dev;
  cl_context own = NULL;
  switch (which) {
  case HDAL_NATIVE_OPENCL_PLATFORM: *handle = (intptr_t)d->platform; return true;
  case HDAL_NATIVE_OPENCL_DEVICE: *handle = (intptr_t)d->id; return true;
  case HDAL_NATIVE_OPENCL_CONTEXT:
    if (!(*error = own_context(d, &own))) *handle = (intptr_t)own;
    return true;
  case HDAL_NATIVE_OPENCL_QUEUE: *error = ocl_work_stream(state, dev, handle); return true;
  default: return false;
  }
}

const hdal_backend_buffer_ops hdal__ocl_buffer_ops = {
    .can_alias = ocl_can_alias,
    .route = ocl_route,
    .allocate = ocl_allocate,
    .retain = ocl_retain,
    .release = ocl_release,
    .write = ocl_write,
    .read = ocl_read,
    .copy = ocl_copy,
    .subrange = ocl_subrange,
    .stream_wait = ocl_stream_wait,
    .fence = ocl_fence,
    .fence_done = ocl_fence_done,
    .work_stream = ocl_work_stream,
    .synchronize = ocl_synchronize,
    .native_handle = ocl_native_handle,
};
