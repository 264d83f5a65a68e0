/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.Context and the default context behind hdal.devices() and
 * hdal.from_dlpack() (docs/python.md). */
#include "pyhdal.h"

static pyhdal_context *default_ctx; /* created on first use, kept until exit */

/* The default context is made once: the first threads to need it wait for
 * one of them, with the GIL released so that it can get the GIL back. */
static PyThread_type_lock default_lock;

/* Discovery starts backends and threads: the GIL is released meanwhile. */
static pyhdal_context *context_create(PyTypeObject *type, const char *backends, const char *backend_path,
                                      const char *selector) {
  pyhdal_context *self = PyObject_New(pyhdal_context, type);
  if (!self) return NULL;
  self->ctx = NULL;
  hdal_context_options opts = {
      .struct_size = sizeof opts, .backends = backends, .backend_path = backend_path, .device_selector = selector};
  hdal_error *err;
  /* Many threads may create contexts at once: the library serialises what a
   * vendor runtime cannot do concurrently (docs/opencl.md). */
  Py_BEGIN_ALLOW_THREADS
  err = hdal_context_create(&opts, &self->ctx);
  Py_END_ALLOW_THREADS
  if (err) {
    self->ctx = NULL;
    Py_DECREF((PyObject *)self);
    pyhdal_raise(err);
    return NULL;
  }
  return self;
}

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"backends", "backend_path", "selector", NULL};
  const char *backends = NULL, *backend_path = NULL, *selector = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|zzz:Context", kwlist, &backends, &backend_path, &selector))
    return NULL;
  return (PyObject *)context_create(type, backends, backend_path, selector);
}

static void context_dealloc(pyhdal_context *self) {
  /* Buffers keep the library's context alive on their own; this is the
   * Python object's reference. */
  hdal_context_destroy(self->ctx);
  PyTypeObject *type = Py_TYPE((PyObject *)self);
  PyObject_Free(self);
  Py_DECREF((PyObject *)type); /* a heap type: each instance holds it */
}

pyhdal_context *pyhdal_default_context(void) {
  if (default_ctx) return default_ctx;
  if (PyThread_acquire_lock(default_lock, NOWAIT_LOCK) == 0) {
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(default_lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
  }
  if (!default_ctx) default_ctx = context_create(pyhdal_context_type, NULL, NULL, NULL);
  PyThread_release_lock(default_lock);
  return default_ctx;
}

static PyObject *context_devices(pyhdal_context *self, PyObject *unused) {
  size_t n = hdal_context_device_count(self->ctx);
  PyObject *list = PyList_New((Py_ssize_t)n);
  if (!list) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *d = pyhdal_device_new(self, hdal_context_device(self->ctx, i));
    if (!d) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, (Py_ssize_t)i, d);
  }
  return list;
}

static PyObject *context_backends(pyhdal_context *self, PyObject *unused) {
  size_t n = hdal_context_backend_count(self->ctx);
  PyObject *list = PyList_New((Py_ssize_t)n);
  if (!list) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *t = Py_BuildValue("(ss)", hdal_context_backend_name(self->ctx, i),
                                hdal_context_backend_status(self->ctx, i));
    if (!t) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, (Py_ssize_t)i, t);
  }
  return list;
}

/* hdal.BackendState: hdal_backend_state as a named tuple, with its backend's name. */
static PyTypeObject *backend_state_type;
static PyStructSequence_Field backend_state_fields[] = {
    {"name", "The backend's name, as HDAL_BACKENDS spells it."},
    {"state", "\"ok\" (discovered), \"disabled\" (not selected), \"unavailable\" (absent, not loadable,\n"
              "or nothing to run) or \"failed\" (loaded, but its discovery failed)."},
    {"device_count", "The devices it added to the context (0 unless \"ok\")."},
    {"refused_count", "The devices it gave that broke a rule and were dropped."},
    {"reason", "\"unavailable\", \"failed\": why; \"ok\" with refused devices: why the first was refused; else None."},
    {NULL, NULL}};
static PyStructSequence_Desc backend_state_desc = {
    "hdal.BackendState",
    "A backend's status as data (hdal_context_backend_state): what the text of\n"
    "Context.backends() says, in fields whose meaning does not move with its wording.",
    backend_state_fields, 5};

/* The library's word; a state without one (none yet) reads as unavailable, as hdal.h asks. */
static const char *state_name(hdal_backend_state_kind k) {
  const char *w = hdal_backend_state_name(k);
  return w ? w : hdal_backend_state_name(HDAL_BACKEND_UNAVAILABLE);
}

static PyObject *context_backend_states(pyhdal_context *self, PyObject *unused) {
  size_t n = hdal_context_backend_count(self->ctx);
  PyObject *list = PyList_New((Py_ssize_t)n);
  if (!list) return NULL;
  for (size_t i = 0; i < n; i++) {
    hdal_backend_state st = {.struct_size = sizeof st};
    PyObject *t = hdal_context_backend_state(self->ctx, i, &st) ? PyStructSequence_New(backend_state_type) : NULL;
    if (!t) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "hdal_context_backend_state failed");
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, (Py_ssize_t)i, t);
    PyObject *v[5] = {PyUnicode_FromString(hdal_context_backend_name(self->ctx, i)),
                      PyUnicode_FromString(state_name(st.state)), PyLong_FromSize_t(st.device_count),
                      PyLong_FromSize_t(st.refused_count), st.reason ? PyUnicode_FromString(st.reason) : Py_None};
    if (!st.reason) Py_INCREF(Py_None);
    int ok = 1;
    for (int k = 0; k < 5; k++) {
      if (!v[k]) { /* a slot is never left NULL: the tuple is freed with the list */
        ok = 0;
        Py_INCREF(Py_None);
        v[k] = Py_None;
      }
      PyStructSequence_SetItem(t, k, v[k]);
    }
    if (!ok) {
      Py_DECREF(list);
      return NULL;
    }
  }
  return list;
}

static PyObject *context_device(pyhdal_context *self, PyObject *arg) {
  Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) return NULL;
  hdal_device *d = i < 0 ? NULL : hdal_context_device(self->ctx, (size_t)i);
  if (!d) {
    PyErr_Format(PyExc_IndexError, "no device %zd: the context has %zu devices", i,
                 hdal_context_device_count(self->ctx));
    return NULL;
  }
  return pyhdal_device_new(self, d);
}

static PyObject *context_process_index(pyhdal_context *self, void *unused) {
  return PyLong_FromLong(hdal_context_process_index(self->ctx));
}

static PyObject *context_process_count(pyhdal_context *self, void *unused) {
  return PyLong_FromLong(hdal_context_process_count(self->ctx));
}

static PyObject *context_host_count(pyhdal_context *self, void *unused) {
  return PyLong_FromSize_t(hdal_context_host_count(self->ctx));
}

static PyObject *context_hardware_count(pyhdal_context *self, void *unused) {
  return PyLong_FromSize_t(hdal_context_hardware_count(self->ctx));
}

/* (type, detail): hdal_topology_source_name()'s word and the file or the description, None for this
 * system; a file name decoded as os.fsdecode() does. */
static PyObject *context_topology_source(pyhdal_context *self, void *unused) {
  const char *detail;
  hdal_topology_source src;
  Py_BEGIN_ALLOW_THREADS /* the first call of a context loads hwloc's topology with I/O objects */
  src = hdal_context_topology_source(self->ctx, &detail);
  Py_END_ALLOW_THREADS
  const char *word = hdal_topology_source_name(src);
  PyObject *w = PyUnicode_FromString(word ? word : hdal_topology_source_name(HDAL_TOPOLOGY_UNAVAILABLE));
  PyObject *d = detail ? PyUnicode_DecodeFSDefault(detail) : (Py_INCREF(Py_None), Py_None);
  PyObject *t = w && d ? PyTuple_Pack(2, w, d) : NULL;
  Py_XDECREF(w);
  Py_XDECREF(d);
  return t;
}

static PyObject *context_repr(pyhdal_context *self) {
  return PyUnicode_FromFormat("<hdal.Context: %zu devices, %zu backends>", hdal_context_device_count(self->ctx),
                              hdal_context_backend_count(self->ctx));
}

PyObject *pyhdal_devices(PyObject *module, PyObject *unused) {
  pyhdal_context *ctx = pyhdal_default_context();
  return ctx ? context_devices(ctx, NULL) : NULL;
}

PyObject *pyhdal_default_context_get(PyObject *module, PyObject *unused) {
  pyhdal_context *ctx = pyhdal_default_context();
  if (!ctx) return NULL;
  Py_INCREF((PyObject *)ctx);
  return (PyObject *)ctx;
}

static PyMethodDef context_methods[] = {
    {"devices", (PyCFunction)context_devices, METH_NOARGS,
     "devices($self, /)\n--\n\n"
     "devices() -> list[Device]\n\nEvery device of the context, in hdal's order (process, backend, local id);\n"
     "device i has id i."},
    {"device", (PyCFunction)context_device, METH_O,
     "device($self, id, /)\n--\n\n"
     "device(id) -> Device\n\nThe device with global id `id`."},
    {"backends", (PyCFunction)context_backends, METH_NOARGS,
     "backends($self, /)\n--\n\n"
     "backends() -> list[tuple[str, str]]\n\n(name, status) of each backend the context tried, e.g.\n"
     "('cpu', 'ok: 1 device') or ('cuda', 'unavailable: libcuda.so.1: cannot open shared object file').\n"
     "The words are for people and may change; backend_states() gives the same as data."},
    {"backend_states", (PyCFunction)context_backend_states, METH_NOARGS,
     "backend_states($self, /)\n--\n\n"
     "backend_states() -> list[BackendState]\n\nEach backend's status as data, in the order of backends():\n"
     "BackendState(name='cpu', state='ok', device_count=1, refused_count=0, reason=None)."},
    {NULL}};

static PyGetSetDef context_getset[] = {
    {"process_index", (getter)context_process_index, NULL, "This process's index (0 without a multi-process layer).", NULL},
    {"process_count", (getter)context_process_count, NULL, "The number of processes (1 without a multi-process layer).", NULL},
    {"host_count", (getter)context_host_count, NULL, "The number of hosts the context's devices are on.", NULL},
    {"hardware_count", (getter)context_hardware_count, NULL,
     "The number of distinct pieces of hardware, each counted once however many backends\n"
     "and processes see it.", NULL},
    {"topology_source", (getter)context_topology_source, NULL,
     "Where the topology that places devices (Device.locality, Device.link) comes from\n"
     "(hdal_context_topology_source; docs/reference.md, \"Links\"): (type, detail), type one\n"
     "of \"system\", \"xml\" (HWLOC_XMLFILE, maybe another machine's), \"synthetic\",\n"
     "\"other\", \"unavailable\" as hdal_topology_source_name() words it, detail the XML file\n"
     "or the synthetic description, else None.  Loads the topology on first need.", NULL},
    {NULL}};

PyTypeObject *pyhdal_context_type;

static PyType_Slot context_slots[] = {
    {Py_tp_doc, "Context(backends=None, backend_path=None, selector=None)\n--\n\n"
                "The devices hdal finds, across its backends (hdal_context_create).\n\n"
                "backends: which backends to start, as HDAL_BACKENDS (\"cpu,opencl\", \"-cuda\");\n"
                "  None: the variable HDAL_BACKENDS, else all of them.\n"
                "backend_path: directories of backend modules, searched instead of the install\n"
                "  directory (before it when ending with ':'), as HDAL_BACKEND_PATH; None: the\n"
                "  variable.\n"
                "selector: the devices to keep, as HDAL_DEVICE_SELECTOR (\"cuda:0,1;!opencl:cpu\");\n"
                "  None: the variable, else all of them.\n\n"
                "A backend that is missing or fails is reported by backends() and leaves the\n"
                "context usable.  Raises hdal.Error when the context cannot be made.\n"
                "A context is safe to use from several threads."},
    {Py_tp_new, context_new},
    {Py_tp_dealloc, context_dealloc},
    {Py_tp_repr, context_repr},
    {Py_tp_methods, context_methods},
    {Py_tp_getset, context_getset},
    {0, NULL}};

static PyType_Spec context_spec = {
    .name = "hdal.Context",
    .basicsize = sizeof(pyhdal_context),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = context_slots,
};

int pyhdal_context_init(PyObject *module) {
  if (!(default_lock = PyThread_allocate_lock())) {
    PyErr_NoMemory();
    return -1;
  }
  if (!(pyhdal_context_type = (PyTypeObject *)PyType_FromSpec(&context_spec))) return -1;
  if (!(backend_state_type = PyStructSequence_NewType(&backend_state_desc))) return -1;
  Py_INCREF((PyObject *)backend_state_type);
  if (PyModule_AddObject(module, "BackendState", (PyObject *)backend_state_type) < 0) {
    Py_DECREF((PyObject *)backend_state_type);
    return -1;
  }
  Py_INCREF((PyObject *)pyhdal_context_type); /* one for the module, one for this file */
  if (PyModule_AddObject(module, "Context", (PyObject *)pyhdal_context_type) < 0) {
    Py_DECREF((PyObject *)pyhdal_context_type);
    return -1;
  }
  return 0;
}
