/* SPDX-License-Identifier: BSD-3-Clause
 * _exchange_probe: a test-only extension (never installed) for DLPack's C
 * exchange API (docs/python.md).  Two sides:
 *   - a consumer as tvm-ffi is one: it takes the capsule from a type, walks
 *     the table and calls each entry from C, reporting what it got;
 *   - producer types that have only the exchange API (no __dlpack__), one per
 *     kind of table: a good one, a future major version with and without an
 *     older table behind it, a NULL required entry, one whose tensors say
 *     version 2, one whose export fails.  Their tensors' deleters are counted.
 * And, for python/tests/test_capsule_misuse.py, a consumer that calls an
 * exported tensor's deleter from a thread of its own, without the GIL.
 * Built by python/Makefile.am for `make check`; python/tests/test_exchange.py
 * uses it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <hdal/dlpack.h>

/* ---- the consumer ---- */

static const DLPackExchangeAPI *api_of(PyObject *type) {
  if (!PyType_Check(type)) {
    PyErr_SetString(PyExc_TypeError, "expected a type");
    return NULL;
  }
  PyObject *cap = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
  if (!cap) return NULL;
  const DLPackExchangeAPI *api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
  Py_DECREF(cap);
  return api;
}

static PyObject *tuple_of(const int64_t *v, int32_t n) {
  PyObject *t = PyTuple_New(n);
  for (int32_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(v[i]));
  return t;
}

static PyObject *describe(const DLTensor *t) {
  return Py_BuildValue("{s:K,s:N,s:N,s:(ii),s:(iii),s:K}", "data", (unsigned long long)(uintptr_t)t->data, "shape",
                       tuple_of(t->shape, t->ndim), "strides",
                       t->strides ? tuple_of(t->strides, t->ndim) : (Py_INCREF(Py_None), Py_None), "device",
                       (int)t->device.device_type, (int)t->device.device_id, "dtype", (int)t->dtype.code,
                       (int)t->dtype.bits, (int)t->dtype.lanes, "byte_offset", (unsigned long long)t->byte_offset);
}

/* version(type) -> (major, minor, has an older table) */
static PyObject *version(PyObject *self, PyObject *type) {
  const DLPackExchangeAPI *api = api_of(type);
  if (!api) return NULL;
  return Py_BuildValue("(IIO)", api->header.version.major, api->header.version.minor,
                       api->header.prev_api ? Py_True : Py_False);
}

/* export(obj) -> dict: managed_tensor_from_py_object_no_sync, described, then its deleter run. */
static PyObject *export(PyObject *self, PyObject *obj) {
  const DLPackExchangeAPI *api = api_of((PyObject *)Py_TYPE(obj));
  if (!api) return NULL;
  DLManagedTensorVersioned *t = NULL;
  if (api->managed_tensor_from_py_object_no_sync(obj, &t) != 0) return NULL;
  PyObject *d = describe(&t->dl_tensor);
  if (d) {
    PyObject *v = Py_BuildValue("(II)", t->version.major, t->version.minor);
    PyObject *f = PyLong_FromUnsignedLongLong(t->flags);
    if (!v || !f || PyDict_SetItemString(d, "version", v) < 0 || PyDict_SetItemString(d, "flags", f) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
    Py_XDECREF(f);
  }
  t->deleter(t);
  return d;
}

/* roundtrip(obj) -> a new object of obj's type's producer from the same tensor (stolen by to_py). */
static PyObject *roundtrip(PyObject *self, PyObject *obj) {
  const DLPackExchangeAPI *api = api_of((PyObject *)Py_TYPE(obj));
  if (!api) return NULL;
  DLManagedTensorVersioned *t = NULL;
  if (api->managed_tensor_from_py_object_no_sync(obj, &t) != 0) return NULL;
  void *out = NULL;
  if (api->managed_tensor_to_py_object_no_sync(t, &out) != 0) return NULL;
  return out;
}

/* to_py(type, address) -> managed_tensor_to_py_object_no_sync of the tensor at address (stolen). */
static PyObject *to_py(PyObject *self, PyObject *args) {
  PyObject *type;
  unsigned long long address;
  if (!PyArg_ParseTuple(args, "OK", &type, &address)) return NULL;
  const DLPackExchangeAPI *api = api_of(type);
  if (!api) return NULL;
  void *out = NULL;
  if (api->managed_tensor_to_py_object_no_sync((DLManagedTensorVersioned *)(uintptr_t)address, &out) != 0) return NULL;
  return out;
}

/* borrow(obj) -> dict: dltensor_from_py_object_no_sync, nothing to give back. */
static PyObject *borrow(PyObject *self, PyObject *obj) {
  const DLPackExchangeAPI *api = api_of((PyObject *)Py_TYPE(obj));
  if (!api) return NULL;
  DLTensor t;
  if (api->dltensor_from_py_object_no_sync(obj, &t) != 0) return NULL;
  return describe(&t);
}

typedef struct {
  char kind[64], message[1024];
  int calls;
} error_box;

static void set_error(void *ctx, const char *kind, const char *message) {
  error_box *b = ctx;
  snprintf(b->kind, sizeof b->kind, "%s", kind);
  snprintf(b->message, sizeof b->message, "%s", message);
  b->calls++;
}

/* allocate(type, (device_type, id), shape, (code, bits, lanes)) -> an object of type's producer, or
 * RuntimeError("kind: message") from SetError.  An exception left set by the allocator is an error. */
static PyObject *allocate(PyObject *self, PyObject *args) {
  PyObject *type, *shape_obj;
  int dt, id, code, bits, lanes;
  if (!PyArg_ParseTuple(args, "O(ii)O(iii)", &type, &dt, &id, &shape_obj, &code, &bits, &lanes)) return NULL;
  const DLPackExchangeAPI *api = api_of(type);
  if (!api) return NULL;
  int64_t shape[8];
  Py_ssize_t nd = PySequence_Size(shape_obj);
  if (nd < 0 || nd > 8) return PyErr_Format(PyExc_ValueError, "at most 8 dimensions");
  for (Py_ssize_t i = 0; i < nd; i++) {
    PyObject *x = PySequence_GetItem(shape_obj, i);
    shape[i] = x ? PyLong_AsLongLong(x) : -1;
    Py_XDECREF(x);
  }
  if (PyErr_Occurred()) return NULL;
  DLTensor proto = {.device = {(DLDeviceType)dt, id}, .ndim = (int32_t)nd, .dtype = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes},
                    .shape = shape};
  error_box box = {.calls = 0};
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)1;
  int rc = api->managed_tensor_allocator(&proto, &t, &box, set_error);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return PyErr_Format(PyExc_AssertionError, "the allocator left a Python exception set (rc %d)", rc);
  }
  if (rc != 0) {
    if (box.calls != 1 || t != NULL)
      return PyErr_Format(PyExc_AssertionError, "failed with SetError called %d times, out %p", box.calls, (void *)t);
    return PyErr_Format(PyExc_RuntimeError, "%s: %s", box.kind, box.message);
  }
  if (box.calls || !t) return PyErr_Format(PyExc_AssertionError, "succeeded with SetError called %d times", box.calls);
  if (t->dl_tensor.ndim != proto.ndim || !t->dl_tensor.strides)
    return PyErr_Format(PyExc_AssertionError, "allocated tensor without strides or of another rank");
  void *out = NULL;
  if (api->managed_tensor_to_py_object_no_sync(t, &out) != 0) return NULL;
  return out;
}

/* stream(type, (device_type, id)) -> int (0 for NULL) */
static PyObject *stream(PyObject *self, PyObject *args) {
  PyObject *type;
  int dt, id;
  if (!PyArg_ParseTuple(args, "O(ii)", &type, &dt, &id)) return NULL;
  const DLPackExchangeAPI *api = api_of(type);
  if (!api) return NULL;
  void *s = (void *)1;
  if (api->current_work_stream((DLDeviceType)dt, id, &s) != 0) return NULL;
  return PyLong_FromVoidPtr(s);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* time_exchange(obj, n) -> ns per managed_tensor_from_py_object_no_sync + deleter, as a C consumer pays. */
static PyObject *time_exchange(PyObject *self, PyObject *args) {
  PyObject *obj;
  long n;
  if (!PyArg_ParseTuple(args, "Ol", &obj, &n) || n <= 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "n > 0");
  const DLPackExchangeAPI *api = api_of((PyObject *)Py_TYPE(obj));
  if (!api) return NULL;
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    DLManagedTensorVersioned *t;
    if (api->managed_tensor_from_py_object_no_sync(obj, &t) != 0) return NULL;
    t->deleter(t);
  }
  return PyFloat_FromDouble((now_ns() - t0) / (double)n);
}

/* time_borrow(obj, n) -> ns per dltensor_from_py_object_no_sync. */
static PyObject *time_borrow(PyObject *self, PyObject *args) {
  PyObject *obj;
  long n;
  if (!PyArg_ParseTuple(args, "Ol", &obj, &n) || n <= 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "n > 0");
  const DLPackExchangeAPI *api = api_of((PyObject *)Py_TYPE(obj));
  if (!api) return NULL;
  volatile uintptr_t sink = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    DLTensor t;
    if (api->dltensor_from_py_object_no_sync(obj, &t) != 0) return NULL;
    sink += (uintptr_t)t.data;
  }
  (void)sink;
  return PyFloat_FromDouble((now_ns() - t0) / (double)n);
}

/* ---- producers with only the exchange API ---- */

typedef struct {
  PyObject_HEAD
  float *data;
  int64_t n;
} exchange_only;

static long deleted, made;

typedef struct {
  DLManagedTensorVersioned m;
  int64_t shape, stride;
  PyObject *owner;
} owned_tensor;

static void owned_deleter(DLManagedTensorVersioned *m) {
  owned_tensor *o = m->manager_ctx;
  PyGILState_STATE g = PyGILState_Ensure();
  Py_DECREF(o->owner);
  deleted++;
  PyGILState_Release(g);
  free(o);
}

static int tensor_of(void *py_object, DLManagedTensorVersioned **out, uint32_t major) {
  exchange_only *x = py_object;
  owned_tensor *o = malloc(sizeof *o);
  if (!o) {
    PyErr_NoMemory();
    return -1;
  }
  o->shape = x->n;
  o->stride = 1;
  o->owner = py_object;
  Py_INCREF(o->owner);
  o->m = (DLManagedTensorVersioned){.version = {major, 0}, .manager_ctx = o, .deleter = owned_deleter,
                                    .dl_tensor = {.data = x->data, .device = {kDLCPU, 0}, .ndim = 1,
                                                  .dtype = {kDLFloat, 32, 1}, .shape = &o->shape, .strides = &o->stride}};
  made++;
  *out = &o->m;
  return 0;
}

static int from_py_v1(void *py_object, DLManagedTensorVersioned **out) { return tensor_of(py_object, out, 1); }
static int from_py_v2(void *py_object, DLManagedTensorVersioned **out) { return tensor_of(py_object, out, 2); }
static int from_py_fails(void *py_object, DLManagedTensorVersioned **out) {
  *out = NULL;
  PyErr_SetString(PyExc_BufferError, "this producer cannot export");
  return -1;
}
static int no_alloc(DLTensor *p, DLManagedTensorVersioned **out, void *ctx, void (*set)(void *, const char *, const char *)) {
  *out = NULL;
  set(ctx, "NotImplementedError", "this producer does not allocate");
  return -1;
}
static int no_to_py(DLManagedTensorVersioned *t, void **out) {
  t->deleter(t);
  PyErr_SetString(PyExc_NotImplementedError, "this producer makes no objects");
  return -1;
}
static int no_stream(DLDeviceType t, int32_t id, void **out) {
  *out = NULL;
  return 0;
}

#define TABLE(major, from_py) {{{major, 3}, NULL}, no_alloc, from_py, no_to_py, NULL, no_stream}
static DLPackExchangeAPI good = TABLE(1, from_py_v1), future = TABLE(2, from_py_v1), future_prev = TABLE(2, from_py_v1),
                         null_entry = TABLE(1, NULL), tensor_v2 = TABLE(1, from_py_v2), fails = TABLE(1, from_py_fails);

static PyObject *exchange_only_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
  Py_ssize_t n = PySequence_Size(seq);
  if (n < 0) return NULL;
  exchange_only *self = (exchange_only *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->data = calloc(n ? (size_t)n : 1, sizeof(float));
  self->n = n;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = PySequence_GetItem(seq, i);
    self->data[i] = x ? (float)PyFloat_AsDouble(x) : 0;
    Py_XDECREF(x);
  }
  if (PyErr_Occurred()) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void exchange_only_dealloc(exchange_only *self) {
  free(self->data);
  PyTypeObject *tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

static PyType_Slot slots[] = {
    {Py_tp_new, exchange_only_new}, {Py_tp_dealloc, exchange_only_dealloc}, {0, NULL}};

static int add_producer(PyObject *m, const char *name, DLPackExchangeAPI *api) {
  char qualified[96];
  snprintf(qualified, sizeof qualified, "_exchange_probe.%s", name);
  PyType_Spec spec = {qualified, sizeof(exchange_only), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HEAPTYPE, slots};
  PyObject *type = PyType_FromSpec(&spec);
  if (!type) return -1;
  PyObject *cap = PyCapsule_New(api, "dlpack_exchange_api", NULL);
  int rc = cap && PyObject_SetAttrString(type, "__dlpack_c_exchange_api__", cap) == 0 ? PyModule_AddObject(m, name, type) : -1;
  Py_XDECREF(cap);
  if (rc < 0) Py_DECREF(type);
  return rc;
}

static PyObject *counts(PyObject *self, PyObject *unused) { return Py_BuildValue("(ll)", made, deleted); }

/* ---- a consumer's mistakes (test_capsule_misuse.py): a tensor's deleter
 * called from a thread Python never saw, without the GIL ---- */

typedef struct {
  void *tensor;
  int versioned, times;
  pthread_t tid;
} deleter_job;

static void *deleter_thread(void *arg) {
  deleter_job *j = arg;
  /* The deleter read once: a consumer that calls it twice keeps the pointer it read. */
  if (j->versioned) {
    DLManagedTensorVersioned *t = j->tensor;
    void (*del)(DLManagedTensorVersioned *) = t->deleter;
    for (int i = 0; i < j->times; i++) del(t);
  } else {
    DLManagedTensor *t = j->tensor;
    void (*del)(DLManagedTensor *) = t->deleter;
    for (int i = 0; i < j->times; i++) del(t);
  }
  return NULL;
}

/* deleter_thread_start(address, versioned, times) -> handle: a new pthread
 * that calls the tensor at `address`'s deleter `times` times. */
static PyObject *deleter_thread_start(PyObject *self, PyObject *args) {
  unsigned long long address;
  int versioned, times;
  if (!PyArg_ParseTuple(args, "Kpi", &address, &versioned, &times)) return NULL;
  deleter_job *j = malloc(sizeof *j);
  if (!j) return PyErr_NoMemory();
  *j = (deleter_job){.tensor = (void *)(uintptr_t)address, .versioned = versioned, .times = times};
  int rc = pthread_create(&j->tid, NULL, deleter_thread, j);
  if (rc) {
    free(j);
    errno = rc;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyLong_FromVoidPtr(j);
}

/* deleter_thread_join(handle, keep_gil=False): waits for it, with the GIL
 * released (a deleter may need it); with keep_gil, holding it, and for 10 s at
 * most: TimeoutError if the deleter waited for the GIL (then joined without it). */
static PyObject *deleter_thread_join(PyObject *self, PyObject *args) {
  PyObject *handle;
  int keep_gil = 0;
  if (!PyArg_ParseTuple(args, "O|p", &handle, &keep_gil)) return NULL;
  deleter_job *j = PyLong_AsVoidPtr(handle);
  if (!j) return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "no thread"), NULL);
  int timed_out = 0;
  if (keep_gil) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    timed_out = pthread_timedjoin_np(j->tid, NULL, &until) != 0;
  }
  if (!keep_gil || timed_out) {
    Py_BEGIN_ALLOW_THREADS
    pthread_join(j->tid, NULL);
    Py_END_ALLOW_THREADS
  }
  free(j);
  if (timed_out) {
    PyErr_SetString(PyExc_TimeoutError, "the deleter waited for the GIL");
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"version", version, METH_O, NULL},
    {"export", export, METH_O, NULL},
    {"roundtrip", roundtrip, METH_O, NULL},
    {"borrow", borrow, METH_O, NULL},
    {"to_py", to_py, METH_VARARGS, NULL},
    {"allocate", allocate, METH_VARARGS, NULL},
    {"stream", stream, METH_VARARGS, NULL},
    {"time_exchange", time_exchange, METH_VARARGS, NULL},
    {"time_borrow", time_borrow, METH_VARARGS, NULL},
    {"counts", counts, METH_NOARGS, "(tensors made, tensors deleted) by the producer types"},
    {"deleter_thread_start", deleter_thread_start, METH_VARARGS, NULL},
    {"deleter_thread_join", deleter_thread_join, METH_VARARGS, NULL},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_exchange_probe", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__exchange_probe(void);
PyMODINIT_FUNC PyInit__exchange_probe(void) {
  future_prev.header.prev_api = &good.header;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (add_producer(m, "Good", &good) < 0 || add_producer(m, "Future", &future) < 0 ||
      add_producer(m, "FuturePrev", &future_prev) < 0 || add_producer(m, "NullEntry", &null_entry) < 0 ||
      add_producer(m, "TensorV2", &tensor_v2) < 0 || add_producer(m, "Fails", &fails) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
