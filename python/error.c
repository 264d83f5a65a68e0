/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.Error and the array API's exceptions: every hdal_error becomes one,
 * with the code's name in .code and the library's message, byte for byte, as
 * its text (docs/python.md, "Errors").  Which class is read from the error's
 * code and cause (hdal_error_cause), never from its message. */
#include <stdarg.h>

#include "pyhdal.h"

PyObject *pyhdal_error_type, *pyhdal_buffer_error_type, *pyhdal_copy_error_type;

static PyObject *raise_as(PyObject *type, hdal_error *err) {
  PyObject *msg = PyUnicode_DecodeUTF8(hdal_error_message(err), (Py_ssize_t)strlen(hdal_error_message(err)),
                                       "backslashreplace");
  PyObject *code = PyUnicode_FromString(hdal_code_name(hdal_error_code(err)));
  hdal_error_destroy(err);
  if (!msg || !code) goto out;
  PyObject *exc = PyObject_CallFunctionObjArgs(type, msg, NULL);
  if (!exc) goto out;
  if (PyObject_SetAttrString(exc, "code", code) == 0) PyErr_SetObject(type, exc);
  Py_DECREF(exc);
out:
  Py_XDECREF(msg);
  Py_XDECREF(code);
  return NULL;
}

PyObject *pyhdal_raise(hdal_error *err) {
  return raise_as(hdal_error_cause(err) == HDAL_CAUSE_COPY_REFUSED ? pyhdal_copy_error_type : pyhdal_error_type, err);
}

PyObject *pyhdal_raise_export(hdal_error *err) {
  if (hdal_error_cause(err) == HDAL_CAUSE_COPY_REFUSED) return raise_as(pyhdal_copy_error_type, err);
  switch (hdal_error_code(err)) {
  /* The arguments were checked before the library saw them: what it refuses
   * now is the export asked for (a device it cannot reach, a read-only buffer
   * as a legacy tensor, a device hdal serves no buffers on). */
  case HDAL_INVALID_ARGUMENT:
  case HDAL_NOT_FOUND:
  case HDAL_FAILED_PRECONDITION:
  case HDAL_OUT_OF_RANGE:
  case HDAL_UNIMPLEMENTED: return raise_as(pyhdal_buffer_error_type, err);
  default: return raise_as(pyhdal_error_type, err); /* out of memory, a runtime's failure */
  }
}

PyObject *pyhdal_refuse_export(const char *code, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  PyObject *msg = PyUnicode_FromFormatV(format, ap);
  va_end(ap);
  PyObject *codename = PyUnicode_FromString(code);
  PyObject *exc = msg && codename ? PyObject_CallFunctionObjArgs(pyhdal_buffer_error_type, msg, NULL) : NULL;
  if (exc && PyObject_SetAttrString(exc, "code", codename) == 0) PyErr_SetObject(pyhdal_buffer_error_type, exc);
  Py_XDECREF(exc);
  Py_XDECREF(msg);
  Py_XDECREF(codename);
  return NULL;
}

/* A type as messages name it (PYHDAL_TP_NAME): __module__.__qualname__, the
 * builtins' without their module ("numpy.ndarray", "torch.Tensor", "str"), as
 * PEP 737 names types in messages and CPython 3.13's %T prints them; read
 * through the limited API, so that the full and the limited build say the
 * same.  The first 100 bytes in buf (messages print %.100s); the exception
 * pending, if any, stays.  Only for messages: never hot. */
const char *pyhdal_type_name(PyTypeObject *type, char buf[101]) {
  PyObject *et, *ev, *etb;
  PyErr_Fetch(&et, &ev, &etb);
  PyObject *name = PyType_GetQualName(type), *module = PyObject_GetAttrString((PyObject *)type, "__module__");
  const char *n = name ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
  const char *m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8AndSize(module, NULL) : NULL;
  if (m && !strcmp(m, "builtins")) m = NULL;
  snprintf(buf, 101, "%s%s%s", m ? m : "", m ? "." : "", n ? n : "?");
  Py_XDECREF(name);
  Py_XDECREF(module);
  PyErr_Clear();
  PyErr_Restore(et, ev, etb);
  return buf;
}

/* hdal.<name>, a subclass of `bases` with a `code` of None until raised. */
static PyObject *add_type(PyObject *module, const char *name, const char *doc, PyObject *bases) {
  PyObject *dict = Py_BuildValue("{s:O}", "code", Py_None);
  if (!dict) return NULL;
  char qualified[64];
  snprintf(qualified, sizeof qualified, "hdal.%s", name);
  PyObject *type = PyErr_NewExceptionWithDoc(qualified, doc, bases, dict);
  Py_DECREF(dict);
  if (!type) return NULL;
  Py_INCREF(type); /* one for the module, one for this file */
  if (PyModule_AddObject(module, name, type) < 0) {
    Py_DECREF(type);
    Py_DECREF(type);
    return NULL;
  }
  return type;
}

int pyhdal_error_init(PyObject *module) {
  pyhdal_error_type = add_type(module, "Error",
                               "An error of the hdal library.\n\n"
                               "str(e) is the library's message, byte for byte; e.code is the name of its\n"
                               "code, as absl::StatusCode spells it (\"INVALID_ARGUMENT\", \"FAILED_PRECONDITION\",\n"
                               "\"UNIMPLEMENTED\", ...).",
                               PyExc_RuntimeError);
  if (!pyhdal_error_type) return -1;
  PyObject *bases = PyTuple_Pack(2, pyhdal_error_type, PyExc_BufferError);
  pyhdal_buffer_error_type =
      bases ? add_type(module, "BufferError",
                       "hdal.Error and BufferError: a buffer that cannot be exchanged through DLPack as asked\n"
                       "(Buffer.__dlpack__ onto a device it cannot reach, a read-only buffer as a legacy\n"
                       "capsule), as the array API standard names it.",
                       bases)
            : NULL;
  Py_XDECREF(bases);
  if (!pyhdal_buffer_error_type) return -1;
  bases = PyTuple_Pack(2, pyhdal_buffer_error_type, PyExc_ValueError);
  pyhdal_copy_error_type =
      bases ? add_type(module, "CopyError",
                       "hdal.BufferError and ValueError: copy=False, and the exchange needs a copy.\n\n"
                       "The array API standard says BufferError for copy=False in from_dlpack and\n"
                       "__dlpack__, and ValueError where from_dlpack's device= needs a copy; this is both.",
                       bases)
            : NULL;
  Py_XDECREF(bases);
  return pyhdal_copy_error_type ? 0 : -1;
}
