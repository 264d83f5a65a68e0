/* SPDX-License-Identifier: BSD-3-Clause
 * DLPack data types as Python names them: numpy's names where numpy has the
 * type, ml_dtypes' for the narrow floats; PEP 3118 formats for the buffer
 * protocol where the struct module has one. */
#include "pyhdal.h"

const char *pyhdal_dtype_name(DLDataType t) {
  if (t.lanes != 1) return NULL;
  switch (t.code) {
  case kDLInt:
    switch (t.bits) { case 8: return "int8"; case 16: return "int16"; case 32: return "int32"; case 64: return "int64"; }
    break;
  case kDLUInt:
    switch (t.bits) { case 8: return "uint8"; case 16: return "uint16"; case 32: return "uint32"; case 64: return "uint64"; }
    break;
  case kDLFloat:
    switch (t.bits) { case 16: return "float16"; case 32: return "float32"; case 64: return "float64"; }
    break;
  case kDLBfloat: if (t.bits == 16) return "bfloat16"; break;
  case kDLComplex:
    switch (t.bits) { case 64: return "complex64"; case 128: return "complex128"; }
    break;
  case kDLBool: if (t.bits == 8) return "bool"; break;
  case kDLFloat8_e3m4: return "float8_e3m4";
  case kDLFloat8_e4m3: return "float8_e4m3";
  case kDLFloat8_e4m3b11fnuz: return "float8_e4m3b11fnuz";
  case kDLFloat8_e4m3fn: return "float8_e4m3fn";
  case kDLFloat8_e4m3fnuz: return "float8_e4m3fnuz";
  case kDLFloat8_e5m2: return "float8_e5m2";
  case kDLFloat8_e5m2fnuz: return "float8_e5m2fnuz";
  case kDLFloat8_e8m0fnu: return "float8_e8m0fnu";
  case kDLFloat4_e2m1fn: return "float4_e2m1fn";
  }
  return NULL;
}

const char *pyhdal_dtype_format(DLDataType t) {
  if (t.lanes != 1) return NULL;
  switch (t.code) {
  case kDLInt:
    switch (t.bits) { case 8: return "b"; case 16: return "h"; case 32: return "i"; case 64: return "q"; }
    break;
  case kDLUInt:
    switch (t.bits) { case 8: return "B"; case 16: return "H"; case 32: return "I"; case 64: return "Q"; }
    break;
  case kDLFloat:
    switch (t.bits) { case 16: return "e"; case 32: return "f"; case 64: return "d"; }
    break;
  case kDLComplex:
    switch (t.bits) { case 64: return "Zf"; case 128: return "Zd"; }
    break;
  case kDLBool: if (t.bits == 8) return "?"; break;
  }
  return NULL;
}
