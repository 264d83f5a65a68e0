/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack import: hdal_buffer_from_dlpack (docs/dlpack.md, "Import").
 *
 * The checks run in the documented order (docs/dlpack.md); nothing is changed before the last
 * one passed.  Success, and only success, consumes the capsule (one
 * compare-and-swap, so a capsule raced by two threads is consumed once).
 * The common zero-copy import takes a fast path that makes the same checks
 * in the same order, and leaves every other tensor to the stages. */
#include "config.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "capsule.h"
#include "copy_path.h"
#include "device_table.h"
#include "layout_analyze.h"
#include "lifetime.h"

/* Checks 1 and 2, jaxlib's messages. */
static hdal_error *check_device(const hdal_context *ctx, const hdal_device *d) {
  switch (hdal__device_service(ctx, d)) {
  case HDAL__NOT_PJRT:
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "DLPack is supported for PjRt-compatible backends only.");
  case HDAL__NOT_ADDRESSABLE:
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "DLPack is only supported for devices addressable by the current process.");
  default:
    return NULL;
  }
}

static hdal_error *name_error(const char *name) {
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "DLPack tensor must be a capsule with name \"dltensor\", got \"%s\". Note that a DLPack "
                         "tensor may be consumed at most once.",
                         name ? name : "");
}

static void run_deleter(void *owner, bool versioned) {
  if (versioned) {
    DLManagedTensorVersioned *m = owner;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor *m = owner;
    if (m->deleter) m->deleter(m);
  }
}

/* Short arrays: two at a time (the compiler moves a pair in one instruction)
 * beats two memcpy calls. */
static inline __attribute__((always_inline)) void copy_dims(int64_t *restrict shape, int64_t *restrict strides,
                                                             const int64_t *restrict tsh, const int64_t *restrict tst,
                                                             int32_t nd) {
  int32_t i = 0;
  for (; i + 1 < nd; i += 2) {
    shape[i] = tsh[i], shape[i + 1] = tsh[i + 1];
    strides[i] = tst[i], strides[i + 1] = tst[i + 1];
  }
  if (i < nd) shape[i] = tsh[i], strides[i] = tst[i];
}

/* One import, stage by stage (docs/dlpack.md, "Import"): validate (checks
 * 4-7), route (the target device, checks 1-2 for a routed one, fork()),
 * plan (view or copy, and the HDAL_COPY_NEVER refusals), then build the view
 * or the copy.  The stages are called once each: the compiler inlines them. */
typedef struct {
  hdal_context *ctx;
  hdal_device *device; /* the target; NULL until routed */
  hdal_device *source; /* the device that owns the tensor's memory, once routed (it is then the target) */
  hdal_copy_mode mode;
  const intptr_t *stream;
  void *owner; /* the managed tensor */
  bool versioned;
  DLTensor *t;
  uint64_t flags;
  unsigned bits, src_bits; /* per element, as hdal keeps it and as the tensor holds it */
  bool padded;
  signed char alias; /* can_alias's answer once the fast path asked it (it then declined), else -1 */
  hdal__layout lay;
} import_job;

/* Checks 4-7.  *spent: the capsule stays consumed though an error is returned (check 4). */
static hdal_error *validate(import_job *j, const char *name, bool *spent) {
  hdal_error *e;
  if (!j->owner) return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack capsule \"%s\" holds a NULL tensor", name);
  if (j->versioned) {
    DLManagedTensorVersioned *m = j->owner;
    /* 4: a major version we do not know: its layout past `version` is unknown,
     * so the spec has the consumer call the deleter right away. */
    if (m->version.major != 1) {
      e = hdal__error_new(HDAL_INVALID_ARGUMENT,
                          "DLPack tensor version %" PRIu32 ".%" PRIu32 " is not supported: hdal consumes major version 1",
                          m->version.major, m->version.minor);
      *spent = true;
      run_deleter(m, true);
      return e;
    }
    j->t = &m->dl_tensor;
    j->flags = m->flags;
  } else {
    j->t = &((DLManagedTensor *)j->owner)->dl_tensor;
  }
  DLTensor *t = j->t;
  if (t->ndim < 0) /* 5 */
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "Number of dimensions in DLManagedTensor must be nonnegative, got %" PRId32,
                           t->ndim);
  DLDataType dt = t->dtype; /* 6 */
  bool common = dt.lanes == 1 && dt.code == kDLFloat && (dt.bits == 32 || dt.bits == 64); /* skip the table */
  if (!common && (e = hdal__dtype_check(dt))) return e;
  j->bits = hdal__dtype_bits(dt);
  j->padded = j->bits < 8 && (j->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  j->src_bits = j->padded ? 8 : j->bits;
  return hdal__layout_analyze(t, j->src_bits, &j->lay); /* 7 */
}

/* The target: the tensor is valid, so a backend's route op may look at its memory. */
static hdal_error *route(import_job *j) {
  hdal_error *e;
  if (!j->device) {
    if ((e = hdal__route(j->ctx, j->t, &j->device))) return e;
    j->source = j->device;
    if ((e = check_device(j->ctx, j->device))) return e;
  }
  return hdal__op_usable(j->device); /* before plan(): a fork() child refuses rather than plans a copy */
}

/* Why the tensor cannot be a view, in the documented order, when HDAL_COPY_NEVER forbids the copy. */
static hdal_error *copy_refusal(const import_job *j, bool layout_ok, bool reachable) {
  const DLTensor *t = j->t;
  hdal_device *d = j->device;
  if (!j->lay.compact) return hdal__layout_stride_error(t);
  if (!layout_ok)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "Can't create a view of a %s sub-byte DLPack tensor: hdal keeps 4-bit elements packed in "
                           "row-major order, and copying is disabled (HDAL_COPY_NEVER)",
                           j->padded ? "padded" : "non-row-major");
  if (!reachable)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "Can't create a view of a DLPack tensor on (%s, %" PRId32 ") on hdal device %d (%s, %s): "
                           "that device cannot address the tensor's memory, and copying is disabled (HDAL_COPY_NEVER)",
                           hdal__dl_type_name(t->device.device_type), t->device.device_id, d->id, d->platform, d->kind);
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "Can't create a view of buffer with unaligned data, ptr: %#" PRIxPTR
                         " is not aligned to %u bytes. ",
                         (uintptr_t)t->data + (uintptr_t)t->byte_offset, j->bits >= 8 ? j->bits / 8 : 1);
}

/* View or copy; the HDAL_COPY_NEVER refusals (HDAL_CAUSE_COPY_REFUSED). */
static hdal_error *plan(import_job *j, bool *view) {
  const DLTensor *t = j->t;
  hdal_device *d = j->device;
  bool reachable = j->alias >= 0 ? j->alias : hdal__op_can_alias(d, t);
  /* hdal keeps sub-byte elements packed and row-major. */
  bool layout_ok = j->lay.compact && (j->bits >= 8 || (j->lay.row_major && !j->padded));
  *view = j->mode != HDAL_COPY_ALWAYS && reachable && layout_ok && j->lay.aligned;
  if (j->mode != HDAL_COPY_NEVER || *view) return NULL;
  return hdal__error_with_cause(copy_refusal(j, layout_ok, reachable), HDAL_CAUSE_COPY_REFUSED);
}

/* A buffer aliasing the tensor's memory on d; it owns the tensor (owner)
 * from now on.  Shared by build_view and the fast path; `copy_strides`: the
 * tensor's strides are copied, else compact row-major ones are made. */
static inline __attribute__((always_inline)) hdal_error *make_view(hdal_device *d, const DLTensor *t, int32_t nd,
                                                                   bool copy_strides, uint64_t flags, uint64_t nbytes,
                                                                   void *owner, bool versioned, hdal_buffer **out) {
  /* Read before the object is written: its stores could alias the tensor. */
  void *data = t->data;
  uint64_t offset = t->byte_offset;
  DLDataType dtype = t->dtype;
  const int64_t *tsh = t->shape, *tst = t->strides;
  hdal_buffer *b = hdal__buffer_alloc(d, nd);
  if (__builtin_expect(!b, 0)) return hdal__error_oom();
  b->dtype = dtype;
  b->owner_kind = versioned ? HDAL__OWNER_VERSIONED : HDAL__OWNER_LEGACY; /* hdal__buffer_discard runs no deleter */
  b->is_view = true;
  b->read_only = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  b->handle = data;
  b->offset = offset;
  b->nbytes = nbytes;
  b->owner = owner;
  int64_t *shape = hdal__buffer_shape(b), *strides = hdal__buffer_strides(b);
  if (copy_strides) {
    copy_dims(shape, strides, tsh, tst, nd);
  } else {
    for (int32_t i = 0; i < nd; i++) shape[i] = tsh[i];
    hdal__row_major_strides(nd, shape, strides);
  }
  if (data && hdal__op_retains(d)) {
    hdal_error *e = hdal__op_retain(d, data);
    if (e) {
      hdal__buffer_discard(b);
      return e;
    }
    b->owns_handle = HDAL__HANDLE_RETAINED;
  }
  *out = b;
  return NULL;
}

static hdal_error *build_view(import_job *j, hdal_buffer **out) {
  const DLTensor *t = j->t;
  return make_view(j->device, t, t->ndim, t->strides && j->lay.nelems, j->flags, j->lay.nbytes, j->owner, j->versioned,
                   out);
}

/* A compact copy on the target; the tensor's deleter runs once it is complete. */
static hdal_error *build_copy(import_job *j, hdal_buffer **out) {
  const DLTensor *t = j->t;
  hdal_error *e;
  hdal__source src = {
      .ndim = t->ndim,
      .shape = t->shape,
      .strides = t->strides,
      .bits = j->bits,
      .src_bits = j->src_bits,
      .lo_byte = (int64_t)j->lay.lo_byte,
      .span = j->lay.span,
      .row_major = j->lay.row_major,
  };
  if (j->lay.nelems) {
    /* Host memory is read through host memory's operations (src.dev NULL); a
     * device's through its own, routed once (by route() when it chose the target). */
    if (!hdal__host_readable_type(t->device.device_type)) {
      if (j->source) src.dev = j->source;
      else if ((e = hdal__route(j->ctx, t, &src.dev))) return e;
    }
    src.handle = t->data;
    src.offset = t->byte_offset;
  }
  hdal_buffer *b;
  if ((e = hdal__buffer_new_compact(j->device, t->ndim, t->shape, t->dtype, &b))) return e;
  if ((e = hdal__materialize(&src, b, j->stream))) {
    hdal__buffer_discard(b);
    return e;
  }
  run_deleter(j->owner, j->versioned); /* the copy is complete: the source can go */
  *out = b;
  return NULL;
}

/* ---- The fast path: a zero-copy import of the common kind ----
 * A tensor of whole-byte elements (float32 and float64 tested first), every
 * dimension >= 1, NULL or compact row-major strides, aligned data, in memory
 * the target addresses in place, with no copy forced and no stream: the view
 * the stages would build, built from one pass over the shape and no
 * import_job (callgrind: 435 instructions an import + release became 343).
 * It makes the stages' checks in their order; for any tensor that would fail
 * one, or not be such a view, it declines before it changed anything (but
 * for a routed target and can_alias's answer, which it hands over: the
 * stages would find the same) and the stages run from the start, so that
 * every error, and every other tensor, is theirs.  Once it has routed, an
 * error of the route, of checks 1-2 or of a fork() child, and running out
 * of memory, are what the stages return at that point: it returns them. */

/* Stage 1 of check 7 for the fast path: the element count of a tensor whose
 * dimensions are all >= 1 and, when st is not NULL, whose strides are
 * compact row-major (those of size-1 dimensions aside); false for any other,
 * and for a count past 63 bits.  Inline twice, with and without st: the test
 * of st stays out of the loop. */
static inline __attribute__((always_inline)) bool fast_count(const int64_t *sh, const int64_t *st, int32_t nd,
                                                             int64_t *count) {
  int64_t n = 1;
  for (intptr_t i = nd; --i >= 0;) {
    int64_t d = sh[i];
    if (d > 1) {
      if (st && st[i] != n) return false;
      if (__builtin_mul_overflow(d, n, &n)) return false;
    } else if (d < 1) {
      return false;
    }
  }
  *count = n;
  return true;
}

/* A dtype as one word, to compare with a constant one. */
static inline uint32_t dtype_word(DLDataType dt) {
  uint32_t w;
  memcpy(&w, &dt, sizeof w);
  return w;
}

/* The route of the fast path (device == NULL): route(), out of line. */
static __attribute__((noinline)) hdal_device *fast_route(hdal_context *ctx, const DLTensor *t, hdal_error **err) {
  hdal_device *d = NULL;
  if (!(*err = hdal__route(ctx, t, &d))) *err = check_device(ctx, d);
  return d;
}

/* The fast path: true when it answered (*err NULL: *out is the view), false
 * when it declined; then *routed is the target it routed (else NULL) and
 * *alias can_alias's answer for it (else -1). */
static inline __attribute__((always_inline)) bool import_fast(hdal_context *ctx, hdal_device *device, void *owner,
                                                              bool versioned, hdal_buffer **out, hdal_error **err,
                                                              hdal_device **routed, signed char *alias) {
  if (!owner) return false;
  const DLTensor *t;
  uint64_t flags = 0;
  if (versioned) {
    const DLManagedTensorVersioned *m = owner;
    if (m->version.major != 1) return false; /* 4 */
    t = &m->dl_tensor;
    flags = m->flags;
  } else {
    t = &((const DLManagedTensor *)owner)->dl_tensor;
  }
  int32_t nd = t->ndim;
  if (nd < 0) return false; /* 5 */
  /* 6, for a dtype of whole bytes: float32 and float64 by one compare, the others by the table */
  static const DLDataType f32 = {kDLFloat, 32, 1}, f64 = {kDLFloat, 64, 1};
  uint32_t w = dtype_word(t->dtype);
  if (w != dtype_word(f32) && w != dtype_word(f64) && !hdal__dtype_whole_ok(t->dtype)) return false;
  unsigned ebytes = t->dtype.bits / 8;
  /* 7, hdal__layout_analyze's checks for such a tensor: */
  const int64_t *sh = t->shape, *st = t->strides;
  if (nd > 0 && !sh) return false;
  int64_t n;
  if (!(st ? fast_count(sh, st, nd, &n) : fast_count(sh, NULL, nd, &n))) return false;
  /* Up to 2^56 elements of 16 bytes at most: the element count, the bit and
   * byte sizes (2^63 bits, 2^60 bytes) and the span all fit. */
  if (n > (int64_t)1 << 56) return false;
  uint64_t nbytes = (uint64_t)n * ebytes, base;
  if (!t->data || __builtin_add_overflow((uint64_t)(uintptr_t)t->data, t->byte_offset, &base) ||
      (base & (ebytes - 1)) != 0 || nbytes > UINTPTR_MAX - base)
    return false;
  /* route(); errors from here on are the stages' */
  hdal_device *d = device;
  if (!d) {
    d = fast_route(ctx, t, err);
    if (*err) return true;
    *routed = d;
  }
  if ((*err = hdal__op_usable(d))) return true;
  /* plan(): a view when the target addresses the memory in place */
  if (!hdal__op_can_alias(d, t)) {
    *alias = 0;
    return false;
  }
  *err = make_view(d, t, nd, st != NULL, flags, nbytes, owner, versioned, out);
  return true;
}

/* Everything after check 3, for a capsule the caller has claimed: the
 * stages, on a job of their own.  Out of line, so that the fast path keeps
 * its registers.  Every failure but check 4's gives the capsule its name back. */
static __attribute__((noinline)) hdal_error *import_claimed(hdal_context *ctx, hdal_capsule *capsule, const char *name,
                                                            hdal_device *device, hdal_device *routed,
                                                            hdal_copy_mode mode, const intptr_t *stream,
                                                            signed char alias, hdal_buffer **out) {
  import_job job; /* field by field: the stages set the rest */
  import_job *j = &job;
  job.ctx = ctx, job.device = routed ? routed : device, job.source = routed, job.mode = mode, job.stream = stream;
  job.owner = capsule->pointer, job.versioned = name == hdal__name_versioned, job.flags = 0, job.alias = alias;
  hdal_error *e;
  bool view, spent = false;
  if (!(e = validate(j, name, &spent)) && !(e = route(j)) && !(e = plan(j, &view)) &&
      !(j->stream && (e = hdal__op_stream_wait(j->device, *j->stream))))
    e = view ? build_view(j, out) : build_copy(j, out);
  if (e && !spent) hdal__capsule_restore(capsule, name);
  return e;
}

/* The import, for hdal_buffer_from_dlpack (`fn`) and
 * hdal_buffer_from_dlpack_tensor: `claim` false for a capsule the caller made
 * for this call alone and claimed already (its name is the standard one it
 * was claimed from). */
static inline __attribute__((always_inline)) hdal_error *
import_entry(const char *fn, hdal_context *ctx, hdal_capsule *capsule, bool claim, hdal_device *device,
             const hdal_import_options *opts, hdal_buffer **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (!ctx || !capsule)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           ctx ? (claim ? "capsule" : "tensor") : "context");
  hdal_copy_mode mode = HDAL_COPY_IF_NEEDED;
  intptr_t stream_value = 0;
  const intptr_t *stream = NULL;
  if (opts) {
    if (!HDAL__HAS_FIELD(opts, hdal_import_options, copy))
      return hdal__struct_size_error("hdal_import_options", opts->struct_size);
    mode = opts->copy;
    if (mode != HDAL_COPY_IF_NEEDED && mode != HDAL_COPY_ALWAYS && mode != HDAL_COPY_NEVER)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_import_options: invalid copy mode %d", (int)mode);
    if (HDAL__HAS_FIELD(opts, hdal_import_options, stream) && opts->has_stream) {
      stream_value = opts->stream;
      stream = &stream_value;
    }
  }
  hdal_error *e;
  if (device) {
    if (device->ctx != ctx)
      return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: device %d belongs to another context", fn, device->id);
    if ((e = check_device(ctx, device))) return e; /* checks 1, 2 */
  }

  /* 3: the capsule's name. */
  const char *name = hdal__capsule_name(capsule);
  bool versioned = name == hdal__name_versioned;
  if (name != hdal__name_legacy && !versioned) return name_error(name);
  /* Claim the capsule before reading its tensor: a thread that won a race for
   * it may already have released its buffer and so freed the tensor.  Every
   * failure below gives the name back (check 4 aside), so on failure the
   * capsule is as it was; a racing importer meanwhile sees it consumed. */
  if (claim && !hdal__capsule_consume(capsule, name)) return name_error(hdal__capsule_name(capsule));
  hdal_device *routed = NULL;
  signed char alias = -1;
  if (__builtin_expect(mode != HDAL_COPY_ALWAYS && !stream, 1) &&
      import_fast(ctx, device, capsule->pointer, versioned, out, &e, &routed, &alias)) {
    if (__builtin_expect(e != NULL, 0) && claim) hdal__capsule_restore(capsule, name);
    return e;
  }
  return import_claimed(ctx, capsule, name, device, routed, mode, stream, alias, out);
}

HDAL_API hdal_error *hdal_buffer_from_dlpack(hdal_context *ctx, hdal_capsule *capsule, hdal_device *device,
                                             const hdal_import_options *opts, hdal_buffer **out) {
  return import_entry("hdal_buffer_from_dlpack", ctx, capsule, true, device, opts, out);
}

/* A capsule on the stack, nobody else's: no allocation and no atomic claim.
 * It holds the standard name so that the checks read it as they read any
 * capsule's; import_claimed's restore of it on failure is harmless. */
HDAL_API hdal_error *hdal_buffer_from_dlpack_tensor(hdal_context *ctx, void *tensor, bool versioned,
                                                    hdal_device *device, const hdal_import_options *opts,
                                                    hdal_buffer **out) {
  hdal_capsule c = {.pointer = tensor};
  atomic_init(&c.name, versioned ? hdal__name_versioned : hdal__name_legacy);
  return import_entry("hdal_buffer_from_dlpack_tensor", ctx, tensor ? &c : NULL, false, device, opts, out);
}
