/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack layout validation (docs/dlpack.md, "Import", check 7) and the
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

hdal_error *hdal__layout_dims_error(const char *what, const DLTensor *t, bool with_strides) {
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
 * compact layout in that order.  Only dimensions > 1 matter.  Without the
 * sort: the compact strides in that order are 1, then each the previous one
 * times the previous dimension, so the rule holds exactly when, from
 * expect = 1, a dimension > 1 of stride `expect` can be found (and expect
 * multiplied by it) until expect is the element count n.  Each find is of a
 * dimension not found before: expect grows at each step (dimensions > 1),
 * and a dimension's stride does not; so two of one stride (a tie) fail both
 * ways, expect stays at most n (the product of a subset of the dimensions
 * > 1; no overflow: n fits 63 bits), and reaches n only once every
 * dimension > 1 was found.  The search goes on from the last find: a
 * column-major layout takes one probe a dimension. */
bool hdal__compact_up_to_permutation(int32_t ndim, const int64_t *shape, const int64_t *strides, uint64_t n) {
  int64_t expect = 1;
  int32_t i = ndim - 1;
  while ((uint64_t)expect != n) {
    int32_t probes = ndim;
    do {
      if (++i == ndim) i = 0;
      if (strides[i] == expect && shape[i] > 1) break;
    } while (--probes);
    if (!probes) return false;
    expect *= shape[i];
  }
  return true;
}
