/* SPDX-License-Identifier: BSD-3-Clause
 * The argument helpers of hdal._hdal's calls (pyhdal.h): keyword-only
 * arguments of a fast call, copy= and stream=, as hdal.from_dlpack (import.c)
 * and Buffer.__dlpack__ (export.c) take them. */
#include <limits.h>
#include <stdint.h>
#include "pyhdal.h"

int pyhdal_copy_mode(PyObject *copy, hdal_copy_mode *mode) {
  if (!copy || copy == Py_None) *mode = HDAL_COPY_IF_NEEDED;
  else if (copy == Py_True) *mode = HDAL_COPY_ALWAYS;
  else if (copy == Py_False) *mode = HDAL_COPY_NEVER;
  else {
    /* ValueError, as numpy's converter raises for copy="never". */
    PyErr_Format(PyExc_ValueError, "copy must be None, True or False, got %.100s", PYHDAL_TP_NAME(copy));
    return -1;
  }
  return 0;
}

int pyhdal_stream(PyObject *stream, bool *has, intptr_t *value) {
  *has = false;
  *value = 0;
  if (!stream || stream == Py_None) return 0;
  if (!PyLong_Check(stream)) {
    PyErr_Format(PyExc_TypeError, "stream must be None or an int, got %.100s", PYHDAL_TP_NAME(stream));
    return -1;
  }
  long long v = PyLong_AsLongLong(stream); /* OverflowError past 64 bits */
  if (v == -1 && PyErr_Occurred()) return -1;
#if INTPTR_MAX < LLONG_MAX /* 32-bit platforms */
  if (v < INTPTR_MIN || v > INTPTR_MAX) {
    PyErr_SetString(PyExc_OverflowError, "stream does not fit in a pointer-sized int");
    return -1;
  }
#endif
  *has = true;
  *value = (intptr_t)v;
  return 0;
}

/* What pyhdal_parse_kwargs (pyhdal.h) does not do inline: a refusal, or a
 * tuple of names other than last time's (kwnames is not NULL past the
 * positional count's check). */
int pyhdal_parse_kwargs_slow(const char *func, Py_ssize_t nargs, Py_ssize_t npos, PyObject *kwnames,
                             PyObject *const *args, PyObject *const *names, Py_ssize_t nnames, PyObject **out,
                             pyhdal_kwnames_cache *cache) {
  if (nargs != npos) {
    PyErr_Format(PyExc_TypeError, "%s() takes %zd positional argument%s but %zd were given", func, npos,
                 npos == 1 ? "" : "s", nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nnames; i++) out[i] = NULL;
  Py_ssize_t nkw = PYHDAL_TUPLE_SIZE(kwnames);
  signed char place[PYHDAL_KWNAMES_MAX];
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *key = PYHDAL_TUPLE_ITEM(kwnames, k);
    Py_ssize_t i;
    for (i = 0; i < nnames; i++)
      if (key == names[i]) break;
    if (i == nnames)
      for (i = 0; i < nnames; i++)
        if (PyUnicode_Compare(key, names[i]) == 0) break;
    if (i == nnames) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", func, key);
      return -1;
    }
    if (out[i]) { /* as CPython says it for a keyword given twice */
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", func, names[i]);
      return -1;
    }
    out[i] = args[nargs + k];
    if (k < PYHDAL_KWNAMES_MAX) place[k] = (signed char)i;
  }
  if (nkw <= PYHDAL_KWNAMES_MAX) { /* remembered: held, so that its address names it alone */
    Py_INCREF(kwnames);
    PYHDAL_XSETREF(cache->kwnames, kwnames);
    memcpy(cache->place, place, (size_t)nkw);
  }
  return 0;
}

int pyhdal_int_pair_slow(PyObject *o, const char *what, long long lo, long long hi, long long *a, long long *b,
                         pyhdal_pair_cache *cache) {
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
  /* Only an exact tuple of exact ints: a subclass's __index__ could answer otherwise next time. */
  if (cache && PyTuple_CheckExact(o) && PyLong_CheckExact(PYHDAL_TUPLE_ITEM(o, 0)) &&
      PyLong_CheckExact(PYHDAL_TUPLE_ITEM(o, 1))) {
    Py_INCREF(o);
    PYHDAL_XSETREF(cache->tuple, o);
    cache->a = *a;
    cache->b = *b;
  }
  return 0;
}
