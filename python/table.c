/* SPDX-License-Identifier: BSD-3-Clause
 * hdal._hdal._table: the device table and backend list of hdal-ls, printed by
 * hdal-ls's own code (tools/ls_table.c, built into this extension), for
 * `python3 -m hdal` (hdal/__main__.py; docs/python.md). */
#include "pyhdal.h" /* first: Python.h's _GNU_SOURCE gives open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include "ls.h"

PyObject *pyhdal_table(PyObject *module, PyObject *args) {
  (void)module;
  pyhdal_context *ctx;
  const char *platforms;
  if (!PyArg_ParseTuple(args, "O!z:_table", pyhdal_context_type, &ctx, &platforms)) return NULL;
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  if (!out) return PyErr_NoMemory();
  ls_view view = {.program = "python3 -m hdal", .ctx = ctx->ctx, .platforms = platforms};
  int rc = ls_print_table(&view, out);
  if (fclose(out) != 0) rc = -1;
  /* Escaped by text_escape: UTF-8, whatever the drivers said. */
  PyObject *s = rc == 0 ? PyUnicode_DecodeUTF8(text, (Py_ssize_t)size, "surrogateescape") : PyErr_NoMemory();
  free(text);
  return s;
}
