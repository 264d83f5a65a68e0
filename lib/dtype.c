/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — DLPack data types: check 6, jaxlib's table and messages. */
#include "config.h"
#include "dtype.h"

/* The narrow float codes (DLPack 1.1), each valid at exactly one width. */
static const struct {
  uint8_t code, bits;
  const char *name;
} narrow[] = {
    {kDLFloat8_e3m4, 8, "float8_e3m4"},       {kDLFloat8_e4m3, 8, "float8_e4m3"},
    {kDLFloat8_e4m3b11fnuz, 8, "float8_e4m3b11fnuz"}, {kDLFloat8_e4m3fn, 8, "float8_e4m3fn"},
    {kDLFloat8_e4m3fnuz, 8, "float8_e4m3fnuz"}, {kDLFloat8_e5m2, 8, "float8_e5m2"},
    {kDLFloat8_e5m2fnuz, 8, "float8_e5m2fnuz"}, {kDLFloat8_e8m0fnu, 8, "float8_e8m0fnu"},
    {kDLFloat4_e2m1fn, 4, "float4_e2m1fn"},
};

hdal_error *hdal__dtype_check(DLDataType t) {
  if (t.lanes != 1)
    return hdal__error_new(HDAL_UNIMPLEMENTED, "DLPack types with lanes != 1 not implemented, got %d", t.lanes);
  switch (t.code) {
    case kDLBool:
      if (t.bits == 8) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Only 8-bit DLPack booleans are supported, got %d bits", t.bits);
    case kDLInt:
      if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack integer width: %d bits", t.bits);
    case kDLUInt:
      if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack unsigned integer width: %d bits",
                             t.bits);
    case kDLFloat:
      if (t.bits == 16 || t.bits == 32 || t.bits == 64) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack float width: %d bits", t.bits);
    case kDLBfloat:
      if (t.bits == 16) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack bfloat width: %d bits", t.bits);
    case kDLComplex:
      if (t.bits == 64 || t.bits == 128) return NULL;
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack complex width: %d bits", t.bits);
    default:
      for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++)
        if (narrow[i].code == t.code) {
          if (t.bits == narrow[i].bits) return NULL;
          return hdal__error_new(HDAL_UNIMPLEMENTED, "Invalid or unsupported DLPack %s width: %d bits", narrow[i].name,
                                 t.bits);
        }
      return hdal__error_new(HDAL_UNIMPLEMENTED, "Unknown or invalid DLPack type code %d", t.code);
  }
}
