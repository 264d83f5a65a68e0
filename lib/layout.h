/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack layout analysis (check 7 and the zero-copy rule) and the
 * host copy kernels that compact strided data. */
#ifndef HDAL_LAYOUT_H
#define HDAL_LAYOUT_H

#include "internal.h"

typedef struct {
  uint64_t nelems;   /* product of the shape (1 for 0-d) */
  uint64_t nbytes;   /* compact size in bytes */
  bool compact;      /* compact up to a permutation of dimensions (jaxlib's rule) */
  bool row_major;    /* compact row-major (size-1 dimensions ignored) */
  bool aligned;      /* data + byte_offset is aligned to the element size */
  uint64_t lo_byte;  /* the first byte a copy reads, relative to data + byte_offset, */
                     /* as unsigned two's complement (negative strides) */
  uint64_t span;     /* bytes a copy must read from lo_byte */
} hdal__layout;

/* Check 7, hdal__layout_analyze(t, bits, out): validates shape, strides and
 * address range of `t` whose elements take `bits` of storage each; fills
 * `out`.  Strides are not read when a dimension is 0.  In layout_analyze.h. */
/* Its helpers: an INVALID_ARGUMENT naming the dimensions (and strides), and
 * jaxlib's compactness rule, for a shape of n elements, 0 < n < 2^63. */
HDAL__HIDDEN hdal_error *hdal__layout_dims_error(const char *what, const DLTensor *t, bool with_strides);
HDAL__HIDDEN bool hdal__compact_up_to_permutation(int32_t ndim, const int64_t *shape, const int64_t *strides,
                                                  uint64_t n);

/* jaxlib's message for a layout that is not compact up to a permutation. */
HDAL__HIDDEN hdal_error *hdal__layout_stride_error(const DLTensor *t);

/* Fills strides[] with compact row-major strides for shape[]. */
HDAL__HIDDEN void hdal__row_major_strides(int32_t ndim, const int64_t *shape, int64_t *strides);

/* Copies the elements of a strided array into compact row-major order at dst.
 * `src` is the address of element (0,...,0); strides are in elements (NULL:
 * row-major); elements take `bits` each in dst and `src_bits` each in src
 * (differs only for padded sub-byte sources).  The layout was validated. */
HDAL__HIDDEN void hdal__gather(void *dst, const void *src, int32_t ndim, const int64_t *shape,
                               const int64_t *strides, unsigned bits, unsigned src_bits);

/* memcpy that takes n == 0 with NULL pointers (a zero-size tensor's). */
HDAL__HIDDEN void hdal__copy_bytes(void *dst, const void *src, size_t n);

#endif
