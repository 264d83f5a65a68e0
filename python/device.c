/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.Device: read-only views of a context's devices (docs/python.md). */
#include <limits.h>

#include "pyhdal.h"

PyObject *pyhdal_device_new(pyhdal_context *ctx, hdal_device *dev) {
  pyhdal_device *self = PyObject_New(pyhdal_device, pyhdal_device_type);
  if (!self) return NULL;
  Py_INCREF((PyObject *)ctx);
  self->ctx = ctx;
  self->dev = dev;
  return (PyObject *)self;
}

/* __dlpack_device__ is asked on every exchange (numpy asks it besides
 * __dlpack__): the tuples of the common devices are made once and shared. */
PyObject *pyhdal_dl_device_tuple(DLDevice d) {
  static PyObject *made[32][8]; /* device types below 32, ids below 8; kept for the process, under the GIL */
  PyObject **slot = (uint32_t)d.device_type < 32 && (uint32_t)d.device_id < 8 ? &made[d.device_type][d.device_id] : NULL;
  if (slot && *slot) {
    Py_INCREF(*slot);
    return *slot;
  }
  PyObject *type = PyLong_FromLong((long)d.device_type), *id = PyLong_FromLong((long)d.device_id);
  PyObject *t = type && id ? PyTuple_Pack(2, type, id) : NULL;
  Py_XDECREF(type);
  Py_XDECREF(id);
  if (t && slot) {
    Py_INCREF(t);
    *slot = t;
  }
  return t;
}

hdal_device *pyhdal_default_device(DLDevice dl) {
  pyhdal_context *ctx = pyhdal_default_context();
  if (!ctx) return NULL;
  hdal_device *d;
  hdal_error *e = hdal_context_device_for_dlpack(ctx->ctx, dl, &d);
  if (e) {
    pyhdal_raise(e);
    return NULL;
  }
  return d;
}

int pyhdal_device_arg(PyObject *device, const char *who, pyhdal_context **ctx, hdal_device **dev) {
  if (PyObject_TypeCheck(device, pyhdal_device_type)) {
    *ctx = ((pyhdal_device *)device)->ctx;
    *dev = ((pyhdal_device *)device)->dev;
    return 0;
  }
  DLDevice dl;
  if (PyUnicode_Check(device)) {
    /* numpy's one device name; the others (torch's "cuda:0") name devices
     * another library numbers: a DLPack pair says which without guessing. */
    if (PyUnicode_CompareWithASCIIString(device, "cpu") != 0) {
      PyErr_Format(PyExc_ValueError,
                   "%s: unknown device %R: say \"cpu\", an hdal.Device or a DLPack (device_type, device_id) pair",
                   who, device);
      return -1;
    }
    dl = (DLDevice){kDLCPU, 0};
  } else if (PyTuple_Check(device)) {
    long long type, id;
    if (pyhdal_int_pair(device, "device", INT32_MIN, INT32_MAX, &type, &id, NULL) < 0) return -1;
    dl = (DLDevice){(DLDeviceType)type, (int32_t)id};
  } else {
    PyErr_Format(PyExc_TypeError,
                 "%s: device must be an hdal.Device, \"cpu\" or a DLPack (device_type, device_id) pair, got %.100s",
                 who, PYHDAL_TP_NAME(device));
    return -1;
  }
  if (!(*dev = pyhdal_default_device(dl))) return -1;
  *ctx = pyhdal_default_context(); /* made by the call above */
  return 0;
}

static void device_dealloc(pyhdal_device *self) {
  PyTypeObject *type = Py_TYPE((PyObject *)self);
  Py_DECREF((PyObject *)self->ctx);
  PyObject_Free(self);
  Py_DECREF((PyObject *)type); /* a heap type: each instance holds it */
}

static PyObject *str_or_none(const char *s) {
  if (s) return PyUnicode_FromString(s);
  Py_RETURN_NONE;
}

#define D(self) (((pyhdal_device *)(self))->dev)
static PyObject *dev_id(PyObject *self, void *u) { return PyLong_FromLong(hdal_device_id(D(self))); }
static PyObject *dev_platform(PyObject *self, void *u) { return str_or_none(hdal_device_platform(D(self))); }
static PyObject *dev_kind(PyObject *self, void *u) { return str_or_none(hdal_device_kind(D(self))); }
static PyObject *dev_runtime_vendor(PyObject *self, void *u) {
  return PyLong_FromUnsignedLong(hdal_device_runtime_vendor(D(self)));
}
static PyObject *dev_local_hardware_id(PyObject *self, void *u) {
  return PyLong_FromLong(hdal_device_local_hardware_id(D(self)));
}
static PyObject *dev_process_index(PyObject *self, void *u) {
  return PyLong_FromLong(hdal_device_process_index(D(self)));
}
static PyObject *dev_is_addressable(PyObject *self, void *u) {
  return PyBool_FromLong(hdal_device_is_addressable(D(self)));
}
static PyObject *dev_runtime_class(PyObject *self, void *u) {
  return PyUnicode_FromString(hdal_runtime_class_name(hdal_device_runtime_class(D(self))));
}
static PyObject *dev_runtime_class_reason(PyObject *self, void *u) {
  return str_or_none(hdal_device_runtime_class_reason(D(self)));
}
static PyObject *dev_dlpack_device(PyObject *self, void *u) {
  return pyhdal_dl_device_tuple(hdal_device_dlpack_device(D(self)));
}
static PyObject *dev_memory_bytes(PyObject *self, void *u) {
  return PyLong_FromUnsignedLongLong(hdal_device_memory_bytes(D(self)));
}
static PyObject *dev_numa_node(PyObject *self, void *u) { return PyLong_FromLong(hdal_device_numa_node(D(self))); }
static PyObject *dev_host(PyObject *self, void *u) { return str_or_none(hdal_device_host(D(self))); }
static PyObject *dev_host_index(PyObject *self, void *u) { return PyLong_FromLong(hdal_device_host_index(D(self))); }
static PyObject *dev_hardware_index(PyObject *self, void *u) {
  return PyLong_FromLong(hdal_device_hardware_index(D(self)));
}
/* hdal_device_same_hardware, asked twice: how many, then the ids. */
static PyObject *dev_same_hardware(PyObject *self, void *u) {
  size_t n = 0;
  hdal_error *err = hdal_device_same_hardware(D(self), NULL, 0, &n);
  int *ids = !err && n ? PyMem_Malloc(n * sizeof *ids) : NULL;
  if (!err && n && !ids) return PyErr_NoMemory();
  size_t got = n;
  if (!err && n) err = hdal_device_same_hardware(D(self), ids, n, &got);
  if (err) {
    PyMem_Free(ids);
    return pyhdal_raise(err);
  }
  PyObject *t = PyTuple_New((Py_ssize_t)(got < n ? got : n));
  for (Py_ssize_t i = 0; t && i < (Py_ssize_t)(got < n ? got : n); i++) {
    PyObject *id = PyLong_FromLong(ids[i]);
    if (!id || PyTuple_SetItem(t, i, id) < 0) {
      Py_CLEAR(t);
      break;
    }
  }
  PyMem_Free(ids);
  return t;
}

/* ---- Locality and links (docs/reference.md, "Locality", "Links") ----
 * hdal.Locality and hdal.Link: hdal_locality and hdal_link as named tuples,
 * their words the library's own (hdal_link_kind_name). */
static PyTypeObject *locality_type, *link_type;
static PyStructSequence_Field locality_fields[] = {
    {"cpuset", "The nearest CPUs as hwloc_bitmap_snprintf() writes a bitmap (\"0x0000ffff\"), as hwloc-bind\n"
               "and hwloc-calc take it; the cpuset attribute names them in hwloc's list syntax."},
    {"numa_nodes", "The OS indexes of the nearest NUMA nodes, ascending, a tuple (empty when there are none)."},
    {"pcie_root", "The PCIe root complex above a device with a PCI bus id, \"pci<domain>:<bus>\" as sysfs\n"
                  "and Kubernetes' resource.kubernetes.io/pcieRoot name it (\"pci0000:00\"); None when not known."},
    {NULL, NULL}};
static PyStructSequence_Desc locality_desc = {
    "hdal.Locality",
    "Where a device sits in the machine (Device.locality, hdal_device_locality): the host\n"
    "CPUs and NUMA nodes nearest it, and the PCIe root above it.",
    locality_fields, 3};
static PyStructSequence_Field link_fields[] = {
    {"kind", "How the two devices are joined, from the nearest, as hdal_link_kind_name() words it:\n"
             "\"same\", \"fabric\", \"pix\", \"pxb\", \"phb\", \"node\", \"sys\" (nvidia-smi topo -m's kinds)."},
    {"peer_access", "True when the runtime says each may address the other's memory (both ways)."},
    {"fabric", "\"nvlink\", \"xgmi\" or \"xelink\" when kind is \"fabric\"; else None."},
    {"bandwidth_mbps", "The fabric's bandwidth between them in MB/s, as the topology gives it; None when not known."},
    {"fabric_links", "How many fabric links join them (the 6 of \"NV6\"); None when not known."},
    {NULL, NULL}};
static PyStructSequence_Desc link_desc = {
    "hdal.Link",
    "How two devices of one host are joined (Device.link, hdal_device_link).",
    link_fields, 5};

/* A named tuple of n items from v (references, stolen; NULL items make it fail, the rest released). */
static PyObject *structseq_of(PyTypeObject *type, PyObject **v, int n) {
  PyObject *t = NULL;
  for (int k = 0; k < n; k++)
    if (!v[k]) goto fail;
  if (!(t = PyStructSequence_New(type))) goto fail;
  for (int k = 0; k < n; k++) PyStructSequence_SetItem(t, k, v[k]);
  return t;
fail:
  for (int k = 0; k < n; k++) Py_XDECREF(v[k]);
  return NULL;
}

static PyObject *none_ref(void) {
  Py_INCREF(Py_None);
  return Py_None;
}

/* None where hdal cannot place the device (NOT_FOUND: nothing places it;
 * FAILED_PRECONDITION: a GPU of another host), as hdal-ls --json's null;
 * hdal.Error for the rest (out of memory). */
static PyObject *dev_locality(PyObject *self, void *u) {
  hdal_locality l;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* the first call of a context may load hwloc's topology with I/O objects */
  err = hdal_device_locality(D(self), &l);
  Py_END_ALLOW_THREADS
  if (err) {
    hdal_code code = hdal_error_code(err);
    if (code != HDAL_NOT_FOUND && code != HDAL_FAILED_PRECONDITION) return pyhdal_raise(err);
    hdal_error_destroy(err);
    Py_RETURN_NONE;
  }
  PyObject *nodes = PyTuple_New((Py_ssize_t)l.numa_node_count);
  for (size_t i = 0; nodes && i < l.numa_node_count; i++) {
    PyObject *n = PyLong_FromUnsignedLong(l.numa_nodes[i]);
    if (!n || PyTuple_SetItem(nodes, (Py_ssize_t)i, n) < 0) Py_CLEAR(nodes);
  }
  PyObject *v[3] = {PyUnicode_FromString(l.cpuset ? l.cpuset : ""), nodes, str_or_none(l.pcie_root)};
  return structseq_of(locality_type, v, 3);
}

static PyObject *device_link(PyObject *self, PyObject *other) {
  if (!PyObject_TypeCheck(other, pyhdal_device_type)) {
    PyErr_Format(PyExc_TypeError, "link(): other must be an hdal.Device, got %.100s", PYHDAL_TP_NAME(other));
    return NULL;
  }
  hdal_link l;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* the runtime is asked for peer access; the topology may load */
  err = hdal_device_link(D(self), D(other), &l);
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  /* The library's word; a kind without one (none yet) reads as sys, "nothing nearer is known", as
   * Context.backend_states() reads a state without a word as unavailable. */
  const char *kind = hdal_link_kind_name(l.kind);
  PyObject *v[5] = {
      PyUnicode_FromString(kind ? kind : hdal_link_kind_name(HDAL_LINK_SYS)),
      PyBool_FromLong(l.peer_access),
      str_or_none(l.fabric),
      l.bandwidth_mbps ? PyLong_FromUnsignedLongLong((unsigned long long)l.bandwidth_mbps) : none_ref(),
      l.fabric_links ? PyLong_FromUnsignedLong(l.fabric_links) : none_ref(),
  };
  return structseq_of(link_type, v, 5);
}

static PyObject *device_bind(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"process", "memory", NULL};
  int process = 0, memory = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$pp:bind", kwlist, &process, &memory)) return NULL;
  unsigned flags = (process ? HDAL_BIND_PROCESS : HDAL_BIND_THREAD) | (memory ? 0u : (unsigned)HDAL_BIND_NO_MEMORY);
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* hwloc loads this machine's topology; a thread binding is the calling thread's, which
                            keeps running this call */
  err = hdal_device_bind(D(self), flags);
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  Py_RETURN_NONE;
}

static PyObject *dev_context(PyObject *self, void *u) {
  PyObject *ctx = (PyObject *)((pyhdal_device *)self)->ctx;
  Py_INCREF(ctx);
  return ctx;
}

/* The attributes as a dict: every value a string, or (typed) the types their
 * backend gave them, as the core read them (hdal_device_attribute_uint,
 * _bool): the values of hdal-ls --json. */
static PyObject *attributes_dict(PyObject *self, bool typed) {
  PyObject *dict = PyDict_New();
  if (!dict) return NULL;
  size_t n = hdal_device_attribute_count(D(self));
  for (size_t i = 0; i < n; i++) {
    const char *k, *v;
    uint64_t number;
    bool truth;
    if (!hdal_device_attribute(D(self), i, &k, &v)) continue;
    PyObject *val;
    if (typed && hdal_device_attribute_uint(D(self), i, &number)) val = PyLong_FromUnsignedLongLong(number);
    else if (typed && hdal_device_attribute_bool(D(self), i, &truth)) val = PyBool_FromLong(truth);
    else val = PyUnicode_FromString(v ? v : "");
    if (!val || PyDict_SetItemString(dict, k, val) < 0) {
      Py_XDECREF(val);
      Py_DECREF(dict);
      return NULL;
    }
    Py_DECREF(val);
  }
  return dict;
}

static PyObject *dev_attributes(PyObject *self, void *u) { return attributes_dict(self, false); }
static PyObject *dev_typed_attributes(PyObject *self, void *u) { return attributes_dict(self, true); }

static PyObject *device_repr(PyObject *self) {
  DLDevice dl = hdal_device_dlpack_device(D(self));
  return PyUnicode_FromFormat("<hdal.Device %d: %s %s, %s, dlpack (%d, %d)>", hdal_device_id(D(self)),
                              hdal_device_platform(D(self)), hdal_device_kind(D(self)),
                              hdal_runtime_class_name(hdal_device_runtime_class(D(self))),
                              (int)dl.device_type, (int)dl.device_id);
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, pyhdal_device_type) || (op != Py_EQ && op != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
  bool eq = D(a) == D(b);
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t device_hash(PyObject *self) {
  Py_hash_t h = (Py_hash_t)((uintptr_t)D(self) >> 4); /* objects are at least 16-byte aligned */
  return h == -1 ? -2 : h;
}

static PyObject *device_memory_stats(PyObject *self, PyObject *unused) {
  (void)unused;
  hdal_memory_stats st = {.struct_size = sizeof st};
  hdal_error *err = hdal_device_memory_stats(D(self), &st);
  if (err) return pyhdal_raise(err);
  return Py_BuildValue("{sKsKsKsKsKsK}", "bytes_in_use", (unsigned long long)st.bytes_in_use, "peak_bytes_in_use",
                       (unsigned long long)st.peak_bytes_in_use, "bytes_reserved",
                       (unsigned long long)st.bytes_reserved, "bytes_limit", (unsigned long long)st.bytes_limit,
                       "num_allocs", (unsigned long long)st.num_allocs, "num_pool_hits",
                       (unsigned long long)st.num_pool_hits);
}

static PyObject *device_trim(PyObject *self, PyObject *unused) {
  (void)unused;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* waits for the device's queued work */
  err = hdal_device_trim(D(self));
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  Py_RETURN_NONE;
}

static PyObject *device_synchronize(PyObject *self, PyObject *unused) {
  (void)unused;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* waits for the work queued on the device's work stream */
  err = hdal_device_synchronize(D(self));
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  Py_RETURN_NONE;
}

/* ---- Native handles ----
 * The kinds by name, from the library's own names (hdal_native_handle_name:
 * "HDAL_NATIVE_OPENCL_QUEUE" is "opencl_queue" here), so that a kind hdal adds
 * is taken by name without a table of the package's.  The kinds are numbered
 * by tens per API (hdal.h); the scan's bound leaves room for many more. */
#define PYHDAL_NATIVE_SCAN 256
#define PYHDAL_NATIVE_PREFIX "HDAL_NATIVE_"
static struct {
  char name[32];
  int kind;
} pyhdal_native_kinds[32];
static int pyhdal_native_count;
static PyObject *pyhdal_native_list; /* "'opencl_platform', 'opencl_device', ...", for ValueError */

static int pyhdal_native_kinds_init(void) {
  if (pyhdal_native_list) return 0; /* made once per process */
  PyObject *names = PyList_New(0);
  if (!names) return -1;
  const int room = (int)(sizeof pyhdal_native_kinds / sizeof *pyhdal_native_kinds);
  const size_t plen = strlen(PYHDAL_NATIVE_PREFIX);
  for (int k = 0; k < PYHDAL_NATIVE_SCAN && pyhdal_native_count < room; k++) {
    const char *full = hdal_native_handle_name((hdal_native_handle)k);
    if (!full || strncmp(full, PYHDAL_NATIVE_PREFIX, plen) || strlen(full + plen) >= sizeof pyhdal_native_kinds[0].name)
      continue;
    char *name = pyhdal_native_kinds[pyhdal_native_count].name;
    size_t i = 0;
    for (const char *c = full + plen; *c; c++) name[i++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    name[i] = 0;
    pyhdal_native_kinds[pyhdal_native_count++].kind = k;
    PyObject *s = PyUnicode_FromFormat("'%s'", name);
    if (!s || PyList_Append(names, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(names);
      return -1;
    }
    Py_DECREF(s);
  }
  PyObject *sep = PyUnicode_FromString(", ");
  pyhdal_native_list = sep ? PyUnicode_Join(sep, names) : NULL;
  Py_XDECREF(sep);
  Py_DECREF(names);
  return pyhdal_native_list ? 0 : -1;
}

/* kind= of native_handle(): a name of the table above, or the enum's number
 * (passed on as it is: the library refuses a number that is no kind). */
static int pyhdal_native_kind_arg(PyObject *o, int *kind) {
  if (PyUnicode_Check(o)) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s) return -1;
    for (int i = 0; i < pyhdal_native_count; i++)
      if ((size_t)n == strlen(pyhdal_native_kinds[i].name) && !memcmp(s, pyhdal_native_kinds[i].name, (size_t)n))
        return *kind = pyhdal_native_kinds[i].kind, 0;
    PyErr_Format(PyExc_ValueError, "native_handle(): unknown native handle kind %R: one of %U", o, pyhdal_native_list);
    return -1;
  }
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v < INT_MIN || v > INT_MAX) {
      PyErr_Format(PyExc_OverflowError, "native_handle(): kind %R is out of range (%d to %d)", o, INT_MIN, INT_MAX);
      return -1;
    }
    return *kind = (int)v, 0;
  }
  PyErr_Format(PyExc_TypeError, "native_handle(): kind must be a str (\"opencl_queue\", ...) or an int, got %.100s",
               PYHDAL_TP_NAME(o));
  return -1;
}

static PyObject *device_native_handle(PyObject *self, PyObject *arg) {
  int kind;
  if (pyhdal_native_kind_arg(arg, &kind) < 0) return NULL;
  intptr_t h;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* the OpenCL context and queue, the CUDA primary context, are made on first use */
  err = hdal_device_native_handle(D(self), (hdal_native_handle)kind, &h);
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  return PyLong_FromSsize_t((Py_ssize_t)h);
}

static PyObject *device_work_stream(PyObject *self, PyObject *unused) {
  (void)unused;
  intptr_t s;
  hdal_error *err;
  Py_BEGIN_ALLOW_THREADS /* the OpenCL queue is made on first use */
  err = hdal_device_work_stream(D(self), &s);
  Py_END_ALLOW_THREADS
  if (err) return pyhdal_raise(err);
  return PyLong_FromSsize_t((Py_ssize_t)s);
}

static PyMethodDef device_methods[] = {
    {"memory_stats", device_memory_stats, METH_NOARGS,
     "memory_stats($self, /)\n--\n\n"
     "memory_stats() -> dict\n\n"
     "The device's memory statistics (docs/memory.md): bytes_in_use, peak_bytes_in_use,\n"
     "bytes_reserved (in use plus cached), bytes_limit (0: none), num_allocs and\n"
     "num_pool_hits, as hdal_device_memory_stats() gives them."},
    {"trim", device_trim, METH_NOARGS,
     "trim($self, /)\n--\n\n"
     "trim() -> None\n\nGives the device's cached memory back to its runtime; memory of live buffers stays."},
    {"synchronize", device_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\n"
     "synchronize() -> None\n\nWaits for the work queued on the device's work stream (hdal_device_synchronize);\n"
     "hdal.Error (FAILED_PRECONDITION) for a device hdal serves no buffers on.  The GIL is\n"
     "released while it waits."},
    {"native_handle", device_native_handle, METH_O,
     "native_handle($self, kind, /)\n--\n\n"
     "native_handle(kind) -> int\n\n"
     "An object of the device's runtime (hdal_device_native_handle), as an int to\n"
     "cast to the runtime's type.  kind: HDAL_NATIVE_* less the prefix, lowercased\n"
     "(\"opencl_context\", \"opencl_queue\", \"cuda_stream\", \"level_zero_device\", ...;\n"
     "a name it does not know is a ValueError listing them), or the enum's number.\n"
     "The handle is hdal's, valid while the context lives: never release it (take a\n"
     "reference of the runtime's own to keep it longer).  hdal.Error (NOT_FOUND) for a\n"
     "kind the device's backend has not: the CPU has none.  The GIL is released (a\n"
     "handle may be made on first use)."},
    {"work_stream", device_work_stream, METH_NOARGS,
     "work_stream($self, /)\n--\n\n"
     "work_stream() -> int\n\n"
     "The stream hdal's own work on the device goes to (hdal_device_work_stream), as\n"
     "DLPack numbers streams: 0 for the CPU, CUDA and ROCm (the legacy default\n"
     "stream), the cl_command_queue of hdal's context for OpenCL (the\n"
     "\"opencl_queue\" native handle).  Work queued there is ordered with hdal's\n"
     "transfers.  The GIL is released."},
    {"link", device_link, METH_O,
     "link($self, other, /)\n--\n\n"
     "link(other) -> Link\n\n"
     "How this device and `other`, another device of its context on this host, are\n"
     "joined (hdal_device_link; docs/reference.md, \"Links\"): hdal.Link(kind,\n"
     "peer_access, fabric, bandwidth_mbps, fabric_links), kind one of \"same\",\n"
     "\"fabric\", \"pix\", \"pxb\", \"phb\", \"node\", \"sys\" (nvidia-smi topo -m's kinds, from\n"
     "the nearest), bandwidth_mbps and fabric_links None when not known.  hdal.Error\n"
     "(INVALID_ARGUMENT) for the device itself or one of another context,\n"
     "(FAILED_PRECONDITION) for devices of another host; TypeError for what is not an\n"
     "hdal.Device.  The GIL is released (the runtime is asked for peer access)."},
    {"bind", (PyCFunction)(void (*)(void))device_bind, METH_VARARGS | METH_KEYWORDS,
     "bind($self, /, *, process=False, memory=True)\n--\n\n"
     "bind(*, process=False, memory=True) -> None\n\n"
     "Binds the calling thread (process=True: every thread of the process) to the CPUs\n"
     "nearest the device, within those the process may use, and (memory=True) the\n"
     "calling thread's memory policy to its NUMA nodes (hdal_device_bind;\n"
     "docs/reference.md, \"Binding\").  hdal.Error, nothing changed, when it cannot:\n"
     "NOT_FOUND (nothing places the device), FAILED_PRECONDITION (a device of another\n"
     "host, or HWLOC_XMLFILE/HWLOC_SYNTHETIC make the topology another machine's),\n"
     "PERMISSION_DENIED (none of its CPUs is allowed), UNAVAILABLE (the system refused)."},
    {NULL}};

static PyGetSetDef device_getset[] = {
    {"id", dev_id, NULL, "Global id, unique in the context; dense 0..count-1.", NULL},
    {"platform", dev_platform, NULL, "\"cpu\", \"cuda\", \"opencl\", or a module's own platform name.", NULL},
    {"runtime_vendor", dev_runtime_vendor, NULL,
     "The PCI vendor id whose devices alone this device's runtime drives, as its backend module says\n"
     "(0x10de for CUDA, 0x1002 for ROCm, 0x8086 for Level Zero); 0 for a runtime of several vendors'\n"
     "devices (OpenCL, Vulkan: see the vendor_id attribute) and a CPU.",
     NULL},
    {"kind", dev_kind, NULL, "The model, e.g. \"NVIDIA H200\".", NULL},
    {"local_hardware_id", dev_local_hardware_id, NULL, "Ordinal inside its backend on its own process.", NULL},
    {"process_index", dev_process_index, NULL, "The process the device belongs to.", NULL},
    {"is_addressable", dev_is_addressable, NULL, "True when the device belongs to this process.", NULL},
    {"runtime_class", dev_runtime_class, NULL,
     "\"pjrt\": a buffer runtime serves the device in this process (DLPack import and\n"
     "export work); \"ifrt-native\": listed, but nothing serves its buffers.", NULL},
    {"runtime_class_reason", dev_runtime_class_reason, NULL, "None for \"pjrt\"; why not, otherwise.", NULL},
    {"dlpack_device", dev_dlpack_device, NULL, "(device_type, device_id) as DLPack numbers them, e.g. (1, 0) for the CPU.", NULL},
    {"memory_bytes", dev_memory_bytes, NULL, "Memory of the device (a CPU device: of its NUMA node); 0 unknown.", NULL},
    {"numa_node", dev_numa_node, NULL, "Nearest NUMA node (hwloc logical index); -1 unknown.", NULL},
    {"attributes", dev_attributes, NULL,
     "What the backend knows, as a dict of strings: pci_bus_id, uuid, compute_capability,\n"
     "driver_version, opencl_version, cpuset, cores, pus, ...", NULL},
    {"typed_attributes", dev_typed_attributes, NULL,
     "The attributes with the types their backend gave them: int for numbers, bool for\n"
     "booleans, str for the others (as hdal-ls --json shows them), e.g. {'cores': 2, ...}.", NULL},
    {"host", dev_host, NULL, "The host name of the device's process (hdal_device_host); None when not known.", NULL},
    {"host_index", dev_host_index, NULL,
     "The device's host, numbered 0 to Context.host_count - 1, the same on every process of a job.", NULL},
    {"hardware_index", dev_hardware_index, NULL,
     "The piece of hardware the device is, 0 to Context.hardware_count - 1: devices with one\n"
     "index are the same hardware (one GPU seen by CUDA and by OpenCL, say).", NULL},
    {"same_hardware", dev_same_hardware, NULL,
     "The ids of the other devices that are the same hardware as this one, ascending\n"
     "(hdal_device_same_hardware): several backends' or several processes' view of it.", NULL},
    {"locality", dev_locality, NULL,
     "Where the device sits in the machine (hdal_device_locality; docs/reference.md,\n"
     "\"Locality\"): hdal.Locality(cpuset, numa_nodes, pcie_root), or None where hdal\n"
     "cannot place it (hdal-ls --json's null): a GPU the topology does not know, a\n"
     "synthetic topology, a GPU of a process on another host, a device neither a bus id\n"
     "nor a cpuset places.  Device.bind() raises saying why.", NULL},
    {"context", dev_context, NULL, "The hdal.Context the device belongs to.", NULL},
    {NULL}};

PyTypeObject *pyhdal_device_type;

static PyType_Slot device_slots[] = {
    {Py_tp_doc, "A compute device of an hdal.Context (from Context.devices() or hdal.devices()).\n\n"
                "Devices compare equal when they are the same device of the same context."},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_repr, device_repr},
    {Py_tp_richcompare, device_richcompare},
    {Py_tp_hash, device_hash},
    {Py_tp_getset, device_getset},
    {Py_tp_methods, device_methods},
    {0, NULL}};

/* Made by the library's context only: no __new__ (a static type without tp_new had none). */
static PyType_Spec device_spec = {
    .name = "hdal.Device",
    .basicsize = sizeof(pyhdal_device),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_slots,
};

int pyhdal_device_init(PyObject *module) {
  if (pyhdal_native_kinds_init() < 0) return -1;
  if (!(locality_type = PyStructSequence_NewType(&locality_desc)) || !(link_type = PyStructSequence_NewType(&link_desc)))
    return -1;
  Py_INCREF((PyObject *)locality_type); /* one for the module, one for this file */
  if (PyModule_AddObject(module, "Locality", (PyObject *)locality_type) < 0) {
    Py_DECREF((PyObject *)locality_type);
    return -1;
  }
  Py_INCREF((PyObject *)link_type);
  if (PyModule_AddObject(module, "Link", (PyObject *)link_type) < 0) {
    Py_DECREF((PyObject *)link_type);
    return -1;
  }
  if (!(pyhdal_device_type = (PyTypeObject *)PyType_FromSpec(&device_spec))) return -1;
  Py_INCREF((PyObject *)pyhdal_device_type); /* one for the module, one for this file */
  if (PyModule_AddObject(module, "Device", (PyObject *)pyhdal_device_type) < 0) {
    Py_DECREF((PyObject *)pyhdal_device_type);
    return -1;
  }
  return 0;
}
