/* SPDX-License-Identifier: BSD-3-Clause
 * hdal.from_dlpack: the consumer side of the DLPack protocol (docs/python.md).
 *
 * The PyCapsule protocol is handled here, once: the capsule is claimed (renamed
 * "used_*") before the GIL is released, so two threads importing one capsule
 * consume it once; on failure the original name comes back and no deleter
 * runs, so the producer keeps its tensor.  The library imports a shim of the
 * managed tensor (hdal_buffer_from_dlpack_tensor: no hdal_capsule, the claim
 * is the PyCapsule's), whose deleter takes the GIL before it calls the
 * producer's: producers such as numpy 1.24 call into
 * Python from their deleter, and hdal may run it from any thread (the end of
 * a copy, the last release of a view). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "pyhdal.h"

static const char name_legacy[] = HDAL_DLPACK_CAPSULE, name_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED;
static const char name_used_legacy[] = HDAL_DLPACK_CAPSULE_USED, name_used_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED_USED;

static PyObject *str_max_version, *str_stream, *str_device, *str_copy, *str_dlpack, *str_dlpack_device;
static PyObject *max_version_1_0, *kw_max_version, *kw_max_version_stream, *kw_stream;
/* Producer types whose __dlpack__ refused max_version= (numpy 1.24, torch 1.13):
 * asked the legacy way straight away, not with a TypeError per call.  Bounded
 * (docs/python.md): the dict holds its types, so classes made on the fly would
 * otherwise live for ever; when full it starts again, which costs a forgotten
 * type one TypeError more, and a lookup stays one dict probe. */
static PyObject *legacy_types;
#define LEGACY_TYPES_MAX 64

/* The shim hdal sees in place of the producer's tensor: the same tensor with
 * a deleter that calls the producer's with the GIL.  Shims are kept for the
 * next import (a malloc and a free less per import): given back with the GIL
 * (the common case: a buffer dropped by Python code) to a plain list, else
 * (a release on a thread without it, the end of a copy; every release in the
 * limited API, which cannot tell) to an atomic one that only a holder of the
 * GIL empties; at most SHIMS_KEPT wait in each, the rest go back to the
 * allocator. */
typedef struct {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;                  /* first: what hdal sees */
  void *orig;           /* the producer's tensor */
  pyhdal_free_node node;
} shim;
#define SHIM_OF(n) ((shim *)(void *)((char *)(n) - offsetof(shim, node)))
#define SHIMS_KEPT 64
static pyhdal_free_node *shims_kept;             /* with the GIL */
static int shims_nkept;                          /* with the GIL */
static pyhdal_free_node *_Atomic shims_returned; /* pushed without the GIL, emptied with it */
static atomic_int shims_nreturned;

static shim *shim_take(void) { /* with the GIL */
  pyhdal_free_node *n = shims_kept;
  if (n) {
    shims_kept = n->next;
    shims_nkept--;
  } else if ((n = pyhdal_free_pop(&shims_returned))) {
    atomic_fetch_sub_explicit(&shims_nreturned, 1, memory_order_relaxed);
  } else {
    return malloc(sizeof(shim));
  }
  return SHIM_OF(n);
}

static void shim_give(shim *s, bool gil) {
  if (!gil) {
    if (atomic_fetch_add_explicit(&shims_nreturned, 1, memory_order_relaxed) < SHIMS_KEPT) {
      pyhdal_free_push(&shims_returned, &s->node);
      return;
    }
    atomic_fetch_sub_explicit(&shims_nreturned, 1, memory_order_relaxed);
    free(s);
  } else if (shims_nkept < SHIMS_KEPT) {
    s->node.next = shims_kept;
    shims_kept = &s->node;
    shims_nkept++;
  } else {
    free(s);
  }
}

/* The last release of a view may come while an exception is being raised
 * (np.from_dlpack(hdal.from_dlpack(x)) refusing the dtype drops the buffer with
 * its exception set), and a deleter that runs Python code (a ctypes or cffi
 * callback, numpy 1.24's) must not see it: CPython would turn both into a
 * SystemError.  The pending exception is kept aside and restored, and one the
 * deleter leaves is reported as unraisable, as CPython does for __del__.  The
 * GIL is taken unless this thread holds it (the common case: a buffer dropped
 * by Python code).  The one place a producer's deleter is called (pyhdal.h). */
void pyhdal_call_deleter(void *tensor, bool versioned, bool held) {
  PyGILState_STATE g = held ? PyGILState_LOCKED : PyGILState_Ensure();
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  bool pending = PyErr_Occurred() != NULL;
  if (pending) PyErr_Fetch(&type, &value, &tb);
  if (versioned) ((DLManagedTensorVersioned *)tensor)->deleter(tensor);
  else ((DLManagedTensor *)tensor)->deleter(tensor);
  if (PyErr_Occurred()) PyErr_WriteUnraisable(NULL);
  if (pending) PyErr_Restore(type, value, tb);
  if (!held) PyGILState_Release(g);
}

static void legacy_shim_deleter(DLManagedTensor *t) {
  shim *s = (shim *)t;
  DLManagedTensor *orig = s->orig;
  bool held = pyhdal_holds_gil();
  shim_give(s, held);
  if (orig->deleter) pyhdal_call_deleter(orig, false, held);
}

static void versioned_shim_deleter(DLManagedTensorVersioned *t) {
  shim *s = (shim *)t;
  DLManagedTensorVersioned *orig = s->orig;
  bool held = pyhdal_holds_gil();
  shim_give(s, held);
  if (orig->deleter) pyhdal_call_deleter(orig, true, held);
}

/* A shim of `pointer` (kind 1: legacy, 2: versioned) whose deleter takes the GIL before it calls the
 * producer's, given back by its deleter.  NULL when out of memory.  With the GIL. */
static shim *wrap_shim(int kind, void *pointer) {
  shim *s = shim_take();
  if (!s) return NULL;
  s->orig = pointer;
  if (kind == 1) {
    s->m.legacy = *(DLManagedTensor *)pointer;
    s->m.legacy.deleter = legacy_shim_deleter;
  } else {
    s->m.versioned = *(DLManagedTensorVersioned *)pointer;
    s->m.versioned.deleter = versioned_shim_deleter;
  }
  return s;
}

/* Whether the import of `t` onto `dev` (NULL: routed) cannot take long, so
 * that it runs with the GIL kept (releasing and taking it back costs more
 * than such an import: bench/bench_python.py): host memory onto the CPU, as
 * a view, or as a copy of at most QUICK_COPY_BYTES where the library must
 * copy (a layout it cannot alias) or copy=True asks it.  Anything else may
 * wait for a device or copy long, and releases the GIL (docs/python.md,
 * "Threads and the GIL").  `opts` NULL: the defaults. */
#define QUICK_COPY_BYTES ((uint64_t)1 << 20)
static bool import_is_quick(const DLTensor *t, const hdal_device *dev, const hdal_import_options *opts) {
  if (t->device.device_type != kDLCPU || (opts && opts->has_stream)) return false;
  if (dev && hdal_device_dlpack_device(dev).device_type != kDLCPU) return false;
  if (opts && opts->copy == HDAL_COPY_NEVER) return true; /* a view, or a refusal */
  if (t->ndim < 0 || t->ndim > 64 || (t->ndim && !t->shape)) return false;
  uint64_t bytes = ((uint64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
  for (int32_t i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0 || __builtin_mul_overflow(bytes, (uint64_t)t->shape[i], &bytes)) return false;
  return bytes <= QUICK_COPY_BYTES;
}

/* The import of a shim's tensor (kind 1: legacy, 2: versioned), without the
 * GIL unless it is quick (import_is_quick), through the library's import of
 * a tensor without a capsule: the package claims the PyCapsule itself.  The
 * library consumed the tensor on success, and for a versioned tensor of
 * another major version (its deleter ran: DLPack's rule); otherwise
 * *consumed is false, the shim is given back and no deleter runs: the tensor
 * is still its owner's. */
static PyObject *import_shim(int kind, shim *sh, pyhdal_context *ctx, hdal_device *dev,
                             const hdal_import_options *opts, bool *consumed) {
  const DLTensor *t = kind == 1 ? &sh->m.legacy.dl_tensor : &sh->m.versioned.dl_tensor;
  bool other_major = kind == 2 && sh->m.versioned.version.major != 1; /* read first: the deleter gives sh back */
  hdal_buffer *buf = NULL;
  hdal_error *err;
  if (import_is_quick(t, dev, opts)) {
    err = hdal_buffer_from_dlpack_tensor(ctx->ctx, &sh->m, kind == 2, dev, opts, &buf);
  } else {
    Py_BEGIN_ALLOW_THREADS
    err = hdal_buffer_from_dlpack_tensor(ctx->ctx, &sh->m, kind == 2, dev, opts, &buf);
    Py_END_ALLOW_THREADS
  }
  *consumed = !err || other_major;
  if (!*consumed) shim_give(sh, true);
  if (err) return pyhdal_raise(err);
  return pyhdal_buffer_new(ctx, buf);
}

/* Imports the tensor of `capsule` (a PyCapsule) into `ctx`, onto `dev` (NULL: routed). */
static PyObject *import_capsule(PyObject *capsule, pyhdal_context *ctx, hdal_device *dev,
                                const hdal_import_options *opts) {
  const char *name = PyCapsule_GetName(capsule);
  void *pointer = PyCapsule_GetPointer(capsule, name);
  if (!pointer) return NULL;
  int kind = !name ? 0 : !strcmp(name, name_versioned) ? 2 : !strcmp(name, name_legacy) ? 1 : 0; /* DLPack 1.x first */
  if (!kind) {
    /* Not a DLPack name (or one consumed already): the library says so, in its words. */
    hdal_capsule *hc = hdal_capsule_new(name, pointer);
    if (!hc) return PyErr_NoMemory();
    hdal_buffer *buf = NULL;
    hdal_error *err = hdal_buffer_from_dlpack(ctx->ctx, hc, dev, opts, &buf);
    hdal_capsule_destroy(hc); /* a name hdal does not import: nothing of it is run */
    return err ? pyhdal_raise(err) : pyhdal_buffer_new(ctx, buf);
  }
  shim *sh = wrap_shim(kind, pointer);
  if (!sh) return PyErr_NoMemory();
  /* Claimed before the GIL goes: a racing import sees a consumed capsule. */
  if (PyCapsule_SetName(capsule, kind == 1 ? name_used_legacy : name_used_versioned) < 0) {
    shim_give(sh, true);
    return NULL;
  }
  bool consumed;
  PyObject *b = import_shim(kind, sh, ctx, dev, opts, &consumed);
  if (!consumed) PyCapsule_SetName(capsule, name); /* back to its producer untouched */
  return b;
}

PyObject *pyhdal_import_versioned(pyhdal_context *ctx, DLManagedTensorVersioned *t, hdal_device *dev,
                                  const hdal_import_options *opts) {
  shim *sh = wrap_shim(2, t);
  bool consumed = false;
  PyObject *b = sh ? import_shim(2, sh, ctx, dev, opts, &consumed) : PyErr_NoMemory();
  if (!consumed && t->deleter) pyhdal_call_deleter(t, true, true); /* stolen: given back here */
  return b;
}

/* ---- the C exchange API, the consumer side (exchange.c is the producer's) ---- */

static PyObject *str_exchange_api, *str_exchange_api_alias;

/* ---- Where the full API and the limited one differ (pyhdal.h): calling
 * __dlpack__, and finding a type's exchange API (hot paths both). ---- */
#ifndef Py_LIMITED_API
/* x.__dlpack__(**kw), args = {x, keyword values...}: called unbound, without a bound method. */
static PyObject *call_dlpack(PyObject *const *args, PyObject *kwnames) {
  return PyObject_VectorcallMethod(str_dlpack, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
}

/* The type's __dlpack_c_exchange_api__, else __c_dlpack_exchange_api__ (a new
 * reference), or NULL: neither (never an exception here).  Looked up on the
 * type, as the protocol asks, through CPython's type attribute cache (keyed by
 * the type and its version tag, so a type changed or freed is looked up anew). */
static PyObject *exchange_attr(PyTypeObject *type) {
  PyObject *cap = _PyType_Lookup(type, str_exchange_api);
  if (!cap) cap = _PyType_Lookup(type, str_exchange_api_alias);
  Py_XINCREF(cap);
  return cap;
}
#else
/* PyObject_VectorcallMethod is in the limited API from 3.12 only: without
 * keywords, PyObject_CallMethodObjArgs, which calls unbound as well; with them
 * (max_version=, stream=), the bound method with the keywords in a dict. */
static PyObject *call_dlpack(PyObject *const *args, PyObject *kwnames) {
  if (!kwnames) return PyObject_CallMethodObjArgs(args[0], str_dlpack, NULL);
  PyObject *method = PyObject_GetAttr(args[0], str_dlpack);
  if (!method) return NULL;
  PyObject *kw = PyDict_New(), *none = PyTuple_New(0), *result = NULL;
  Py_ssize_t n = PyTuple_Size(kwnames), i = 0;
  if (kw && none)
    for (; i < n; i++)
      if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, i), args[1 + i]) < 0) break;
  if (kw && none && i == n) result = PyObject_Call(method, none, kw);
  Py_XDECREF(kw);
  Py_XDECREF(none);
  Py_DECREF(method);
  return result;
}

/* The limited API has no _PyType_Lookup, and reading the attribute from the
 * type (PyObject_GetAttr) would raise and drop an AttributeError for each type
 * without it, each call (numpy's, torch's: about 120 ns for each of the two
 * names on Python 3.11), and would also find the metatype's attributes and
 * call descriptors, which _PyType_Lookup does not.  So each producer type's
 * MRO is kept, as much as Python code cannot change of it read once: of the
 * classes that are immutable (Py_TPFLAGS_IMMUTABLETYPE: numpy's, torch's C
 * base, hdal's, object), the value each name has in the first of them that
 * has it; of the others (classes of a class statement), their __dict__ as a
 * live view (mappingproxy), read at each lookup, and the MRO tuple itself,
 * read anew when its __bases__ were assigned.  A lookup so finds what
 * _PyType_Lookup finds: the value, as the dict holds it, of the first class of
 * the MRO that has the name, for a type changed since as well; what it does
 * not see is C code writing into an immutable type's dict after a lookup.
 * Bounded as legacy_types is (the dict holds its types): full, it starts
 * again. */
typedef struct {
  PyObject *mro;        /* the type's __mro__ when read (checked where there are views) */
  PyObject *found[2];   /* per name: its value in the first immutable class having it; NULL: none */
  Py_ssize_t before[2]; /* per name: the views of the classes before that one (all: none) */
  Py_ssize_t nviews;
  PyObject *views[];    /* the __dict__ of each class that is not immutable, in MRO order */
} type_entry;

static PyObject *exchange_types, *str_mro, *str_dict;
#define EXCHANGE_TYPES_MAX 64
/* The answers of types whose classes are all immutable (numpy's, hdal's): no
 * Python code can change them, nor their MRO.  By the type's address, so that
 * a loop importing one type's arrays skips the dict and the entry (about 20
 * ns); each borrowed from its entry in exchange_types, and emptied with it. */
#define FIXED_SLOTS 8
static struct {
  PyTypeObject *type;
  PyObject *value; /* NULL: the type has neither name */
} fixed[FIXED_SLOTS];

static void type_entry_free(PyObject *capsule) {
  type_entry *e = PyCapsule_GetPointer(capsule, NULL);
  Py_XDECREF(e->mro);
  Py_XDECREF(e->found[0]);
  Py_XDECREF(e->found[1]);
  for (Py_ssize_t i = 0; i < e->nviews; i++) Py_DECREF(e->views[i]);
  PyMem_Free(e);
}

/* A new entry for `type` (a capsule), or NULL with an exception. */
static PyObject *type_entry_new(PyTypeObject *type, PyObject *const names[2]) {
  PyObject *mro = PyObject_GetAttr((PyObject *)type, str_mro);
  if (!mro) return NULL;
  Py_ssize_t n = PyTuple_Size(mro);
  type_entry *e = n < 0 ? NULL : PyMem_Calloc(1, sizeof *e + (size_t)n * sizeof(PyObject *));
  PyObject *capsule = e ? PyCapsule_New(e, NULL, type_entry_free) : NULL;
  if (!capsule) {
    if (e) PyMem_Free(e);
    else if (n >= 0) PyErr_NoMemory();
    Py_DECREF(mro);
    return NULL;
  }
  e->mro = mro; /* the entry's from here: freed with the capsule */
  bool done[2] = {false, false};
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *c = PyTuple_GetItem(mro, i), *dict = PyType_Check(c) ? PyObject_GetAttr(c, str_dict) : NULL;
    if (!dict) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "__mro__ holds a non-type");
      Py_DECREF(capsule);
      return NULL;
    }
    if (!(PyType_GetFlags((PyTypeObject *)c) & Py_TPFLAGS_IMMUTABLETYPE)) {
      e->views[e->nviews++] = dict;
      continue;
    }
    for (int k = 0; k < 2; k++) {
      int has = done[k] ? 0 : PySequence_Contains(dict, names[k]);
      if (has > 0 && !(e->found[k] = PyObject_GetItem(dict, names[k]))) has = -1;
      if (has < 0) {
        Py_DECREF(dict);
        Py_DECREF(capsule);
        return NULL;
      }
      if (has) {
        done[k] = true;
        e->before[k] = e->nviews;
      }
    }
    Py_DECREF(dict);
  }
  for (int k = 0; k < 2; k++)
    if (!done[k]) e->before[k] = e->nviews;
  return capsule;
}

/* As the full API's, but for an exception (NULL with it set) when Python fails us. */
static PyObject *exchange_attr(PyTypeObject *type) {
  PyObject *const names[2] = {str_exchange_api, str_exchange_api_alias};
  size_t slot = ((uintptr_t)type >> 4) % FIXED_SLOTS;
  if (fixed[slot].type == type) {
    Py_XINCREF(fixed[slot].value);
    return fixed[slot].value;
  }
  if (!exchange_types && (!(str_mro = PyUnicode_InternFromString("__mro__")) ||
                          !(str_dict = PyUnicode_InternFromString("__dict__")) || !(exchange_types = PyDict_New())))
    return NULL;
  PyObject *entry = PyDict_GetItemWithError(exchange_types, (PyObject *)type);
  if (!entry && PyErr_Occurred()) return NULL;
  Py_XINCREF(entry);
  type_entry *e = entry ? PyCapsule_GetPointer(entry, NULL) : NULL;
  if (e && e->nviews) { /* a class of the MRO may have had its __bases__ assigned */
    PyObject *mro = PyObject_GetAttr((PyObject *)type, str_mro);
    if (!mro) {
      Py_DECREF(entry);
      return NULL;
    }
    if (mro != e->mro) Py_CLEAR(entry);
    Py_DECREF(mro);
  }
  if (!entry) {
    if (!(entry = type_entry_new(type, names))) return NULL;
    if (PyDict_Size(exchange_types) >= EXCHANGE_TYPES_MAX) {
      memset(fixed, 0, sizeof fixed); /* first: the entries' values may go with them */
      PyDict_Clear(exchange_types);
    }
    e = PyCapsule_GetPointer(entry, NULL);
    if (PyDict_SetItem(exchange_types, (PyObject *)type, entry) < 0) PyErr_Clear(); /* looked up anew next time */
    else if (!e->nviews) {
      fixed[slot].type = type;
      fixed[slot].value = e->found[0] ? e->found[0] : e->found[1];
    }
  }
  PyObject *value = NULL;
  for (int k = 0; k < 2 && !value; k++) {
    for (Py_ssize_t i = 0; i < e->before[k]; i++) {
      int has = PySequence_Contains(e->views[i], names[k]);
      if (has) { /* found, or an error */
        value = has > 0 ? PyObject_GetItem(e->views[i], names[k]) : NULL;
        goto out;
      }
    }
    value = e->found[k];
    Py_XINCREF(value);
  }
out:
  Py_DECREF(entry);
  return value;
}
#endif

/* The exchange API table of `type` that hdal can use, or NULL: none at all
 * (*why NULL), or one it cannot use (*why says why); in the limited API, NULL
 * with an exception where the lookup failed. */
static const DLPackExchangeAPI *exchange_api_of(PyTypeObject *type, const char **why) {
  *why = NULL;
  PyObject *cap = exchange_attr(type);
  if (!cap) return NULL;
  if (!PyCapsule_IsValid(cap, HDAL_DLPACK_EXCHANGE_API_CAPSULE)) {
    Py_DECREF(cap);
    *why = "is not a PyCapsule named \"" HDAL_DLPACK_EXCHANGE_API_CAPSULE "\"";
    return NULL;
  }
  /* The table outlives this reference to the capsule: the type holds the capsule. */
  const DLPackExchangeAPIHeader *h = PyCapsule_GetPointer(cap, HDAL_DLPACK_EXCHANGE_API_CAPSULE);
  Py_DECREF(cap);
  while (h && h->version.major != 1) h = h->prev_api; /* a newer table may chain to the one hdal reads */
  if (!h) {
    *why = "has no table of major version 1 (hdal reads DLPack 1.x)";
    return NULL;
  }
  const DLPackExchangeAPI *api = (const DLPackExchangeAPI *)h;
  if (!api->managed_tensor_from_py_object_no_sync || !api->current_work_stream ||
      !api->managed_tensor_to_py_object_no_sync || !api->managed_tensor_allocator) {
    *why = "has a NULL entry that DLPack requires";
    return NULL;
  }
  return api;
}

/* x's tensor through its type's table: no synchronisation by the producer, so
 * hdal's work is ordered after the producer's current stream on the device. */
static PyObject *import_exchanged(const DLPackExchangeAPI *api, PyObject *x, pyhdal_context *ctx, hdal_device *dev,
                                  hdal_import_options opts) {
  DLManagedTensorVersioned *t = NULL;
  if (api->managed_tensor_from_py_object_no_sync(x, &t) != 0 || !t) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_BufferError, "%.100s's managed_tensor_from_py_object_no_sync failed without saying why",
                   PYHDAL_TP_NAME(x));
    return NULL;
  }
  DLDevice dl = t->dl_tensor.device;
  if (t->version.major == 1 && dl.device_type != kDLCPU) { /* a tensor of another major: the library refuses it */
    void *stream = NULL;
    if (api->current_work_stream(dl.device_type, dl.device_id, &stream) != 0) {
      if (t->deleter) pyhdal_call_deleter(t, true, true); /* the stream's error kept */
      if (!PyErr_Occurred()) PyErr_Format(PyExc_BufferError, "%.100s's current_work_stream failed", PYHDAL_TP_NAME(x));
      return NULL;
    }
    if (stream) {
      opts.has_stream = true;
      opts.stream = (intptr_t)stream;
    }
  }
  return pyhdal_import_versioned(ctx, t, dev, &opts);
}

/* x.__dlpack__(max_version=(1, 0)[, stream=s]), or x.__dlpack__([stream=s])
 * for a producer that does not take max_version. */
/* Whether x has the attribute `name`, the exception being raised set aside
 * meanwhile: no C API may be called with one set (Python 3.13 reports
 * PyObject_HasAttr's as unraisable), and the caller still decides on it. */
static int has_attr_keeping_error(PyObject *x, PyObject *name) {
#if (defined(Py_LIMITED_API) ? Py_LIMITED_API : PY_VERSION_HEX) >= 0x030C0000
  PyObject *exc = PyErr_GetRaisedException();
  int has = PyObject_HasAttr(x, name);
  PyErr_SetRaisedException(exc);
#else
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  int has = PyObject_HasAttr(x, name);
  PyErr_Restore(type, value, tb);
#endif
  return has;
}

/* Producer types that took max_version= lately, by address: the probe of
 * legacy_types is skipped for them (a dict probe costs more than the rest of
 * the call's bookkeeping), and for those that cannot change (immutable types:
 * numpy's ndarray, torch's Tensor's C base) the lookup of an exchange table
 * they were found not to have.  Held, so that no other type can have the
 * address. */
#define PRODUCER_SLOTS 4
static struct {
  PyObject *type;
  bool no_table; /* an immutable type without __dlpack_c_exchange_api__ */
} producers[PRODUCER_SLOTS];
#define PRODUCER_SLOT(type) (&producers[((uintptr_t)(type) >> 4) % PRODUCER_SLOTS])

static PyObject *ask_capsule(PyObject *x, PyObject *stream) {
  PyObject *type = (PyObject *)Py_TYPE(x);
  __typeof__(producers[0]) *slot = PRODUCER_SLOT(type);
  int legacy = slot->type == type ? 0 : PyDict_Contains(legacy_types, type);
  if (legacy < 0) return NULL;
  PyObject *args[3] = {x, NULL, NULL};
  if (!legacy) {
    args[1] = max_version_1_0;
    args[2] = stream;
    PyObject *cap = call_dlpack(args, stream ? kw_max_version_stream : kw_max_version);
    if (cap && slot->type != type) {
      Py_INCREF(type);
      PYHDAL_XSETREF(slot->type, type);
      /* Its table was looked up just before (pyhdal_from_dlpack), without a stream: none found. */
      slot->no_table = !stream && (PyType_GetFlags(Py_TYPE(x)) & Py_TPFLAGS_IMMUTABLETYPE);
    }
    if (cap || !PyErr_ExceptionMatches(PyExc_TypeError)) return cap;
    /* A producer before DLPack 1.0 (TypeError: unexpected keyword argument). */
    PyErr_Clear();
    args[1] = stream;
    cap = call_dlpack(args, stream ? kw_stream : NULL);
    /* Remembered once the legacy call worked; if it failed too, its error is
     * the producer's answer (the first one only said max_version was unknown). */
    if (cap) {
      if (slot->type == type) Py_CLEAR(slot->type); /* a class whose __dlpack__ was replaced */
      if (PyDict_Size(legacy_types) >= LEGACY_TYPES_MAX) PyDict_Clear(legacy_types);
      if (PyDict_SetItem(legacy_types, type, Py_True) < 0) PyErr_Clear();
    }
    return cap;
  }
  args[1] = stream;
  return call_dlpack(args, stream ? kw_stream : NULL);
}

PyObject *pyhdal_from_dlpack(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *names[3] = {str_device, str_copy, str_stream};
  PyObject *kw[3];
  static pyhdal_kwnames_cache names_seen;
  if (pyhdal_parse_kwargs("from_dlpack", nargs, 1, kwnames, args, names, 3, kw, &names_seen) < 0) return NULL;
  PyObject *x = args[0], *device = kw[0], *stream = kw[2];
  if (stream == Py_None) stream = NULL;
  hdal_import_options opts = {.struct_size = sizeof opts};
  if (pyhdal_copy_mode(kw[1], &opts.copy) < 0 || pyhdal_stream(stream, &opts.has_stream, &opts.stream) < 0)
    return NULL;
  pyhdal_context *ctx;
  hdal_device *dev = NULL;
  if (device && device != Py_None) {
    if (pyhdal_device_arg(device, "from_dlpack()", &ctx, &dev) < 0) return NULL;
  } else if (!(ctx = pyhdal_default_context())) {
    return NULL;
  }
  Py_INCREF((PyObject *)ctx); /* the default context could not go, but a device's may be the last reference */
  PyObject *capsule, *result = NULL;
  if (PyCapsule_CheckExact(x)) {
    Py_INCREF(x);
    capsule = x;
  } else {
    /* The type's C exchange API first, unless a stream is given: __dlpack__(stream=) is how a
     * producer is told which stream to make the data ready on (docs/python.md). */
    const char *why = NULL;
    bool no_table = PRODUCER_SLOT(Py_TYPE(x))->type == (PyObject *)Py_TYPE(x) && PRODUCER_SLOT(Py_TYPE(x))->no_table;
    const DLPackExchangeAPI *api = stream || no_table ? NULL : exchange_api_of(Py_TYPE(x), &why);
    if (api) {
      pyhdal_exchange_counts.import_table++;
      result = import_exchanged(api, x, ctx, dev, opts);
      goto out;
    }
    if (PyErr_Occurred()) goto out; /* the limited API's lookup failed (out of memory) */
    capsule = ask_capsule(x, stream);
    if (!capsule) {
      if (PyErr_ExceptionMatches(PyExc_AttributeError) && !has_attr_keeping_error(x, str_dlpack)) {
        PyErr_Clear();
        if (why)
          PyErr_Format(PyExc_TypeError,
                       "from_dlpack(): %.100s has no __dlpack__, and its __dlpack_c_exchange_api__ %s",
                       PYHDAL_TP_NAME(x), why);
        else
          PyErr_Format(PyExc_TypeError,
                       "from_dlpack() expects an object with __dlpack__ and __dlpack_device__ or a DLPack "
                       "PyCapsule, got %.100s", PYHDAL_TP_NAME(x));
      }
      goto out;
    }
    if (!PyCapsule_CheckExact(capsule)) {
      PyErr_Format(PyExc_TypeError, "%.100s.__dlpack__() returned %.100s, not a PyCapsule", PYHDAL_TP_NAME(x),
                   PYHDAL_TP_NAME(capsule));
      Py_DECREF(capsule);
      goto out;
    }
  }
  pyhdal_exchange_counts.import_capsule++;
  result = import_capsule(capsule, ctx, dev, &opts);
  Py_DECREF(capsule);
out:
  Py_DECREF((PyObject *)ctx);
  return result;
}

int pyhdal_import_init(PyObject *module) {
  if (!(str_max_version = PyUnicode_InternFromString("max_version")) ||
      !(str_stream = PyUnicode_InternFromString("stream")) || !(str_device = PyUnicode_InternFromString("device")) ||
      !(str_copy = PyUnicode_InternFromString("copy")) || !(str_dlpack = PyUnicode_InternFromString("__dlpack__")) ||
      !(str_dlpack_device = PyUnicode_InternFromString("__dlpack_device__")) ||
      !(max_version_1_0 = Py_BuildValue("(ii)", 1, 0)) || !(legacy_types = PyDict_New()) ||
      !(kw_max_version = PyTuple_Pack(1, str_max_version)) ||
      !(kw_max_version_stream = PyTuple_Pack(2, str_max_version, str_stream)) ||
      !(kw_stream = PyTuple_Pack(1, str_stream)) ||
      !(str_exchange_api = PyUnicode_InternFromString("__dlpack_c_exchange_api__")) ||
      !(str_exchange_api_alias = PyUnicode_InternFromString("__c_dlpack_exchange_api__")))
    return -1;
  return 0;
}
