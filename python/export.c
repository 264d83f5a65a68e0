/* SPDX-License-Identifier: BSD-3-Clause
 * Buffer.__dlpack__: the producer side of the DLPack protocol, as the array
 * API standard (2023.12) asks it (docs/python.md). */
#include <limits.h>
#include <stdint.h>

#include "pyhdal.h"

static const char name_legacy[] = HDAL_DLPACK_CAPSULE, name_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED;
static PyObject *str_stream, *str_max_version, *str_dl_device, *str_copy;

/* A capsule nobody consumed still holds its name: its tensor goes back here. */
static void capsule_destructor(PyObject *capsule) {
  const char *name = PyCapsule_GetName(capsule);
  if (!name || name[0] != 'd') return; /* "used_...": consumed, the common case, told at the first byte */
  if (PyCapsule_IsValid(capsule, name_legacy)) {
    DLManagedTensor *t = PyCapsule_GetPointer(capsule, name_legacy);
    if (t->deleter) t->deleter(t);
  } else if (PyCapsule_IsValid(capsule, name_versioned)) {
    DLManagedTensorVersioned *t = PyCapsule_GetPointer(capsule, name_versioned);
    if (t->deleter) t->deleter(t);
  }
}

/* A pair of ints, as max_version and dl_device are given, each within
 * [lo, hi] (the C field's range): a larger one raises OverflowError, as
 * CPython does for a C int, rather than being cut to 32 bits (docs/python.md). */
static int int_pair(PyObject *o, const char *what, long long lo, long long hi, long long *a, long long *b) {
  if (!PyTuple_Check(o) || PYHDAL_TUPLE_SIZE(o) != 2) {
    PyErr_Format(PyExc_TypeError, "%s must be a tuple of two ints, got %.100s", what, PYHDAL_TP_NAME(o));
    return -1;
  }
  long long *v[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    int over = 0;
    *v[i] = PyLong_AsLongLongAndOverflow(PYHDAL_TUPLE_ITEM(o, i), &over);
    if (*v[i] == -1 && PyErr_Occurred()) return -1;
    if (over || *v[i] < lo || *v[i] > hi) {
      PyErr_Format(PyExc_OverflowError, "%s[%d] is out of range (%lld to %lld)", what, i, lo, hi);
      return -1;
    }
  }
  return 0;
}

/* The export every CPU consumer asks (numpy's np.from_dlpack): zero-copy, of
 * a buffer of hdal's CPU backend, on its own device, without a stream.  The
 * tensor holds the Python object, as numpy's own exports hold the array,
 * rather than a reference of the library's buffer: no atomic operation and no
 * allocation outside Python's (bench/bench_python.py).  Only for the CPU
 * backend, whose memory is plain memory (in a fork() child too, where the
 * library refuses every other device); every other export, and every refusal
 * (a read-only buffer as a legacy tensor), is the library's
 * (hdal_buffer_to_dlpack_tensor), whose rules this keeps: the tensor's data
 * is hdal_buffer_data, byte_offset 0, strides set, version 1.min(minor, 3),
 * READ_ONLY for a read-only buffer (docs/dlpack.md, "Export"). */
typedef struct {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
  PyObject *owner;
  int64_t dims[]; /* shape, then strides */
} cpu_export;

/* The block goes back to its buffer for the next export (numpy keeps free
 * lists likewise), or to Python's allocator when the buffer has one already. */
static void cpu_export_put(cpu_export *x) {
  pyhdal_buffer *b = (pyhdal_buffer *)x->owner;
  if (!b->spare) b->spare = x;
  else PyMem_Free(x);
  Py_DECREF(b); /* last: it may free b, and its spare with it */
}

static void cpu_export_free(cpu_export *x) {
  if (pyhdal_holds_gil()) { /* the common case: an array freed by Python code */
    cpu_export_put(x);
    return;
  }
  PyGILState_STATE g = PyGILState_Ensure(); /* a consumer may let go from any thread */
  cpu_export_put(x);
  PyGILState_Release(g);
}
static void cpu_legacy_deleter(DLManagedTensor *m) {
  if (m) cpu_export_free(m->manager_ctx);
}
static void cpu_versioned_deleter(DLManagedTensorVersioned *m) {
  if (m) cpu_export_free(m->manager_ctx);
}

/* The tensor, or NULL when the library must answer (another backend, a refusal, out of memory). */
static void *cpu_export_of(PyObject *self, hdal_buffer *buf, DLPackVersion maxv) {
  bool legacy = maxv.major == 0, read_only = hdal_buffer_is_read_only(buf);
  if (!pyhdal_buffer_known(self)->cpu || (legacy && read_only)) return NULL;
  int32_t nd = hdal_buffer_ndim(buf);
  pyhdal_buffer *b = (pyhdal_buffer *)self;
  cpu_export *x = b->spare ? b->spare : PyMem_Malloc(sizeof *x + 2 * (size_t)nd * sizeof(int64_t));
  if (!x) return NULL;
  b->spare = NULL;
  DLTensor t;
  pyhdal_buffer_dltensor(self, &t); /* host memory: its data is an address, never refused */
  if (nd) { /* the tensor's own copies: it outlives this call */
    memcpy(x->dims, t.shape, (size_t)nd * sizeof(int64_t));
    memcpy(x->dims + nd, t.strides, (size_t)nd * sizeof(int64_t));
    t.shape = x->dims;
    t.strides = x->dims + nd;
  }
  Py_INCREF(self);
  x->owner = self;
  if (legacy) {
    x->m.legacy = (DLManagedTensor){.dl_tensor = t, .manager_ctx = x, .deleter = cpu_legacy_deleter};
  } else {
    uint32_t minor = maxv.major == 1 && maxv.minor < HDAL_DLPACK_MINOR ? maxv.minor : HDAL_DLPACK_MINOR;
    x->m.versioned = (DLManagedTensorVersioned){.version = {HDAL_DLPACK_MAJOR, minor}, .manager_ctx = x,
                                                .deleter = cpu_versioned_deleter, .dl_tensor = t,
                                                .flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0};
  }
  return &x->m;
}

PyObject *pyhdal_buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  hdal_export_options opts = {.struct_size = sizeof opts};
  if (nargs || kwnames) {
    PyObject *names[4] = {str_stream, str_max_version, str_dl_device, str_copy};
    PyObject *kw[4];
    if (pyhdal_parse_kwargs("__dlpack__", nargs, 0, kwnames, args, names, 4, kw) < 0) return NULL;
    if (pyhdal_stream(kw[0], &opts.has_stream, &opts.stream) < 0 || pyhdal_copy_mode(kw[3], &opts.copy) < 0)
      return NULL;
    if (kw[1] && kw[1] != Py_None) {
      long long major, minor;
      if (int_pair(kw[1], "max_version", LLONG_MIN, UINT32_MAX, &major, &minor) < 0) return NULL;
      if (major < 0 || minor < 0) {
        PyErr_SetString(PyExc_ValueError, "max_version must not be negative");
        return NULL;
      }
      opts.max_version.major = (uint32_t)major;
      opts.max_version.minor = (uint32_t)minor;
    }
    if (kw[2] && kw[2] != Py_None) {
      long long type, id;
      if (int_pair(kw[2], "dl_device", INT32_MIN, INT32_MAX, &type, &id) < 0) return NULL;
      opts.has_dl_device = true;
      opts.dl_device.device_type = (DLDeviceType)type;
      opts.dl_device.device_id = (int32_t)id;
    }
  }
  hdal_buffer *buf = ((pyhdal_buffer *)self)->buf;
  /* "On CPU and other device types without streams, only None is accepted" (the array API), for the
   * device the tensor goes to. */
  if (opts.has_stream &&
      (opts.has_dl_device ? opts.dl_device : hdal_device_dlpack_device(hdal_buffer_device(buf))).device_type == kDLCPU) {
    return pyhdal_refuse_export("INVALID_ARGUMENT",
                                "stream must be None for a tensor on the CPU (kDLCPU has no streams), got %zd",
                                (Py_ssize_t)opts.stream);
  }
  void *tensor = NULL;
  hdal_error *err = NULL;
  if (!opts.has_dl_device && opts.copy != HDAL_COPY_ALWAYS && !opts.has_stream &&
      (tensor = cpu_export_of(self, buf, opts.max_version))) {
    /* done: a CPU buffer's tensor */
  } else if (opts.has_dl_device || opts.copy == HDAL_COPY_ALWAYS) { /* may copy: without the GIL */
    Py_BEGIN_ALLOW_THREADS
    err = hdal_buffer_to_dlpack_tensor(buf, &opts, &tensor);
    Py_END_ALLOW_THREADS
  } else {
    err = hdal_buffer_to_dlpack_tensor(buf, &opts, &tensor);
  }
  if (err) return pyhdal_raise_export(err);
  bool legacy = opts.max_version.major == 0;
  PyObject *capsule = PyCapsule_New(tensor, legacy ? name_legacy : name_versioned, capsule_destructor);
  if (!capsule) { /* the tensor goes back at once */
    if (legacy) ((DLManagedTensor *)tensor)->deleter(tensor);
    else ((DLManagedTensorVersioned *)tensor)->deleter(tensor);
  }
  return capsule;
}

int pyhdal_export_init(PyObject *module) {
  return (str_stream = PyUnicode_InternFromString("stream")) &&
                 (str_max_version = PyUnicode_InternFromString("max_version")) &&
                 (str_dl_device = PyUnicode_InternFromString("dl_device")) &&
                 (str_copy = PyUnicode_InternFromString("copy"))
             ? 0
             : -1;
}
