/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — element types (dtype.c): check 6 and sizes. */
#ifndef HDAL_DTYPE_H
#define HDAL_DTYPE_H

#include "internal.h"

/* Check 6: jaxlib's dtype table. */
HDAL__HIDDEN hdal_error *hdal__dtype_check(DLDataType t);
/* Bits of storage per element (4 for packed float4, else bits). */
static inline unsigned hdal__dtype_bits(DLDataType t) { return (unsigned)t.bits * (t.lanes ? t.lanes : 1); }
/* Compact byte size of n elements of `bits` (packed for sub-byte types). */
static inline uint64_t hdal__bytes_of(uint64_t n, unsigned bits) {
  return bits >= 8 ? n * (bits / 8) : (n * bits + 7) / 8;
}

#endif
