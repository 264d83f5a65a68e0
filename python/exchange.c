/* SPDX-License-Identifier: BSD-3-Clause
 * DLPack's C exchange API, the producer side (docs/python.md, "The C exchange
 * API"): the table that hdal.Buffer's type publishes as
 * __dlpack_c_exchange_api__ (and as __c_dlpack_exchange_api__, the name
 * cuda-python's StridedMemoryView also reads), a PyCapsule named
 * "dlpack_exchange_api" holding a DLPackExchangeAPI of version 1.3 that lives
 * as long as the process.  import.c is the consumer side.
 *
 * Every entry is a C function a consumer calls without Python in the way:
 *   managed_tensor_allocator        a new compact tensor on any device hdal
 *                                   serves, from its pool; errors only
 *                                   through SetError, never an exception;
 *   managed_tensor_from_py_object_no_sync   an hdal.Buffer as a versioned
 *                                   tensor (zero-copy, as __dlpack__);
 *   managed_tensor_to_py_object_no_sync     a tensor (stolen) as an hdal.Buffer;
 *   dltensor_from_py_object_no_sync an hdal.Buffer as a borrowed DLTensor,
 *                                   with no allocation: shape and strides are
 *                                   the buffer's own;
 *   current_work_stream             hdal_device_work_stream: NULL for the CPU
 *                                   and CUDA/ROCm (the legacy default stream),
 *                                   hdal's cl_command_queue for OpenCL.
 * Devices are those of the default context (hdal.default_context()). */
#include "pyhdal.h"

pyhdal_counts pyhdal_exchange_counts;

PyObject *pyhdal_exchange_counts_get(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return Py_BuildValue("{s:K,s:K,s:K,s:K}", "import_table", pyhdal_exchange_counts.import_table, "import_capsule",
                       pyhdal_exchange_counts.import_capsule, "export_table", pyhdal_exchange_counts.export_table,
                       "to_py_table", pyhdal_exchange_counts.to_py_table);
}

static const hdal_export_options versioned = {.struct_size = sizeof versioned, .max_version = {1, 3}};

/* What an hdal error is called in SetError's `kind`: the Python exception a consumer would raise. */
static const char *kind_of(hdal_code c) {
  switch (c) {
  case HDAL_RESOURCE_EXHAUSTED: return "MemoryError";
  case HDAL_INVALID_ARGUMENT:
  case HDAL_OUT_OF_RANGE: return "ValueError";
  case HDAL_UNIMPLEMENTED: return "NotImplementedError";
  default: return "RuntimeError";
  }
}

static int api_allocator(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                         void (*set_error)(void *error_ctx, const char *kind, const char *message)) {
  if (out) *out = NULL;
  if (!prototype || !out) {
    set_error(error_ctx, "ValueError", "managed_tensor_allocator: prototype or out is NULL");
    return -1;
  }
  /* The default context is a Python object: made, if need be, with the GIL held. */
  PyGILState_STATE g = PyGILState_Ensure();
  pyhdal_context *ctx = pyhdal_default_context();
  int rc = -1;
  if (!ctx) {
    /* Told through set_error, as the protocol wants: no exception is left behind. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *message = text ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
    PyErr_Clear();
    set_error(error_ctx, "RuntimeError", message ? message : "hdal's default context could not be created");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
  } else {
    hdal_device *d;
    hdal_buffer *b = NULL;
    void *t = NULL;
    hdal_error *e = hdal_context_device_for_dlpack(ctx->ctx, prototype->device, &d);
    if (!e) e = hdal_buffer_allocate(d, prototype->ndim, prototype->shape, prototype->dtype, &b);
    if (!e) e = hdal_buffer_to_dlpack_tensor(b, &versioned, &t); /* the tensor holds the buffer now */
    hdal_buffer_release(b);
    if (e) {
      set_error(error_ctx, kind_of(hdal_error_code(e)), hdal_error_message(e));
      hdal_error_destroy(e);
    } else {
      *out = t;
      rc = 0;
    }
  }
  PyGILState_Release(g);
  return rc;
}

static pyhdal_buffer *buffer_of(void *py_object, const char *who) {
  PyObject *o = py_object;
  if (o && PyObject_TypeCheck(o, pyhdal_buffer_type)) return (pyhdal_buffer *)o;
  PyErr_Format(PyExc_TypeError, "%s: expected an hdal.Buffer, got %.100s", who, o ? PYHDAL_TP_NAME(o) : "NULL");
  return NULL;
}

static int api_from_py(void *py_object, DLManagedTensorVersioned **out) {
  pyhdal_buffer *b = buffer_of(py_object, "managed_tensor_from_py_object_no_sync");
  if (!b || !out) {
    if (b) PyErr_SetString(PyExc_ValueError, "managed_tensor_from_py_object_no_sync: out is NULL");
    return -1;
  }
  pyhdal_exchange_counts.export_table++;
  void *t;
  hdal_error *e = hdal_buffer_to_dlpack_tensor(b->buf, &versioned, &t);
  if (e) {
    *out = NULL;
    pyhdal_raise_export(e);
    return -1;
  }
  *out = t;
  return 0;
}

static int api_dltensor(void *py_object, DLTensor *out) {
  pyhdal_buffer *b = buffer_of(py_object, "dltensor_from_py_object_no_sync");
  if (!b || !out) {
    if (b) PyErr_SetString(PyExc_ValueError, "dltensor_from_py_object_no_sync: out is NULL");
    return -1;
  }
  pyhdal_exchange_counts.export_table++;
  if (!pyhdal_buffer_dltensor((PyObject *)b, out)) {
    pyhdal_refuse_export("FAILED_PRECONDITION", "dltensor_from_py_object_no_sync: the runtime could not give a "
                                                "handle at the buffer's first element");
    return -1;
  }
  return 0;
}

static int api_to_py(DLManagedTensorVersioned *tensor, void **out_py_object) {
  if (out_py_object) *out_py_object = NULL;
  if (!tensor || !out_py_object) {
    /* Stolen: a tensor we cannot hand back is given back. */
    if (tensor && tensor->deleter) pyhdal_call_deleter(tensor, true, true);
    PyErr_SetString(PyExc_ValueError, "managed_tensor_to_py_object_no_sync: tensor or out is NULL");
    return -1;
  }
  pyhdal_exchange_counts.to_py_table++;
  pyhdal_context *ctx = pyhdal_default_context();
  PyObject *b = ctx ? pyhdal_import_versioned(ctx, tensor, NULL, NULL) : NULL;
  if (!ctx && tensor->deleter) pyhdal_call_deleter(tensor, true, true); /* the context's error kept */
  if (!b) return -1;
  *out_py_object = b;
  return 0;
}

static int api_work_stream(DLDeviceType type, int32_t id, void **out) {
  if (!out) {
    PyErr_SetString(PyExc_ValueError, "current_work_stream: out is NULL");
    return -1;
  }
  *out = NULL;
  if (type == kDLCPU) return 0; /* no streams: nothing to ask */
  PyGILState_STATE g = PyGILState_Ensure();
  hdal_device *d = pyhdal_default_device((DLDevice){type, id});
  intptr_t stream = 0;
  hdal_error *e = d ? hdal_device_work_stream(d, &stream) : NULL;
  if (e) pyhdal_raise(e);
  int rc = d && !e ? 0 : -1;
  *out = (void *)stream;
  PyGILState_Release(g);
  return rc;
}

static DLPackExchangeAPI exchange_api = {
    .header = {.version = {1, 3}, .prev_api = NULL},
    .managed_tensor_allocator = api_allocator,
    .managed_tensor_from_py_object_no_sync = api_from_py,
    .managed_tensor_to_py_object_no_sync = api_to_py,
    .dltensor_from_py_object_no_sync = api_dltensor,
    .current_work_stream = api_work_stream,
};

/* hdal.Buffer is immutable (as its static type was): its own module sets the
 * names in its dict with the generic setter, as type.__setattr__ does past its
 * check of the flag (Cython does the same for its types in the limited API),
 * before any lookup of them. */
static int set_on_type(PyTypeObject *type, const char *name, PyObject *value) {
  PyObject *key = PyUnicode_InternFromString(name);
  int rc = key ? PyObject_GenericSetAttr((PyObject *)type, key, value) : -1;
  Py_XDECREF(key);
  PyType_Modified(type);
  return rc;
}

int pyhdal_exchange_init(PyObject *module) {
  (void)module;
  PyObject *capsule = PyCapsule_New(&exchange_api, HDAL_DLPACK_EXCHANGE_API_CAPSULE, NULL);
  if (!capsule) return -1;
  int rc = set_on_type(pyhdal_buffer_type, "__dlpack_c_exchange_api__", capsule) < 0 ||
                   set_on_type(pyhdal_buffer_type, "__c_dlpack_exchange_api__", capsule) < 0
               ? -1
               : 0;
  Py_DECREF(capsule);
  return rc;
}
