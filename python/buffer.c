/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.Buffer: an array on a device, from hdal.from_dlpack or to_device; the
 * Python buffer protocol (PEP 3118) for those in host memory (docs/python.md). */
#include "pyhdal.h"

/* Buffer objects kept for the next one (numpy keeps free lists of its arrays'
 * parts too): an import that allocates and frees its object spends more on
 * that than on its own bookkeeping.  With the GIL; at most BUFFERS_KEPT.  The
 * type is final, so every object kept has its size. */
#define BUFFERS_KEPT 32
static pyhdal_buffer *buffers_kept[BUFFERS_KEPT];
static int nbuffers_kept;

PyObject *pyhdal_buffer_new(pyhdal_context *ctx, hdal_buffer *buf) {
  pyhdal_buffer *self;
  if (nbuffers_kept) {
    self = buffers_kept[--nbuffers_kept];
    PyObject_Init((PyObject *)self, pyhdal_buffer_type); /* its type and one reference, as PyObject_New */
  } else if (!(self = PyObject_New(pyhdal_buffer, pyhdal_buffer_type))) {
    hdal_buffer_release(buf);
    return NULL;
  }
  Py_INCREF((PyObject *)ctx);
  self->ctx = ctx;
  self->buf = buf;
  self->known = 0;
  return (PyObject *)self;
}

static void buffer_dealloc(pyhdal_buffer *self) {
  /* An imported view's source deleter may run here; hdal's shim around it
   * (import.c) takes the GIL it needs, which this thread holds already. */
  hdal_buffer_release(self->buf);
  PyTypeObject *type = Py_TYPE((PyObject *)self);
  Py_DECREF((PyObject *)self->ctx);
  if (nbuffers_kept < BUFFERS_KEPT) buffers_kept[nbuffers_kept++] = self;
  else PyObject_Free(self);
  Py_DECREF((PyObject *)type); /* a heap type: each instance holds it */
}

#define B(self) (((pyhdal_buffer *)(self))->buf)

static PyObject *int64_tuple(const int64_t *v, int32_t n) {
  PyObject *t = PyTuple_New(n);
  if (!t) return NULL;
  for (int32_t i = 0; i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}

static PyObject *buf_device(PyObject *self, void *u) {
  return pyhdal_device_new(((pyhdal_buffer *)self)->ctx, hdal_buffer_device(B(self)));
}
static PyObject *buf_shape(PyObject *self, void *u) { return int64_tuple(hdal_buffer_shape(B(self)), hdal_buffer_ndim(B(self))); }
static PyObject *buf_strides(PyObject *self, void *u) {
  return int64_tuple(hdal_buffer_strides(B(self)), hdal_buffer_ndim(B(self)));
}
static PyObject *buf_ndim(PyObject *self, void *u) { return PyLong_FromLong(hdal_buffer_ndim(B(self))); }
static PyObject *buf_size(PyObject *self, void *u) {
  int64_t n = 1;
  const int64_t *shape = hdal_buffer_shape(B(self));
  for (int32_t i = 0; i < hdal_buffer_ndim(B(self)); i++) n *= shape[i];
  return PyLong_FromLongLong(n);
}
static PyObject *buf_dtype(PyObject *self, void *u) {
  DLDataType t = hdal_buffer_dtype(B(self));
  const char *name = pyhdal_dtype_name(t);
  if (name) return PyUnicode_FromString(name);
  return PyUnicode_FromFormat("dlpack(%d,%d,%d)", (int)t.code, (int)t.bits, (int)t.lanes);
}
static PyObject *buf_is_view(PyObject *self, void *u) { return PyBool_FromLong(hdal_buffer_is_view(B(self))); }
static PyObject *buf_read_only(PyObject *self, void *u) { return PyBool_FromLong(hdal_buffer_is_read_only(B(self))); }

static PyObject *buffer_dlpack_device(PyObject *self, PyObject *unused) {
  return pyhdal_dl_device_tuple(pyhdal_buffer_known(self)->dl);
}

static PyObject *buffer_to_device(pyhdal_buffer *self, PyObject *arg) {
  pyhdal_context *dst_ctx;
  hdal_device *dst_dev;
  if (pyhdal_device_arg(arg, "to_device()", &dst_ctx, &dst_dev) < 0) return NULL;
  Py_INCREF((PyObject *)dst_ctx); /* a device's context may be the last reference to it */
  hdal_buffer *out = NULL;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS
  if (dst_ctx == self->ctx) {
    err = hdal_buffer_copy_to_device(self->buf, dst_dev, &out);
  } else {
    /* A device of another context: through DLPack, as any other consumer
     * would take the buffer, copied into the target's context. */
    hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {1, 0}};
    hdal_import_options io = {.struct_size = sizeof io, .copy = HDAL_COPY_ALWAYS};
    hdal_capsule *c = NULL;
    err = hdal_buffer_to_dlpack(self->buf, &eo, &c);
    if (!err) err = hdal_buffer_from_dlpack(dst_ctx->ctx, c, dst_dev, &io, &out);
    hdal_capsule_destroy(c); /* the exported tensor goes back unless the import took it */
  }
  Py_END_ALLOW_THREADS
  PyObject *result = err ? pyhdal_raise(err) : pyhdal_buffer_new(dst_ctx, out);
  Py_DECREF((PyObject *)dst_ctx);
  return result;
}

/* ---- Bytes in and out: write(), read(), read_into() (hdal_buffer_write, hdal_buffer_read) ---- */

/* The buffer's size in bytes as hdal_buffer_write() counts them: its compact
 * row-major copy, hdal_buffer_copy_to_host()'s nbytes (the shape's product
 * times the element size, packed for sub-byte types). */
static uint64_t pyhdal_buffer_nbytes(hdal_buffer *b) {
  DLDataType t = hdal_buffer_dtype(b);
  uint64_t n = 1, bits = (uint64_t)t.bits * (t.lanes ? t.lanes : 1);
  const int64_t *shape = hdal_buffer_shape(b);
  for (int32_t i = 0; i < hdal_buffer_ndim(b); i++) n *= (uint64_t)shape[i];
  return bits >= 8 ? n * (bits / 8) : (n * bits + 7) / 8;
}

/* offset= and size=: an int (or what has __index__) that fits a size_t:
 * ValueError below 0, OverflowError above, as the other ints of the package. */
static int pyhdal_size_arg(PyObject *o, const char *who, const char *what, size_t *out) {
  PyObject *i = PyNumber_Index(o);
  if (!i) {
    if (PyErr_ExceptionMatches(PyExc_TypeError))
      PyErr_Format(PyExc_TypeError, "%s: %s must be an int, got %.100s", who, what, PYHDAL_TP_NAME(o));
    return -1;
  }
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  if (v == -1 && PyErr_Occurred()) {
    Py_DECREF(i);
    return -1;
  }
  if (overflow < 0 || (!overflow && v < 0)) {
    PyErr_Format(PyExc_ValueError, "%s: %s must be >= 0, got %R", who, what, i);
    Py_DECREF(i);
    return -1;
  }
  size_t u = overflow ? PyLong_AsSize_t(i) : (size_t)v;
  if (u == (size_t)-1 && PyErr_Occurred()) {
    PyErr_Format(PyExc_OverflowError, "%s: %s is out of range (0 to %zu)", who, what, (size_t)SIZE_MAX);
    Py_DECREF(i);
    return -1;
  }
  Py_DECREF(i);
  *out = u;
  return 0;
}

/* data= of write(), out= of read_into(): C-contiguous memory of the buffer
 * protocol, writable for out=.  Anything else is a TypeError that says what
 * is taken, as CPython's own readinto() says it, with the exporter's refusal
 * (numpy's, memoryview's) as its cause. */
static int pyhdal_host_view(PyObject *o, bool writable, const char *who, const char *what, Py_buffer *view) {
  const char *taken = writable ? "a writable, C-contiguous object of the buffer protocol (bytearray, memoryview, "
                                 "a numpy array, ...)"
                               : "a C-contiguous object of the buffer protocol (bytes, bytearray, memoryview, a numpy "
                                 "array, ...)";
  if (!PyObject_CheckBuffer(o)) {
    PyErr_Format(PyExc_TypeError, "%s: %s must be %s, got %.100s", who, what, taken, PYHDAL_TP_NAME(o));
    return -1;
  }
  if (PyObject_GetBuffer(o, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS) == 0) {
    if (PyBuffer_IsContiguous(view, 'C')) return 0;
    PyBuffer_Release(view); /* an exporter that gave strides it was not asked for */
    PyErr_SetString(PyExc_BufferError, "the exporter gave memory that is not C-contiguous");
  }
  if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError) &&
      !PyErr_ExceptionMatches(PyExc_TypeError))
    return -1; /* out of memory, an exporter's own failure: as it is */
  PyObject *type, *cause, *tb;
  PyErr_Fetch(&type, &cause, &tb);
  PyErr_NormalizeException(&type, &cause, &tb);
  if (cause && tb) PyException_SetTraceback(cause, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  PyErr_Format(PyExc_TypeError, "%s: %s must be %s, got %.100s (%S)", who, what, taken, PYHDAL_TP_NAME(o), cause);
  PyObject *t, *v, *vtb;
  PyErr_Fetch(&t, &v, &vtb);
  PyErr_NormalizeException(&t, &v, &vtb);
  if (v && cause) PyException_SetCause(v, cause); /* steals cause */
  else Py_XDECREF(cause);
  PyErr_Restore(t, v, vtb);
  return -1;
}

/* Whether n bytes at p meet the memory of a buffer in host memory: the
 * library copies with memcpy, for which overlapping ranges are undefined
 * (buf.write(memoryview(buf)[4:])), so those go through a copy of ours. */
static bool pyhdal_meets(PyObject *self, const void *p, size_t n) {
  if (!n || pyhdal_buffer_known(self)->dl.device_type != kDLCPU) return false;
  uintptr_t data = (uintptr_t)hdal_buffer_data(B(self)), a = (uintptr_t)p;
  return data && a < data + pyhdal_buffer_nbytes(B(self)) && data < a + n;
}

/* write(data, offset) and read_into(out, offset): one transfer between the
 * buffer and C-contiguous host memory; memory that meets the buffer's own goes
 * through a copy of ours. */
static PyObject *buffer_transfer(PyObject *self, PyObject *args, PyObject *kwds, bool into) {
  static char *kwlist[] = {"", "offset", NULL};
  const char *call = into ? "read_into()" : "write()";
  PyObject *host, *offset_arg = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, into ? "O|O:read_into" : "O|O:write", kwlist, &host, &offset_arg))
    return NULL;
  size_t offset = 0;
  if (offset_arg && pyhdal_size_arg(offset_arg, call, "offset", &offset) < 0) return NULL;
  Py_buffer view;
  if (pyhdal_host_view(host, into, call, into ? "out" : "data", &view) < 0) return NULL;
  size_t n = (size_t)view.len;
  void *mem = view.buf, *staged = NULL;
  if (pyhdal_meets(self, mem, n)) {
    if (!(staged = PyMem_Malloc(n))) {
      PyBuffer_Release(&view);
      return PyErr_NoMemory();
    }
    mem = into ? staged : memcpy(staged, mem, n);
  }
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* a device transfer; the view keeps the host memory in place meanwhile */
  err = into ? hdal_buffer_read(B(self), offset, mem, n) : hdal_buffer_write(B(self), offset, mem, n);
  if (!err && into && staged) memcpy(view.buf, staged, n);
  Py_END_ALLOW_THREADS
  PyMem_Free(staged);
  PyBuffer_Release(&view);
  if (err) return pyhdal_raise(err);
  Py_RETURN_NONE;
}

static PyObject *buffer_write(PyObject *self, PyObject *args, PyObject *kwds) {
  return buffer_transfer(self, args, kwds, false);
}

static PyObject *buffer_read(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"offset", "size", NULL};
  PyObject *offset_arg = NULL, *size_arg = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:read", kwlist, &offset_arg, &size_arg)) return NULL;
  size_t offset = 0, size;
  if (offset_arg && pyhdal_size_arg(offset_arg, "read()", "offset", &offset) < 0) return NULL;
  uint64_t total = pyhdal_buffer_nbytes(B(self));
  size_t room = offset < total ? (size_t)(total - offset) : 0;
  if (size_arg == Py_None) size = room; /* the rest; past the end, 0 bytes there, which the library refuses */
  else if (pyhdal_size_arg(size_arg, "read()", "size", &size) < 0) return NULL;
  char none;
  if (size > room) {
    /* Past the end: the library's refusal, before a bytes object of that size
     * is asked for (it may be more than memory holds).  Asked first with 0
     * bytes at the range's end, so that the library refuses it for certain
     * and never writes into `none`, whatever the count above says. */
    hdal_error *probe = offset + size < offset ? NULL : hdal_buffer_read(B(self), offset + size, &none, 0);
    if (offset + size < offset || probe) {
      hdal_error_destroy(probe);
      hdal_error *err = hdal_buffer_read(B(self), offset, &none, size);
      if (err) return pyhdal_raise(err);
    }
  }
  if (size > (size_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
  if (!out) return NULL;
  char *dst = PyBytes_AsString(out);
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* a device transfer, into a bytes object nobody else sees yet */
  err = hdal_buffer_read(B(self), offset, dst, size);
  Py_END_ALLOW_THREADS
  if (err) {
    Py_DECREF(out);
    return pyhdal_raise(err);
  }
  return out;
}

static PyObject *buffer_read_into(PyObject *self, PyObject *args, PyObject *kwds) {
  return buffer_transfer(self, args, kwds, true);
}

/* np.asarray(buf), np.array(buf): numpy reads a buffer in host memory through
 * the buffer protocol before it asks __array__, so this serves the rest.  A
 * buffer not in host memory is refused, naming to_device, as CuPy refuses an
 * implicit copy to the host (numpy would otherwise make a 0-d object array of
 * it); a host buffer whose dtype has no PEP 3118 format (bfloat16, float8)
 * goes through numpy's from_dlpack, zero-copy. */
static PyObject *buffer_array(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"dtype", "copy", NULL};
  PyObject *dtype = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
  pyhdal_buffer *b = pyhdal_buffer_known(self);
  if (b->dl.device_type != kDLCPU) {
    hdal_device *d = hdal_buffer_device(b->buf);
    PyErr_Format(PyExc_TypeError,
                 "hdal.Buffer: the buffer is on device %d (%s), not in host memory, and numpy reads host memory "
                 "only: copy it there first, np.asarray(buf.to_device(\"cpu\"))",
                 hdal_device_id(d), hdal_device_platform(d));
    return NULL;
  }
  PyObject *numpy = PyImport_ImportModule("numpy");
  PyObject *arr = numpy ? PyObject_CallMethod(numpy, "from_dlpack", "O", self) : NULL;
  if (arr && (dtype != Py_None || copy != Py_None)) {
    /* copy=None: numpy.asarray(arr, dtype=), a copy only if the dtype needs one;
     * else numpy.array(arr, dtype=, copy=), as numpy 2 and 1.x each take it. */
    PyObject *array = PyObject_GetAttrString(numpy, copy == Py_None ? "asarray" : "array");
    PyObject *call_args = array ? PyTuple_Pack(1, arr) : NULL;
    PyObject *call_kw = !call_args           ? NULL
                        : copy == Py_None ? Py_BuildValue("{s:O}", "dtype", dtype)
                                          : Py_BuildValue("{s:O,s:O}", "dtype", dtype, "copy", copy);
    PyObject *converted = call_kw ? PyObject_Call(array, call_args, call_kw) : NULL;
    Py_XDECREF(array);
    Py_XDECREF(call_args);
    Py_XDECREF(call_kw);
    Py_DECREF(arr);
    arr = converted;
  }
  Py_XDECREF(numpy);
  return arr;
}

static PyObject *buffer_repr(PyObject *self) {
  hdal_device *d = hdal_buffer_device(B(self));
  PyObject *shape = buf_shape(self, NULL), *dtype = buf_dtype(self, NULL);
  PyObject *r = NULL;
  if (shape && dtype)
    r = PyUnicode_FromFormat("<hdal.Buffer shape=%R dtype=%U on device %d (%s)%s%s>", shape, dtype, hdal_device_id(d),
                             hdal_device_platform(d), hdal_buffer_is_view(B(self)) ? ", view" : "",
                             hdal_buffer_is_read_only(B(self)) ? ", read-only" : "");
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  return r;
}

/* ---- PEP 3118 ---- */

/* What getbuffer allocates: shape and strides in bytes, freed by releasebuffer. */
static int buffer_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  hdal_buffer *b = B(self);
  DLDevice dl = hdal_device_dlpack_device(hdal_buffer_device(b));
  if (dl.device_type != kDLCPU) {
    PyErr_SetString(PyExc_BufferError,
                    "hdal.Buffer: only a buffer in host memory (kDLCPU) exports the buffer protocol; "
                    "use to_device() or DLPack for this one");
    return -1;
  }
  DLDataType t = hdal_buffer_dtype(b);
  const char *format = pyhdal_dtype_format(t);
  if (!format) {
    PyErr_Format(PyExc_BufferError, "hdal.Buffer: the buffer protocol has no format for dtype %s",
                 pyhdal_dtype_name(t) ? pyhdal_dtype_name(t) : "?");
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && hdal_buffer_is_read_only(b)) {
    PyErr_SetString(PyExc_BufferError, "hdal.Buffer: the buffer is read-only");
    return -1;
  }
  int32_t ndim = hdal_buffer_ndim(b);
  const int64_t *shape = hdal_buffer_shape(b), *strides = hdal_buffer_strides(b);
  Py_ssize_t itemsize = t.bits / 8;
  Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (ndim ? (size_t)ndim : 1));
  if (!dims) {
    PyErr_NoMemory();
    return -1;
  }
  Py_ssize_t len = itemsize;
  for (int32_t i = 0; i < ndim; i++) {
    dims[i] = (Py_ssize_t)shape[i];
    dims[ndim + i] = (Py_ssize_t)strides[i] * itemsize;
    len *= dims[i];
  }
  /* C-contiguous: each stride the product of the later dimensions (size-1 and
   * empty arrays are contiguous whatever their strides). */
  bool c_contig = true, f_contig = true;
  Py_ssize_t expect = itemsize;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    if (dims[i] != 1 && dims[ndim + i] != expect) c_contig = false;
    expect *= dims[i];
  }
  expect = itemsize;
  for (int32_t i = 0; i < ndim; i++) {
    if (dims[i] != 1 && dims[ndim + i] != expect) f_contig = false;
    expect *= dims[i];
  }
  if (len == 0) c_contig = f_contig = true;
  const char *refuse = NULL;
  if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c_contig) refuse = "C-contiguous";
  else if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f_contig) refuse = "Fortran-contiguous";
  else if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c_contig && !f_contig) refuse = "contiguous";
  else if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c_contig) refuse = "C-contiguous";
  if (refuse) {
    PyMem_Free(dims);
    PyErr_Format(PyExc_BufferError, "hdal.Buffer: the buffer is not %s", refuse);
    return -1;
  }
  view->buf = hdal_buffer_data(b);
  view->obj = self;
  Py_INCREF(self);
  view->len = len;
  view->itemsize = itemsize;
  view->readonly = hdal_buffer_is_read_only(b);
  view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? (char *)format : NULL;
  view->ndim = ndim;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + ndim : NULL;
  view->suboffsets = NULL;
  view->internal = dims;
  return 0;
}

static void buffer_releasebuffer(PyObject *self, Py_buffer *view) { PyMem_Free(view->internal); }

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))pyhdal_buffer_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule\n\n"
     "Exports the buffer as a DLPack capsule (the array API standard, 2023.12).\n\n"
     "max_version: the highest DLPack version the consumer takes, (major, minor);\n"
     "  >= (1, 0) gives a \"dltensor_versioned\" capsule (READ_ONLY for read-only\n"
     "  buffers, IS_COPIED when the export copied); None or (0, x): a legacy\n"
     "  \"dltensor\" one (refused for a read-only buffer unless copy=True).\n"
     "dl_device: (device_type, device_id) to export onto another device, e.g. (1, 0)\n"
     "  to bring an OpenCL buffer to the CPU; that copies, unless copy=False, which\n"
     "  refuses.\n"
     "copy: None: only if needed; True: always; False: never (hdal.Error if needed).\n"
     "stream: the consumer's stream (an int), or None.\n\n"
     "The capsule keeps the buffer alive; one that nobody consumes releases it when\n"
     "it is collected."},
    {"__array__", (PyCFunction)(void (*)(void))buffer_array, METH_VARARGS | METH_KEYWORDS,
     "__array__($self, /, dtype=None, copy=None)\n--\n\n"
     "The buffer as a numpy array, for np.asarray() and np.array(): zero-copy for a\n"
     "buffer in host memory; a TypeError naming to_device for any other buffer."},
    {"__dlpack_device__", buffer_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n"
     "__dlpack_device__() -> tuple[int, int]\n\n(device_type, device_id) of the buffer's device, as DLPack numbers them."},
    {"to_device", (PyCFunction)buffer_to_device, METH_O,
     "to_device($self, device, /)\n--\n\n"
     "to_device(device) -> Buffer\n\nA copy of the buffer on `device`, compact row-major: an hdal.Device\n"
     "(of any context), \"cpu\" (the default context's CPU device) or a DLPack\n"
     "(device_type, device_id) pair (that device of the default context).\n"
     "The GIL is released while it copies."},
    {"write", (PyCFunction)(void (*)(void))buffer_write, METH_VARARGS | METH_KEYWORDS,
     "write($self, data, /, offset=0)\n--\n\n"
     "write(data, offset=0) -> None\n\n"
     "Writes the bytes of `data` (bytes, bytearray, memoryview, a numpy array: any\n"
     "C-contiguous object of the buffer protocol) into the buffer, in place, from byte\n"
     "`offset` of its elements counted in its compact row-major layout\n"
     "(hdal_buffer_write): offset=0 and all of its bytes write it whole.  On any device\n"
     "hdal serves; complete when it returns.  hdal.Error with the library's message for\n"
     "a range past the end (OUT_OF_RANGE) and a read-only buffer (FAILED_PRECONDITION).\n"
     "The GIL is released while it writes."},
    {"read", (PyCFunction)(void (*)(void))buffer_read, METH_VARARGS | METH_KEYWORDS,
     "read($self, /, offset=0, size=None)\n--\n\n"
     "read(offset=0, size=None) -> bytes\n\n"
     "`size` bytes of the buffer from byte `offset` of its elements, counted as write()\n"
     "counts them (hdal_buffer_read); size=None: to the end.  hdal.Error with the\n"
     "library's message for a range past the end.  The GIL is released while it reads."},
    {"read_into", (PyCFunction)(void (*)(void))buffer_read_into, METH_VARARGS | METH_KEYWORDS,
     "read_into($self, out, /, offset=0)\n--\n\n"
     "read_into(out, offset=0) -> None\n\n"
     "Reads as many bytes as `out` holds (a bytearray, a writable memoryview or numpy\n"
     "array: any writable, C-contiguous object of the buffer protocol) from byte\n"
     "`offset` of the buffer into it, as read() does, without a bytes object between.\n"
     "The GIL is released while it reads."},
    {NULL}};

static PyGetSetDef buffer_getset[] = {
    {"device", buf_device, NULL, "The hdal.Device holding the elements.", NULL},
    {"shape", buf_shape, NULL, "The shape, a tuple of ints.", NULL},
    {"strides", buf_strides, NULL, "The strides, in elements (not bytes), a tuple of ints.", NULL},
    {"ndim", buf_ndim, NULL, "The number of dimensions.", NULL},
    {"size", buf_size, NULL, "The number of elements.", NULL},
    {"dtype", buf_dtype, NULL, "The element type's name: \"float32\", \"int64\", \"bool\", \"bfloat16\", ...", NULL},
    {"is_view", buf_is_view, NULL, "True when the buffer aliases the memory it was imported from (zero-copy).", NULL},
    {"read_only", buf_read_only, NULL, "True when writes into the buffer are refused.", NULL},
    {NULL}};

PyTypeObject *pyhdal_buffer_type;

static PyType_Slot buffer_slots[] = {
    {Py_tp_doc, "An array on an hdal device (from hdal.from_dlpack() or Buffer.to_device()).\n\n"
                "Any DLPack consumer takes it: np.from_dlpack(buf), torch.from_dlpack(buf).\n"
                "A buffer in host memory also exports the Python buffer protocol, read-only\n"
                "when the buffer is: memoryview(buf), np.asarray(buf).\n"
                "Buffers are immutable objects, safe to use from several threads."},
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_bf_getbuffer, buffer_getbuffer},
    {Py_bf_releasebuffer, buffer_releasebuffer},
    {Py_tp_methods, buffer_methods},
    {Py_tp_getset, buffer_getset},
    {0, NULL}};

/* Made by hdal.from_dlpack and to_device only: no __new__ (a static type without tp_new had none). */
static PyType_Spec buffer_spec = {
    .name = "hdal.Buffer",
    .basicsize = sizeof(pyhdal_buffer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = buffer_slots,
};

int pyhdal_buffer_init(PyObject *module) {
  if (!(pyhdal_buffer_type = (PyTypeObject *)PyType_FromSpec(&buffer_spec))) return -1;
  Py_INCREF((PyObject *)pyhdal_buffer_type); /* one for the module, one for this file */
  if (PyModule_AddObject(module, "Buffer", (PyObject *)pyhdal_buffer_type) < 0) {
    Py_DECREF((PyObject *)pyhdal_buffer_type);
    return -1;
  }
  return 0;
}
