/* SPDX-License-Identifier: BSD-3-Clause
 * Buffer.__dlpack__: the producer side of the DLPack protocol, as the array
 * API standard (2023.12) asks it (docs/python.md). */
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pyhdal.h"

static const char name_legacy[] = HDAL_DLPACK_CAPSULE, name_versioned[] = HDAL_DLPACK_CAPSULE_VERSIONED;
static PyObject *str_stream, *str_max_version, *str_dl_device, *str_copy;

/* ---- The tensors handed out, whatever a consumer does (docs/python.md, "A
 * consumer's mistakes") ----
 * Every tensor __dlpack__ returns is an export block of this file: the CPU
 * export's own (below), or a wrapper of the library's tensor.  DLPack has two
 * parties let go of it: the consumer that took it (renamed the capsule
 * "used_*") calls its deleter, and the capsule's destructor calls it when
 * nobody took it (the name is still "dltensor" / "dltensor_versioned").  A
 * consumer may break this: torch's from_dlpack runs the deleter and then
 * fails, leaving the name unconsumed; a consumer may call the deleter twice.
 * So the block keeps the state, and its deleter and the destructor both go
 * through it:
 *   live     set by the export, cleared by the first release: a later call of
 *            the deleter does nothing, nor does the destructor;
 *   capsule  this export's capsule, an address compared and never followed:
 *            the destructor releases the block only while it is still live and
 *            still its own export's, never a later export's that reused it.
 * The destructor reads the block after its deleter may have run, and a
 * consumer may take the tensor and remove the destructor (JAX and MXNet do:
 * dmlc/dlpack#51), so a block cannot wait for the destructor before it is
 * freed.  Blocks are therefore never given back to the allocator: a released
 * one goes to a free list for the next export (as numpy keeps free lists), so
 * they are as many as were ever alive at once, and any block a capsule names
 * is one of them.
 * The CPU export's blocks (one list per number of dimensions) are released
 * with the GIL, which their deleter takes: it drops a Python reference.  The
 * library's (one list) are not: their deleter needs no GIL, as the library's
 * own, so `live` is swapped atomically (the destructor, with the GIL, and a
 * deleter on another thread, without it, race for it) and their list is
 * pushed from any thread and popped only with the GIL (one popper at a time:
 * no ABA).  An export cannot reuse a block while a destructor runs (both hold
 * the GIL), so the destructor's two reads cannot see two exports. */
#define CPU_EXPORT_NDIM 8                  /* the CPU export's blocks hold 8 dimensions; the library exports more */
#define LIBRARY_LIST (CPU_EXPORT_NDIM + 1) /* the list of the library's tensors' blocks */

typedef struct export_block {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;                       /* first: the capsule's pointer is the block */
  PyObject *capsule;         /* this export's capsule (an address, never dereferenced) */
  PyObject *owner;           /* the CPU export: the hdal.Buffer it shows (a reference) */
  void *inner;               /* the library's export: its tensor, whose deleter the release runs */
  pyhdal_free_node node;     /* in its free list */
  uint8_t list;              /* its free list, for good: the dimensions dims[] holds, or LIBRARY_LIST */
  bool inner_versioned;
  atomic_bool live;          /* exported and not released yet */
  int64_t dims[];            /* the CPU export: shape, then strides */
} export_block;

static pyhdal_free_node *cpu_free[CPU_EXPORT_NDIM + 1]; /* with the GIL */
static pyhdal_free_node *_Atomic library_free;          /* pushed from any thread, popped with the GIL */
#define BLOCK_OF(n) ((export_block *)(void *)((char *)(n) - offsetof(export_block, node)))

/* A block for an export of `list`, with the GIL; NULL when out of memory.  Its
 * capsule is none yet: the destructor of an earlier export's capsule, still
 * alive, must not take it for its own before the new capsule is set. */
static export_block *block_take(int list) {
  pyhdal_free_node *n;
  if (list != LIBRARY_LIST) {
    if ((n = cpu_free[list])) cpu_free[list] = n->next;
  } else {
    n = pyhdal_free_pop(&library_free);
  }
  export_block *x = n ? BLOCK_OF(n) : NULL;
  if (!x) {
    size_t nd = list == LIBRARY_LIST ? 0 : (size_t)list;
    if (!(x = PyMem_Malloc(sizeof *x + 2 * nd * sizeof(int64_t)))) return NULL;
    x->list = (uint8_t)list;
    atomic_init(&x->live, false);
  }
  x->capsule = NULL;
  return x;
}

static void inner_delete(void *inner, bool versioned) {
  if (versioned) {
    DLManagedTensorVersioned *t = inner;
    if (t->deleter) t->deleter(t);
  } else {
    DLManagedTensor *t = inner;
    if (t->deleter) t->deleter(t);
  }
}

/* The one release of a live CPU block, with the GIL: the block goes to its
 * free list, its reference of the buffer goes. */
static void cpu_release(export_block *x) {
  PyObject *owner = x->owner;
  atomic_store_explicit(&x->live, false, memory_order_relaxed);
  x->owner = NULL;
  x->node.next = cpu_free[x->list];
  cpu_free[x->list] = &x->node;
  Py_DECREF(owner); /* last: it may free the buffer */
}

/* The one release of a library block, by whoever cleared `live`, with the GIL
 * or without: the block goes to its list, then the library's tensor goes. */
static void library_release(export_block *x) {
  void *inner = x->inner;
  bool v = x->inner_versioned;
  pyhdal_free_push(&library_free, &x->node);
  inner_delete(inner, v); /* the block may be another export's already: only what was read before */
}

static void release(export_block *x) {
  if (x->list == LIBRARY_LIST) library_release(x);
  else cpu_release(x);
}

/* The release of `x` unless it was released already: the one rule of the
 * deleter and the destructor.  A CPU block needs the GIL (the caller holds
 * it); a library block's `live` is swapped atomically, with the GIL or not. */
static void release_once(export_block *x) {
  if (x->list == LIBRARY_LIST) {
    if (atomic_exchange_explicit(&x->live, false, memory_order_acq_rel)) library_release(x);
  } else if (atomic_load_explicit(&x->live, memory_order_relaxed)) {
    cpu_release(x);
  }
}

/* The deleter handed out: a consumer may call it from any thread, with the
 * GIL or without, and more than once. */
static void block_delete(export_block *x) {
  if (x->list == LIBRARY_LIST || pyhdal_holds_gil()) { /* the common case: an array freed by Python code */
    release_once(x);
    return;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  release_once(x);
  PyGILState_Release(g);
}
static void legacy_deleter(DLManagedTensor *m) {
  if (m) block_delete(m->manager_ctx);
}
static void versioned_deleter(DLManagedTensorVersioned *m) {
  if (m) block_delete(m->manager_ctx);
}

/* A capsule nobody consumed still holds its name: its tensor goes back here,
 * unless its deleter ran already (a consumer that took the tensor and left
 * the name). */
static void capsule_destructor(PyObject *capsule) {
  const char *name = PyCapsule_GetName(capsule);
  if (!name || name[0] != 'd') return; /* "used_...": consumed, the common case, told at the first byte */
  if (name != name_legacy && name != name_versioned && strcmp(name, name_legacy) && strcmp(name, name_versioned))
    return; /* not a DLPack name: not ours to release */
  export_block *x = PyCapsule_GetPointer(capsule, name);
  if (!x || x->capsule != capsule) return; /* released, and the block another export's now */
  release_once(x);
}

/* The export every CPU consumer asks (numpy's np.from_dlpack): zero-copy, of
 * a buffer of hdal's CPU backend, on its own device, without a stream.  The
 * tensor holds the Python object, as numpy's own exports hold the array,
 * rather than a reference of the library's buffer: no atomic operation and no
 * allocation outside Python's (bench/bench_python.py).  Only for the CPU
 * backend, whose memory is plain memory (in a fork() child too, where the
 * library refuses every other device), up to CPU_EXPORT_NDIM dimensions;
 * every other export, and every refusal (a read-only buffer as a legacy
 * tensor), is the library's (hdal_buffer_to_dlpack_tensor), whose rules this
 * keeps: the tensor's data is hdal_buffer_data, byte_offset 0, strides set,
 * version 1.min(minor, 3), READ_ONLY for a read-only buffer (docs/dlpack.md,
 * "Export"). */
static export_block *cpu_export_of(PyObject *self, DLPackVersion maxv) {
  pyhdal_buffer *b = pyhdal_buffer_known(self);
  bool legacy = maxv.major == 0, read_only = b->read_only;
  if (!b->cpu || (legacy && read_only)) return NULL;
  DLTensor t = b->host;
  int32_t nd = t.ndim;
  if (nd > CPU_EXPORT_NDIM) return NULL;
  export_block *x = block_take(nd);
  if (!x) return NULL;
  if (nd) { /* the tensor's own copies: it outlives this call (a loop: a few dimensions, not worth memcpy's call) */
    for (int32_t i = 0; i < nd; i++) {
      x->dims[i] = t.shape[i];
      x->dims[nd + i] = t.strides[i];
    }
    t.shape = x->dims;
    t.strides = x->dims + nd;
  }
  Py_INCREF(self);
  x->owner = self;
  atomic_store_explicit(&x->live, true, memory_order_relaxed);
  if (legacy) {
    x->m.legacy = (DLManagedTensor){.dl_tensor = t, .manager_ctx = x, .deleter = legacy_deleter};
  } else {
    uint32_t minor = maxv.major == 1 && maxv.minor < HDAL_DLPACK_MINOR ? maxv.minor : HDAL_DLPACK_MINOR;
    x->m.versioned = (DLManagedTensorVersioned){.version = {HDAL_DLPACK_MAJOR, minor}, .manager_ctx = x,
                                                .deleter = versioned_deleter, .dl_tensor = t,
                                                .flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0};
  }
  return x;
}

/* The library's tensor `t` in a block of its own: the same tensor (shape and
 * strides still the library's, alive until its deleter runs), with this
 * file's deleter.  NULL with MemoryError, `t` given back. */
static export_block *library_export(void *t, bool legacy) {
  export_block *x = block_take(LIBRARY_LIST);
  if (!x) {
    inner_delete(t, !legacy);
    PyErr_NoMemory();
    return NULL;
  }
  if (legacy) {
    x->m.legacy = *(DLManagedTensor *)t;
    x->m.legacy.manager_ctx = x;
    x->m.legacy.deleter = legacy_deleter;
  } else {
    x->m.versioned = *(DLManagedTensorVersioned *)t;
    x->m.versioned.manager_ctx = x;
    x->m.versioned.deleter = versioned_deleter;
  }
  x->inner = t;
  x->inner_versioned = !legacy;
  atomic_store_explicit(&x->live, true, memory_order_relaxed); /* published to other threads with the capsule */
  return x;
}

PyObject *pyhdal_buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  hdal_export_options opts = {.struct_size = sizeof opts};
  if (nargs || kwnames) {
    static pyhdal_kwnames_cache names_seen;
    static pyhdal_pair_cache max_version_seen, dl_device_seen;
    PyObject *names[4] = {str_stream, str_max_version, str_dl_device, str_copy};
    PyObject *kw[4];
    if (pyhdal_parse_kwargs("__dlpack__", nargs, 0, kwnames, args, names, 4, kw, &names_seen) < 0) return NULL;
    if (pyhdal_stream(kw[0], &opts.has_stream, &opts.stream) < 0 || pyhdal_copy_mode(kw[3], &opts.copy) < 0)
      return NULL;
    if (kw[1] && kw[1] != Py_None) {
      long long major, minor;
      if (pyhdal_int_pair(kw[1], "max_version", LLONG_MIN, UINT32_MAX, &major, &minor, &max_version_seen) < 0) return NULL;
      if (major < 0 || minor < 0) {
        PyErr_SetString(PyExc_ValueError, "max_version must not be negative");
        return NULL;
      }
      opts.max_version.major = (uint32_t)major;
      opts.max_version.minor = (uint32_t)minor;
    }
    if (kw[2] && kw[2] != Py_None) {
      long long type, id;
      if (pyhdal_int_pair(kw[2], "dl_device", INT32_MIN, INT32_MAX, &type, &id, &dl_device_seen) < 0) return NULL;
      opts.has_dl_device = true;
      opts.dl_device.device_type = (DLDeviceType)type;
      opts.dl_device.device_id = (int32_t)id;
    }
  }
  hdal_buffer *buf = ((pyhdal_buffer *)self)->buf;
  /* "On CPU and other device types without streams, only None is accepted" (the array API), for the
   * device the tensor goes to. */
  if (opts.has_stream &&
      (opts.has_dl_device ? opts.dl_device : hdal_device_dlpack_device(hdal_buffer_device(buf))).device_type == kDLCPU) {
    return pyhdal_refuse_export("INVALID_ARGUMENT",
                                "stream must be None for a tensor on the CPU (kDLCPU has no streams), got %zd",
                                (Py_ssize_t)opts.stream);
  }
  bool legacy = opts.max_version.major == 0;
  export_block *x;
  if (!opts.has_dl_device && opts.copy != HDAL_COPY_ALWAYS && !opts.has_stream &&
      (x = cpu_export_of(self, opts.max_version))) {
    /* done: a CPU buffer's tensor */
  } else {
    void *tensor = NULL;
    hdal_error *err;
    if (opts.has_dl_device || opts.copy == HDAL_COPY_ALWAYS) { /* may copy: without the GIL */
      Py_BEGIN_ALLOW_THREADS
      err = hdal_buffer_to_dlpack_tensor(buf, &opts, &tensor);
      Py_END_ALLOW_THREADS
    } else {
      err = hdal_buffer_to_dlpack_tensor(buf, &opts, &tensor);
    }
    if (err) return pyhdal_raise_export(err);
    if (!(x = library_export(tensor, legacy))) return NULL;
  }
  PyObject *capsule = PyCapsule_New(&x->m, legacy ? name_legacy : name_versioned, capsule_destructor);
  if (!capsule) { /* the tensor goes back at once */
    atomic_store_explicit(&x->live, false, memory_order_relaxed);
    release(x);
    return NULL;
  }
  x->capsule = capsule;
  return capsule;
}

int pyhdal_export_init(PyObject *module) {
  (void)module;
  return (str_stream = PyUnicode_InternFromString("stream")) &&
                 (str_max_version = PyUnicode_InternFromString("max_version")) &&
                 (str_dl_device = PyUnicode_InternFromString("dl_device")) &&
                 (str_copy = PyUnicode_InternFromString("copy"))
             ? 0
             : -1;
}
