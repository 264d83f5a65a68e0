/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.Error: every hdal_error becomes one, with the code's name in .code and
 * the library's message, byte for byte, as its text (docs/python.md). */
#include "pyhdal.h"

PyObject *pyhdal_error_type;

PyObject *pyhdal_raise(hdal_error *err) {
  PyObject *msg = PyUnicode_DecodeUTF8(hdal_error_message(err), (Py_ssize_t)strlen(hdal_error_message(err)),
                                       "backslashreplace");
  PyObject *code = PyUnicode_FromString(hdal_code_name(hdal_error_code(err)));
  hdal_error_destroy(err);
  if (!msg || !code) goto out;
  PyObject *exc = PyObject_CallOneArg(pyhdal_error_type, msg);
  if (!exc) goto out;
  if (PyObject_SetAttrString(exc, "code", code) == 0) PyErr_SetObject(pyhdal_error_type, exc);
  Py_DECREF(exc);
out:
  Py_XDECREF(msg);
  Py_XDECREF(code);
  return NULL;
}

int pyhdal_error_init(PyObject *module) {
  PyObject *dict = Py_BuildValue("{s:O}", "code", Py_None);
  if (!dict) return -1;
  pyhdal_error_type = PyErr_NewExceptionWithDoc(
      "hdal.Error",
      "An error of the hdal library.\n\n"
      "str(e) is the library's message, byte for byte; e.code is the name of its\n"
      "code, as absl::StatusCode spells it (\"INVALID_ARGUMENT\", \"FAILED_PRECONDITION\",\n"
      "\"UNIMPLEMENTED\", ...).",
      PyExc_RuntimeError, dict);
  Py_DECREF(dict);
  if (!pyhdal_error_type) return -1;
  Py_INCREF(pyhdal_error_type);
  return PyModule_AddObject(module, "Error", pyhdal_error_type) < 0 ? -1 : 0;
}
