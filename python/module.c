/* SPDX-License-Identifier: BSD-3-Clause
 * hdal._hdal: the C extension behind the Python package hdal (docs/python.md). */
#include "pyhdal.h"


static PyObject *pyhdal_dlpack_device_type_name(PyObject *self, PyObject *arg) {
  (void)self;
  int overflow;
  long t = PyLong_AsLongAndOverflow(arg, &overflow);
  if (t == -1 && PyErr_Occurred()) return NULL;
  const char *name = !overflow && t >= INT32_MIN && t <= INT32_MAX ? hdal_dlpack_device_type_name((DLDeviceType)t) : NULL;
  if (!name) Py_RETURN_NONE;
  return PyUnicode_FromString(name);
}

static PyMethodDef module_methods[] = {
    {"from_dlpack", (PyCFunction)(void (*)(void))pyhdal_from_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "from_dlpack(x, /, *, device=None, copy=None, stream=None)\n--\n\n"
     "from_dlpack(x, /, *, device=None, copy=None, stream=None) -> Buffer\n\n"
     "Imports a DLPack tensor into hdal.\n\n"
     "x: any object with __dlpack__ and __dlpack_device__ (a numpy array, a torch\n"
     "  tensor, an hdal.Buffer, ...), or a PyCapsule named \"dltensor\" or\n"
     "  \"dltensor_versioned\".  hdal asks the producer for max_version=(1, 0), and\n"
     "  asks again the legacy way when the producer does not take the keyword\n"
     "  (numpy 1.24, torch 1.13).\n"
     "device: where to import onto: an hdal.Device (of any context), \"cpu\" (the\n"
     "  default context's CPU device) or a DLPack (device_type, device_id) pair (that\n"
     "  device of the default context); None: the device the tensor is on, in the\n"
     "  default context (the CPU device for host memory).\n"
     "copy: None: a zero-copy view when the device can address the memory and the\n"
     "  layout is compact up to a transposition, else a copy; True: always copy;\n"
     "  False: never copy (hdal.Error when a copy is needed).\n"
     "stream: the stream (an int) the producer should make the data ready on.\n\n"
     "On success the capsule is consumed (renamed \"used_dltensor\" /\n"
     "\"used_dltensor_versioned\") and the buffer owns the tensor.  On failure\n"
     "hdal.Error is raised with the library's code and message, the capsule is left\n"
     "as it was and no deleter runs: the source array stays usable.\n"
     "The GIL is released while hdal imports (and copies)."},
    {"devices", pyhdal_devices, METH_NOARGS,
     "devices()\n--\n\n"
     "devices() -> list[Device]\n\nThe devices of the default context, created on first use (as\n"
     "Context() with no arguments: HDAL_BACKENDS and HDAL_BACKEND_PATH apply)."},
    {"dlpack_device_type_name", pyhdal_dlpack_device_type_name, METH_O,
     "dlpack_device_type_name(device_type, /)\n--\n\n"
     "dlpack_device_type_name(device_type) -> str | None\n\n"
     "The name of a DLPack device type (1 -> \"kDLCPU\"), as the library gives it\n"
     "(hdal_dlpack_device_type_name); None for a value DLPack does not define."},
    {"_exchange_counts", pyhdal_exchange_counts_get, METH_NOARGS,
     "_exchange_counts()\n--\n\n"
     "_exchange_counts() -> dict\n\nAn introspection hook (for tests): how many hdal.from_dlpack calls took the\n"
     "producer's C exchange table (import_table) or a capsule (import_capsule), and how many\n"
     "times consumers called hdal's own table to take a buffer (export_table) or to give\n"
     "one (to_py_table), since the module was loaded."},
    {"_table", pyhdal_table, METH_VARARGS,
     "_table(context, platforms, /)\n--\n\n"
     "_table(context, platforms) -> str\n\nThe device table and backend list of hdal-ls for `context`, printed by\n"
     "hdal-ls's own code; platforms: comma-separated, or None for every platform.  For\n"
     "`python3 -m hdal` (hdal.__main__.table)."},
    {"default_context", pyhdal_default_context_get, METH_NOARGS,
     "default_context()\n--\n\n"
     "default_context() -> Context\n\nThe context behind hdal.devices() and hdal.from_dlpack(device=None)."},
    {NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "hdal._hdal",
    .m_doc = "The C extension of the hdal package (import hdal, not this).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__hdal(void);
PyMODINIT_FUNC PyInit__hdal(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (pyhdal_error_init(m) < 0 || pyhdal_context_init(m) < 0 || pyhdal_device_init(m) < 0 ||
      pyhdal_buffer_init(m) < 0 || pyhdal_import_init(m) < 0 || pyhdal_export_init(m) < 0 ||
      pyhdal_exchange_init(m) < 0 ||
      PyModule_AddStringConstant(m, "__version__", hdal_version_string()) < 0 ||
      PyModule_AddIntConstant(m, "kDLCPU", kDLCPU) < 0 || PyModule_AddIntConstant(m, "kDLCUDA", kDLCUDA) < 0 ||
      PyModule_AddIntConstant(m, "kDLCUDAHost", kDLCUDAHost) < 0 ||
      PyModule_AddIntConstant(m, "kDLOpenCL", kDLOpenCL) < 0 || PyModule_AddIntConstant(m, "kDLROCM", kDLROCM) < 0 ||
      PyModule_AddIntConstant(m, "kDLROCMHost", kDLROCMHost) < 0 ||
      PyModule_AddIntConstant(m, "kDLOneAPI", kDLOneAPI) < 0 || PyModule_AddIntConstant(m, "kDLVulkan", kDLVulkan) < 0 ||
      PyModule_AddIntConstant(m, "kDLCUDAManaged", kDLCUDAManaged) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
