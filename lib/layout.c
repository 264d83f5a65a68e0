/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack layout validation (contract section 6, check 7) and the
 * compactness rule that decides between a zero-copy view and a copy. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "layout.h"

/* "[a,b,c]" for messages; NULL when out of memory. */
static char *join(int32_t n, const int64_t *v) {
  size_t cap = 3 + (size_t)(n > 0 ? n : 0) * 21;
  char *s = malloc(cap), *p = s;
  if (!s) return NULL;
  *p++ = '[';
  for (int32_t i = 0; i < n; i++) p += snprintf(p, cap - (size_t)(p - s), i ? ",%" PRId64 : "%" PRId64, v[i]);
  *p++ = ']';
  *p = 0;
  return s;
}

static hdal_error *dims_error(const char *what, const DLTensor *t, bool with_strides) {
  char *d = join(t->ndim, t->shape), *s = with_strides && t->strides ? join(t->ndim, t->strides) : NULL;
  hdal_error *e;
  if (!d || (with_strides && t->strides && !s))
    e = hdal__error_oom();
  else if (s)
    e = hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: dimensions were %s, strides were %s", what, d, s);
  else
    e = hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: dimensions were %s", what, d);
  free(d);
  free(s);
  return e;
}

hdal_error *hdal__layout_stride_error(const DLTensor *t) {
  char *d = join(t->ndim, t->shape), *s = join(t->ndim, t->strides);
  hdal_error *e = d && s ? hdal__error_new(HDAL_UNIMPLEMENTED,
                                           "Only DLPack tensors with trivial (compact) striding are supported; i.e., "
                                           "tensors whose striding represents a transposition of the underlying "
                                           "buffer but not broadcasting. Dimensions were: %s, strides were %s.",
                                           d, s)
                         : hdal__error_oom();
  free(d);
  free(s);
  return e;
}

void hdal__row_major_strides(int32_t ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    /* A 0 dimension counts as 1 here; a zero-size tensor's other dimensions may
     * be huge, and past 64 bits the (never used) strides are 0. */
    if (__builtin_mul_overflow(s, shape[i] > 1 ? shape[i] : 1, &s)) s = 0;
  }
}

/* jaxlib's rule: sort the dimensions by stride (ties: the later dimension is the
 * more minor), then every dimension of size > 1 must have the stride of the
 * compact layout in that order.  Only dimensions > 1 matter, and there are at
 * most 63 of them once the element count is known to fit 63 bits. */
__attribute__((noinline)) static bool compact_up_to_permutation(int32_t ndim, const int64_t *shape, const int64_t *strides) {
  int32_t idx[64];
  int n = 0;
  for (int32_t i = 0; i < ndim; i++)
    if (shape[i] > 1) {
      int k = n++;
      /* insertion: ascending stride, equal strides by descending index */
      while (k > 0 && (strides[idx[k - 1]] > strides[i] || (strides[idx[k - 1]] == strides[i] && idx[k - 1] < i))) {
        idx[k] = idx[k - 1];
        k--;
      }
      idx[k] = i;
    }
  int64_t expect = 1;
  for (int k = 0; k < n; k++) {
    if (strides[idx[k]] != expect) return false;
    expect *= shape[idx[k]];
  }
  return true;
}

/* floor(v / 8) without negating v (INT64_MIN has no negation). */
static int64_t floor_div8(int64_t v) { return (v - ((v % 8 + 8) % 8)) / 8; }

hdal_error *hdal__layout_analyze(const DLTensor *t, unsigned bits, hdal__layout *o) {
  int32_t nd = t->ndim;
  const int64_t *sh = t->shape, *st = t->strides;
  if (nd > 0 && !sh)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack tensor has %" PRId32 " dimensions but a NULL shape", nd);
  /* One pass from the last dimension: signs, zero size, element count (an
   * overflow matters only without a 0) and the row-major test, for which the
   * stride of dimension i must be the count of the dimensions after it. */
  uint64_t n = 1;
  bool zero = false, ovf = false, neg = false, rm = true;
  for (int32_t i = nd - 1; i >= 0; i--) {
    int64_t d = sh[i];
    if (d > 1) {
      if (st && st[i] != (int64_t)n) rm = false;
      ovf |= __builtin_mul_overflow(n, (uint64_t)d, &n);
    } else if (d < 1) { /* rare: a 1 changes nothing */
      neg |= d < 0;
      zero = true;
    }
  }
  if (neg)
    for (int32_t i = 0; i < nd; i++)
      if (sh[i] < 0)
        return hdal__error_new(HDAL_INVALID_ARGUMENT,
                               "DLPack tensor has a negative dimension: shape[%" PRId32 "] is %" PRId64, i, sh[i]);
  if (zero) n = 0;
  else if (ovf || n > INT64_MAX) return dims_error("DLPack tensor's element count overflows", t, false);
  uint64_t nbits;
  if (__builtin_mul_overflow(n, (uint64_t)bits, &nbits) || nbits / 8 + 1 > (uint64_t)PTRDIFF_MAX)
    return dims_error("DLPack tensor's byte size overflows", t, false);
  o->nelems = n;
  o->nbytes = (nbits + 7) / 8;
  o->min_off = o->max_off = 0;
  o->lo_byte = o->hi_byte = o->span = 0;

  uint64_t base;
  if (__builtin_add_overflow((uint64_t)(uintptr_t)t->data, t->byte_offset, &base) || base > UINTPTR_MAX)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack tensor's address wraps around: data %p + byte_offset %" PRIu64, t->data,
                           t->byte_offset);
  unsigned ebytes = bits >= 8 ? bits / 8 : 1;
  o->aligned = (base & (ebytes - 1)) == 0; /* element sizes are powers of two */
  if (n == 0) { /* strides do not matter; data may be NULL */
    o->compact = o->row_major = true;
    return NULL;
  }
  if (!t->data)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack tensor has NULL data but %" PRIu64 " elements", n);

  int64_t lo = 0, hi = 0;
  if (!st) {
    o->compact = o->row_major = true;
    hi = (int64_t)n - 1;
  } else {
    /* Row-major is the common case and needs no extent arithmetic: hi = n - 1. */
    if (rm) {
      hi = (int64_t)n - 1;
    } else {
      bool span_ovf = false;
      for (int32_t i = nd - 1; i >= 0; i--) {
        int64_t d = sh[i], s = st[i], ext;
        if (d <= 1) continue;
        span_ovf |= __builtin_mul_overflow(d - 1, s, &ext);
        span_ovf |= ext > 0 ? __builtin_add_overflow(hi, ext, &hi) : __builtin_add_overflow(lo, ext, &lo);
      }
      if (span_ovf) return dims_error("DLPack tensor's byte span overflows", t, true);
    }
    o->row_major = rm;
    o->compact = rm || compact_up_to_permutation(nd, sh, st);
  }
  if (lo == 0 && bits >= 8) { /* whole bytes from element 0 up: no bit arithmetic */
    int64_t hi_byte;
    if (__builtin_mul_overflow(hi + 1, (int64_t)(bits / 8), &hi_byte))
      return dims_error("DLPack tensor's byte span overflows", t, true);
    if ((uint64_t)hi_byte > UINTPTR_MAX - base)
      return hdal__error_new(HDAL_INVALID_ARGUMENT,
                             "DLPack tensor's address range wraps around: data %p + byte_offset %" PRIu64
                             " spans bytes [0, %" PRId64 ") around it",
                             t->data, t->byte_offset, hi_byte);
    o->max_off = hi;
    o->hi_byte = o->span = (uint64_t)hi_byte;
    return NULL;
  }
  int64_t lo_bit, hi_bit, span;
  if (__builtin_mul_overflow(lo, (int64_t)bits, &lo_bit) || __builtin_add_overflow(hi, 1, &hi_bit) ||
      __builtin_mul_overflow(hi_bit, (int64_t)bits, &hi_bit) || hi_bit > INT64_MAX - 7 ||
      __builtin_sub_overflow((hi_bit + 7) / 8, floor_div8(lo_bit), &span))
    return dims_error("DLPack tensor's byte span overflows", t, true);
  int64_t lo_byte = floor_div8(lo_bit), hi_byte = (hi_bit + 7) / 8;
  /* The whole range must lie inside the address space. */
  if ((lo_byte < 0 && (uint64_t)-lo_byte > base) || (uint64_t)hi_byte > UINTPTR_MAX - base)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack tensor's address range wraps around: data %p + byte_offset %" PRIu64
                           " spans bytes [%" PRId64 ", %" PRId64 ") around it",
                           t->data, t->byte_offset, lo_byte, hi_byte);
  o->min_off = lo;
  o->max_off = hi;
  o->lo_byte = (uint64_t)lo_byte;
  o->hi_byte = (uint64_t)hi_byte;
  o->span = (uint64_t)span;
  return NULL;
}
