/* SPDX-License-Identifier: BSD-3-Clause
 * hdal's Python package — the C extension hdal._hdal: its types and the
 * helpers its files share (docs/python.md). */
#ifndef PYHDAL_H
#define PYHDAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* What Python.h includes for the full API and not for the limited one: */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <hdal.h>

/* hdal.Context: owns one hdal_context.  Devices and buffers keep a reference
 * to the Python object, so it outlives everything made from it. */
typedef struct {
  PyObject_HEAD
  hdal_context *ctx;
} pyhdal_context;

/* hdal.Device: a device of a context (made on demand; equal when the device is). */
typedef struct {
  PyObject_HEAD
  pyhdal_context *ctx;
  hdal_device *dev;
} pyhdal_device;

/* hdal.Buffer: one reference to an hdal_buffer. */
typedef struct {
  PyObject_HEAD
  pyhdal_context *ctx;
  hdal_buffer *buf;
  /* Read from the library on first use (an import need not pay for them): */
  int8_t known;   /* 0: not yet; 1: dl and cpu are set, and host where cpu */
  bool cpu;       /* of hdal's CPU backend (kDLCPU): exported by export.c itself */
  bool read_only; /* where cpu */
  DLDevice dl;    /* its device's */
  /* Where cpu: the buffer as a borrowed DLTensor (pyhdal_buffer_dltensor), read
   * once: a CPU buffer's address, shape and strides never change, and the CPU
   * export and the exchange API's borrow, both hot, then call nothing. */
  DLTensor host;
} pyhdal_buffer;

/* The types: heap types (PyType_FromSpec) in both builds, immutable and final
 * as the static types they were. */
extern PyTypeObject *pyhdal_context_type;
extern PyTypeObject *pyhdal_device_type;
extern PyTypeObject *pyhdal_buffer_type;
extern PyObject *pyhdal_error_type;        /* hdal.Error */
extern PyObject *pyhdal_buffer_error_type; /* hdal.BufferError: hdal.Error and BufferError */
extern PyObject *pyhdal_copy_error_type;   /* hdal.CopyError: hdal.BufferError and ValueError */

/* ---- The full C API and the limited one ----
 * The extension builds on either: the full API (the autotools build, for a
 * distribution's Python) or the limited API of 3.11 (Py_LIMITED_API=0x030B0000:
 * one abi3 wheel for CPython 3.11 and later).  The code is the same but for
 * these helpers (and, in import.c, the method call and the type lookup of the
 * C exchange API), each the full API's fast way under #ifndef Py_LIMITED_API. */

/* A type's name in messages, "%.100s" (error.c): __module__.__qualname__,
 * the same in the full and the limited API. */
const char *pyhdal_type_name(PyTypeObject *type, char buf[101]);
#define PYHDAL_TP_NAME(o) pyhdal_type_name(Py_TYPE((PyObject *)(o)), (char[101]){0})

/* A tuple's size and items, read in place (hot: the keywords of a fast call);
 * the macros are not in the limited API, whose functions check each access. */
#ifndef Py_LIMITED_API
#define PYHDAL_TUPLE_SIZE(t) PyTuple_GET_SIZE(t)
#define PYHDAL_TUPLE_ITEM(t, i) PyTuple_GET_ITEM(t, i)
#else
#define PYHDAL_TUPLE_SIZE(t) PyTuple_Size(t)
#define PYHDAL_TUPLE_ITEM(t, i) PyTuple_GetItem(t, i)
#endif

/* Whether this thread holds the GIL, where knowing saves a PyGILState_Ensure
 * (a deleter, hot); PyGILState_Check is not in the limited API: "not known",
 * and the caller takes the GIL with PyGILState_Ensure, right either way.
 * From 3.13 the thread's attached state is a thread-local read, where
 * PyGILState_Check also asks the thread-specific key (pthread_getspecific). */
static inline bool pyhdal_holds_gil(void) {
#if !defined(Py_LIMITED_API) && PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked() != NULL;
#elif !defined(Py_LIMITED_API)
  return PyGILState_Check();
#else
  return false;
#endif
}

/* Py_XSETREF, which the limited API lacks: `dst` takes `src` (a reference),
 * then the old value's reference goes (its deallocation may run code that
 * reads `dst`, which is already the new value). */
#define PYHDAL_XSETREF(dst, src)     \
  do {                               \
    PyObject *old_ = (PyObject *)(dst); \
    (dst) = (src);                   \
    Py_XDECREF(old_);                \
  } while (0)

/* A free list that any thread pushes to and only a holder of the GIL pops
 * from (export.c's blocks, import.c's shims): one popper at a time, so no
 * node is popped and pushed back while a pop reads it (no ABA). */
typedef struct pyhdal_free_node {
  struct pyhdal_free_node *next;
} pyhdal_free_node;
static inline void pyhdal_free_push(pyhdal_free_node *_Atomic *head, pyhdal_free_node *n) {
  pyhdal_free_node *h = atomic_load_explicit(head, memory_order_relaxed);
  do n->next = h;
  while (!atomic_compare_exchange_weak_explicit(head, &h, n, memory_order_release, memory_order_relaxed));
}
static inline pyhdal_free_node *pyhdal_free_pop(pyhdal_free_node *_Atomic *head) { /* with the GIL */
  pyhdal_free_node *n = atomic_load_explicit(head, memory_order_acquire);
  while (n && !atomic_compare_exchange_weak_explicit(head, &n, n->next, memory_order_acquire, memory_order_acquire)) {
  }
  return n;
}

/* error.c: raise the exception for `err` (and destroy it); return NULL.
 * pyhdal_raise: hdal.CopyError for HDAL_CAUSE_COPY_REFUSED, else hdal.Error.
 * pyhdal_raise_export (Buffer.__dlpack__): also hdal.BufferError where the
 * library refuses the export asked for. */
PyObject *pyhdal_raise(hdal_error *err);
PyObject *pyhdal_raise_export(hdal_error *err);
/* A refusal of the export decided here, before the library sees it (a stream
 * for the CPU): hdal.BufferError, as every refusal of the protocol, with
 * .code `code` ("INVALID_ARGUMENT", ...) and the message formatted as
 * PyUnicode_FromFormat does; returns NULL. */
PyObject *pyhdal_refuse_export(const char *code, const char *format, ...);
int pyhdal_error_init(PyObject *module);

/* context.c */
int pyhdal_context_init(PyObject *module);
/* The default context (created on first use); a borrowed reference, NULL with an exception set. */
pyhdal_context *pyhdal_default_context(void);
PyObject *pyhdal_devices(PyObject *module, PyObject *unused);
PyObject *pyhdal_default_context_get(PyObject *module, PyObject *unused);

/* device.c */
int pyhdal_device_init(PyObject *module);
PyObject *pyhdal_device_new(pyhdal_context *ctx, hdal_device *dev);
/* (device_type, device_id) as a tuple of two ints. */
PyObject *pyhdal_dl_device_tuple(DLDevice d);
/* The device of the default context that a DLPack device names
 * (hdal_context_device_for_dlpack); NULL with an exception set. */
hdal_device *pyhdal_default_device(DLDevice dl);
/* The device a `device=` argument names, as the array API's habits name it
 * (docs/python.md, "Devices as arguments"): an hdal.Device (its context);
 * "cpu", the default context's CPU device of the first NUMA node; a DLPack
 * (device_type, device_id) pair, that device of the default context.  Sets
 * *ctx (borrowed) and *dev; -1 with TypeError, ValueError or hdal.Error. */
int pyhdal_device_arg(PyObject *device, const char *who, pyhdal_context **ctx, hdal_device **dev);

/* buffer.c */
int pyhdal_buffer_init(PyObject *module);
PyObject *pyhdal_buffer_new(pyhdal_context *ctx, hdal_buffer *buf); /* steals buf */
/* The buffer as a borrowed DLTensor: data at its first element, shape and
 * strides the buffer's own, byte_offset 0; false when the runtime cannot give
 * a handle at the first element (a buffer with elements and no data). */
static inline bool pyhdal_buffer_dltensor_read(hdal_buffer *buf, DLDevice dl, DLTensor *out) {
  int32_t nd = hdal_buffer_ndim(buf);
  const int64_t *shape = hdal_buffer_shape(buf);
  *out = (DLTensor){
      .data = hdal_buffer_data(buf), /* the buffer's own handle at its first element: nothing allocated per call */
      .device = dl,
      .ndim = nd,
      .dtype = hdal_buffer_dtype(buf),
      .shape = (int64_t *)shape,
      .strides = (int64_t *)hdal_buffer_strides(buf),
      .byte_offset = 0,
  };
  if (out->data) return true;
  for (int32_t i = 0; i < nd; i++)
    if (shape[i] == 0) return true; /* empty: no data is right */
  return false;
}

/* The buffer's device facts above, read once. */
static inline pyhdal_buffer *pyhdal_buffer_known(PyObject *o) {
  pyhdal_buffer *b = (pyhdal_buffer *)o;
  if (!b->known) {
    hdal_device *d = hdal_buffer_device(b->buf);
    b->dl = hdal_device_dlpack_device(d);
    b->cpu = b->dl.device_type == kDLCPU && !strcmp(hdal_device_platform(d), "cpu");
    if (b->cpu) { /* host memory: its data is an address, never refused */
      b->read_only = hdal_buffer_is_read_only(b->buf);
      pyhdal_buffer_dltensor_read(b->buf, b->dl, &b->host);
    }
    b->known = 1;
  }
  return b;
}

/* pyhdal_buffer_dltensor_read of the buffer, a CPU buffer's from what was read
 * once.  Inline: the exchange API's borrow and the CPU fast export are hot. */
static inline bool pyhdal_buffer_dltensor(PyObject *self, DLTensor *out) {
  pyhdal_buffer *b = pyhdal_buffer_known(self);
  if (b->cpu) {
    *out = b->host;
    return true;
  }
  return pyhdal_buffer_dltensor_read(b->buf, b->dl, out);
}

/* import.c: hdal.from_dlpack, which uses a producer type's C exchange API when it has one */
PyObject *pyhdal_from_dlpack(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
int pyhdal_import_init(PyObject *module);
/* Imports versioned tensor t, which it steals (its deleter runs on failure unless the library ran it),
 * into ctx onto dev (NULL: routed) with opts (NULL: defaults); a new hdal.Buffer or NULL with an exception. */
PyObject *pyhdal_import_versioned(pyhdal_context *ctx, DLManagedTensorVersioned *t, hdal_device *dev,
                                  const hdal_import_options *opts);
/* Runs the deleter of a producer's tensor (DLManagedTensor, or DLManagedTensorVersioned where `versioned`),
 * with the GIL (`held`: this thread holds it), an exception being raised kept through it and one the deleter
 * raises reported as unraisable: the one place hdal calls a producer's deleter. */
void pyhdal_call_deleter(void *tensor, bool versioned, bool held);

/* How tensors crossed (hdal._hdal._exchange_counts(), an introspection hook for
 * tests: docs/python.md, "The C exchange API"); counted with the GIL held. */
typedef struct {
  unsigned long long import_table;   /* hdal.from_dlpack through the producer type's exchange table */
  unsigned long long import_capsule; /* hdal.from_dlpack through a capsule (__dlpack__ or one given) */
  unsigned long long export_table;   /* hdal's table: managed_tensor_from_py_object_no_sync, dltensor_from_py_object_no_sync */
  unsigned long long to_py_table;    /* hdal's table: managed_tensor_to_py_object_no_sync */
} pyhdal_counts;
extern pyhdal_counts pyhdal_exchange_counts;
PyObject *pyhdal_exchange_counts_get(PyObject *module, PyObject *unused);

/* exchange.c: hdal.Buffer's __dlpack_c_exchange_api__ (DLPack's C exchange API), set on the type. */
int pyhdal_exchange_init(PyObject *module);

/* export.c: Buffer.__dlpack__ */
int pyhdal_export_init(PyObject *module);
PyObject *pyhdal_buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* table.c: hdal._hdal._table(context, platforms) -> str, hdal-ls's table (tools/ls_table.c). */
PyObject *pyhdal_table(PyObject *module, PyObject *args);

/* dtype.c: "float32" for a DLPack data type; NULL for one without a name.
 * pyhdal_dtype_format: the PEP 3118 format, NULL when there is none. */
const char *pyhdal_dtype_name(DLDataType t);
const char *pyhdal_dtype_format(DLDataType t);

/* args.c: the argument helpers of the calls (from_dlpack, __dlpack__).
 * Keyword-only arguments of a METH_FASTCALL | METH_KEYWORDS call: fills
 * out[i] (borrowed) for names[i] found among kwnames; refuses unknown names,
 * a name given twice and positional arguments beyond npos.  Returns 0, or -1
 * with TypeError.  `cache` (one per call site, static) keeps the last kwnames
 * tuple and where its names go: a caller that passes the same tuple each call
 * (numpy's from_dlpack does, its names not interned) is parsed without a
 * string compare. */
#define PYHDAL_KWNAMES_MAX 8
typedef struct {
  PyObject *kwnames; /* held: no other tuple can have its address */
  signed char place[PYHDAL_KWNAMES_MAX];
} pyhdal_kwnames_cache;
int pyhdal_parse_kwargs_slow(const char *func, Py_ssize_t nargs, Py_ssize_t npos, PyObject *kwnames,
                             PyObject *const *args, PyObject *const *names, Py_ssize_t nnames, PyObject **out,
                             pyhdal_kwnames_cache *cache);
/* Inline, the two cases of every hot call: no keywords, and the tuple of last time. */
static inline int pyhdal_parse_kwargs(const char *func, Py_ssize_t nargs, Py_ssize_t npos, PyObject *kwnames,
                                      PyObject *const *args, PyObject *const *names, Py_ssize_t nnames,
                                      PyObject **out, pyhdal_kwnames_cache *cache) {
  if (nargs == npos && (!kwnames || kwnames == cache->kwnames)) {
    for (Py_ssize_t i = 0; i < nnames; i++) out[i] = NULL;
    if (kwnames)
      for (Py_ssize_t k = 0, nkw = PYHDAL_TUPLE_SIZE(kwnames); k < nkw; k++) out[cache->place[k]] = args[nargs + k];
    return 0;
  }
  return pyhdal_parse_kwargs_slow(func, nargs, npos, kwnames, args, names, nnames, out, cache);
}

/* A tuple of two ints in [lo, hi] (max_version=, dl_device=, device=): TypeError
 * "<what> must be a tuple of two ints, got T"; out of [lo, hi] (the C field's
 * range) OverflowError, as CPython raises for a C int, rather than a value
 * cut to 32 bits (docs/python.md).  0 or -1.  `cache` (NULL: none; one per
 * call site, static) keeps the last exact tuple of exact ints read and its
 * values: a caller passing the same tuple each call (numpy's max_version=)
 * is answered by one compare. */
typedef struct {
  PyObject *tuple; /* held */
  long long a, b;
} pyhdal_pair_cache;
int pyhdal_int_pair_slow(PyObject *o, const char *what, long long lo, long long hi, long long *a, long long *b,
                         pyhdal_pair_cache *cache);
static inline int pyhdal_int_pair(PyObject *o, const char *what, long long lo, long long hi, long long *a,
                                  long long *b, pyhdal_pair_cache *cache) {
  if (cache && o == cache->tuple) { /* a tuple is immutable, and this one is held */
    *a = cache->a;
    *b = cache->b;
    return 0;
  }
  return pyhdal_int_pair_slow(o, what, lo, hi, a, b, cache);
}

/* copy=None/True/False -> hdal_copy_mode; -1 with ValueError for anything else (as numpy). */
int pyhdal_copy_mode(PyObject *copy, hdal_copy_mode *mode);
/* stream=None or an int. */
int pyhdal_stream(PyObject *stream, bool *has, intptr_t *value);

#endif
