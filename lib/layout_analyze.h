/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — check 7 (docs/dlpack.md): shape, strides and address range of
 * an imported tensor.  Inline in its callers, the import (its results then
 * stay in registers: callgrind, about 20 instructions of a zero-copy import)
 * and hdal_buffer_allocate, which checks a shape as an import does (stage 1). */
#ifndef HDAL_LAYOUT_ANALYZE_H
#define HDAL_LAYOUT_ANALYZE_H

#include <inttypes.h>
#include "layout.h"

/* floor(v / 8) without negating v (INT64_MIN has no negation). */
static inline int64_t hdal__floor_div8(int64_t v) { return (v - ((v % 8 + 8) % 8)) / 8; }

#define HDAL__INLINE static inline __attribute__((always_inline))

/* Stage 1, the shape: element count and byte size into o, and whether the
 * strides (if any) are row-major.  One pass from the last dimension: signs,
 * zero size, element count (an overflow matters only without a 0) and the
 * row-major test, for which the stride of dimension i must be the count of
 * the dimensions after it. */
HDAL__INLINE hdal_error *hdal__layout_count(const DLTensor *t, const int64_t *sh, const int64_t *st, unsigned bits,
                                            hdal__layout *o, bool *row_major) {
  int32_t nd = t->ndim;
  if (nd > 0 && !sh)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "DLPack tensor has %" PRId32 " dimensions but a NULL shape", nd);
  uint64_t n = 1;
  bool zero = false, ovf = false, neg = false, rm = true;
  /* Two copies of the loop, with and without strides to test: the test of st
   * stays out of the loop (callgrind: 5 instructions a dimension). */
#define HDAL__COUNT_LOOP(TEST_STRIDE)                                  \
  for (int32_t i = nd - 1; i >= 0; i--) {                              \
    int64_t d = sh[i];                                                 \
    if (d > 1) {                                                       \
      TEST_STRIDE;                                                     \
      ovf |= __builtin_mul_overflow(n, (uint64_t)d, &n);               \
    } else if (d < 1) { /* rare: a 1 changes nothing */                \
      neg |= d < 0;                                                    \
      zero = true;                                                     \
    }                                                                  \
  }
  if (st) {
    HDAL__COUNT_LOOP(rm &= st[i] == (int64_t)n)
  } else {
    HDAL__COUNT_LOOP((void)0)
  }
#undef HDAL__COUNT_LOOP
  if (neg)
    for (int32_t i = 0; i < nd; i++)
      if (sh[i] < 0)
        return hdal__error_new(HDAL_INVALID_ARGUMENT,
                               "DLPack tensor has a negative dimension: shape[%" PRId32 "] is %" PRId64, i, sh[i]);
  if (zero) n = 0;
  else if (ovf || n > INT64_MAX) return hdal__layout_dims_error("DLPack tensor's element count overflows", t, false);
  uint64_t nbits;
  if (__builtin_mul_overflow(n, (uint64_t)bits, &nbits) || nbits / 8 + 1 > (uint64_t)PTRDIFF_MAX)
    return hdal__layout_dims_error("DLPack tensor's byte size overflows", t, false);
  o->nelems = n;
  o->nbytes = (nbits + 7) / 8;
  o->lo_byte = o->span = 0;
  *row_major = rm;
  return NULL;
}

/* Stage 2, the strides: the lowest and highest element offsets [*lo, *hi]
 * the tensor reaches (n > 0), and whether its elements are compact.
 * Row-major is the common case and needs no extent arithmetic: hi = n - 1.
 * Either way hi < INT64_MAX, so that the span's end, hi + 1, fits. */
HDAL__INLINE hdal_error *hdal__layout_extent(const DLTensor *t, const int64_t *sh, const int64_t *st, uint64_t n,
                                             bool rm, hdal__layout *o, int64_t *lo, int64_t *hi) {
  *lo = 0;
  if (!st) {
    o->compact = o->row_major = true;
    *hi = (int64_t)n - 1;
    return NULL;
  }
  if (rm) {
    *hi = (int64_t)n - 1;
  } else {
    bool span_ovf = false;
    *hi = 0;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
      int64_t d = sh[i], s = st[i], ext;
      if (d <= 1) continue;
      span_ovf |= __builtin_mul_overflow(d - 1, s, &ext);
      span_ovf |= ext > 0 ? __builtin_add_overflow(*hi, ext, hi) : __builtin_add_overflow(*lo, ext, lo);
    }
    int64_t end;
    span_ovf |= __builtin_add_overflow(*hi, 1, &end); /* hi = INT64_MAX: 2^63 elements */
    if (span_ovf) return hdal__layout_dims_error("DLPack tensor's byte span overflows", t, true);
  }
  o->row_major = rm;
  o->compact = rm || hdal__compact_up_to_permutation(t->ndim, sh, st, n);
  return NULL;
}

/* Stage 3, the bytes: elements [lo, hi] as a byte range from base, which must
 * lie inside the address space. */
HDAL__INLINE hdal_error *hdal__layout_bytes(const DLTensor *t, unsigned bits, uint64_t base, int64_t lo, int64_t hi,
                                            hdal__layout *o) {
  if (lo == 0 && bits >= 8) { /* whole bytes from element 0 up: no bit arithmetic */
    int64_t hi_byte;
    if (__builtin_mul_overflow(hi + 1, (int64_t)(bits / 8), &hi_byte)) /* hi + 1: see stage 2 */
      return hdal__layout_dims_error("DLPack tensor's byte span overflows", t, true);
    if ((uint64_t)hi_byte > UINTPTR_MAX - base)
      return hdal__error_new(HDAL_INVALID_ARGUMENT,
                             "DLPack tensor's address range wraps around: data %p + byte_offset %" PRIu64
                             " spans bytes [0, %" PRId64 ") around it",
                             t->data, t->byte_offset, hi_byte);
    o->span = (uint64_t)hi_byte;
    return NULL;
  }
  int64_t lo_bit, hi_bit, span;
  if (__builtin_mul_overflow(lo, (int64_t)bits, &lo_bit) || __builtin_add_overflow(hi, 1, &hi_bit) ||
      __builtin_mul_overflow(hi_bit, (int64_t)bits, &hi_bit) || hi_bit > INT64_MAX - 7 ||
      __builtin_sub_overflow((hi_bit + 7) / 8, hdal__floor_div8(lo_bit), &span))
    return hdal__layout_dims_error("DLPack tensor's byte span overflows", t, true);
  int64_t lo_byte = hdal__floor_div8(lo_bit), hi_byte = (hi_bit + 7) / 8;
  if ((lo_byte < 0 && (uint64_t)-lo_byte > base) || (uint64_t)hi_byte > UINTPTR_MAX - base)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack tensor's address range wraps around: data %p + byte_offset %" PRIu64
                           " spans bytes [%" PRId64 ", %" PRId64 ") around it",
                           t->data, t->byte_offset, lo_byte, hi_byte);
  o->lo_byte = (uint64_t)lo_byte;
  o->span = (uint64_t)span;
  return NULL;
}

/* The three stages, with the address checks between them. */
HDAL__INLINE hdal_error *hdal__layout_analyze(const DLTensor *t, unsigned bits, hdal__layout *o) {
  const int64_t *sh = t->shape, *st = t->strides; /* read once: o's stores may alias them */
  bool rm = true;
  hdal_error *e = hdal__layout_count(t, sh, st, bits, o, &rm);
  if (e) return e;
  uint64_t base, n = o->nelems;
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
  int64_t lo, hi;
  if ((e = hdal__layout_extent(t, sh, st, n, rm, o, &lo, &hi))) return e;
  return hdal__layout_bytes(t, bits, base, lo, hi, o);
}

#undef HDAL__INLINE

#endif
