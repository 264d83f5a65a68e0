/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — element types (dtype.c): check 6 and sizes. */
#ifndef HDAL_DTYPE_H
#define HDAL_DTYPE_H

#include "internal.h"

/* Check 6: jaxlib's dtype table. */
HDAL__HIDDEN hdal_error *hdal__dtype_check(DLDataType t);
/* Whether check 6 passes a dtype of whole bytes (8 to 128 bits): hdal__dtype_check's
 * table, by width, for the import's fast path (no call, no error object); the
 * sub-byte float4 aside, a dtype it refuses is refused here too.  Widths, one
 * bit each from 8 bits (bit 0) to 128 (bit 4), by type code. */
static inline bool hdal__dtype_whole_ok(DLDataType t) {
  static const uint8_t widths[] = {
      [kDLInt] = 0x0f,     [kDLUInt] = 0x0f,          [kDLFloat] = 0x0e,          [kDLBfloat] = 0x02,
      [kDLComplex] = 0x18, [kDLBool] = 0x01,          [kDLFloat8_e3m4] = 0x01,    [kDLFloat8_e4m3] = 0x01,
      [kDLFloat8_e4m3b11fnuz] = 0x01, [kDLFloat8_e4m3fn] = 0x01, [kDLFloat8_e4m3fnuz] = 0x01,
      [kDLFloat8_e5m2] = 0x01, [kDLFloat8_e5m2fnuz] = 0x01, [kDLFloat8_e8m0fnu] = 0x01,
  };
  unsigned b = t.bits;
  return t.lanes == 1 && t.code < sizeof widths && b >= 8 && b <= 128 && (b & (b - 1)) == 0 &&
         (widths[t.code] >> (__builtin_ctz(b) - 3) & 1);
}
/* Bits of storage per element (4 for packed float4, else bits). */
static inline unsigned hdal__dtype_bits(DLDataType t) { return (unsigned)t.bits * (t.lanes ? t.lanes : 1); }
/* Compact byte size of n elements of `bits` (packed for sub-byte types). */
static inline uint64_t hdal__bytes_of(uint64_t n, unsigned bits) {
  return bits >= 8 ? n * (bits / 8) : (n * bits + 7) / 8;
}

#endif
