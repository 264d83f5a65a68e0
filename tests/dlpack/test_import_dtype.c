/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack import: every dtype of jaxlib's table, and each refusal with its message (check 6). */
#include "dlpack_testutil.h"

static hdal_context *ctx;
static void setup(void) { ctx = test_context_with("cpu"); }
static void teardown(void) { hdal_context_destroy(ctx); }

START_TEST(accepted_types_import_and_round_trip) {
  const DLDataType ok[] = {
      {kDLBool, 8, 1},       {kDLInt, 8, 1},          {kDLInt, 16, 1},          {kDLInt, 32, 1},
      {kDLInt, 64, 1},       {kDLUInt, 8, 1},         {kDLUInt, 16, 1},         {kDLUInt, 32, 1},
      {kDLUInt, 64, 1},      {kDLFloat, 16, 1},       {kDLFloat, 32, 1},        {kDLFloat, 64, 1},
      {kDLBfloat, 16, 1},    {kDLComplex, 64, 1},     {kDLComplex, 128, 1},     {kDLFloat8_e3m4, 8, 1},
      {kDLFloat8_e4m3, 8, 1}, {kDLFloat8_e4m3b11fnuz, 8, 1}, {kDLFloat8_e4m3fn, 8, 1}, {kDLFloat8_e4m3fnuz, 8, 1},
      {kDLFloat8_e5m2, 8, 1}, {kDLFloat8_e5m2fnuz, 8, 1}, {kDLFloat8_e8m0fnu, 8, 1}, {kDLFloat4_e2m1fn, 4, 1},
  };
  static _Alignas(16) unsigned char mem[16 * 16];
  for (size_t i = 0; i < sizeof mem; i++) mem[i] = (unsigned char)(i * 13 + 1);
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    int64_t shape[2] = {4, 4};
    hdal_capsule *c = tt_legacy(tt_make(mem, false, 2, shape, NULL, ok[k], tt_cpu));
    hdal_buffer *b;
    ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b));
    ck_assert_ptr_eq(hdal_buffer_data(b), mem);
    DLDataType got = hdal_buffer_dtype(b);
    ck_assert_int_eq(got.code, ok[k].code);
    ck_assert_int_eq(got.bits, ok[k].bits);
    ck_assert_int_eq(got.lanes, 1);
    size_t nbytes = ok[k].bits == 4 ? 8 : 16 * (size_t)ok[k].bits / 8;
    unsigned char out[16 * 16];
    ck_assert_ok(hdal_buffer_copy_to_host(b, out, nbytes));
    ck_assert_mem_eq(out, mem, nbytes);
    /* and a copy keeps the bytes */
    hdal_buffer *copy;
    ck_assert_ok(hdal_buffer_copy_to_device(b, tt_cpu_device(ctx), &copy));
    ck_assert_ptr_ne(hdal_buffer_data(copy), mem);
    ck_assert_mem_eq(hdal_buffer_data(copy), mem, nbytes);
    hdal_buffer_release(copy);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(tt_deleted, (int)(sizeof ok / sizeof ok[0]));
}
END_TEST

START_TEST(refused_types_with_jaxlib_messages) {
  const struct {
    DLDataType t;
    const char *msg;
  } bad[] = {
      {{kDLFloat, 32, 4}, "DLPack types with lanes != 1 not implemented, got 4"},
      {{kDLInt, 32, 0}, "DLPack types with lanes != 1 not implemented, got 0"},
      {{kDLBool, 1, 1}, "Only 8-bit DLPack booleans are supported, got 1 bits"},
      {{kDLBool, 32, 1}, "Only 8-bit DLPack booleans are supported, got 32 bits"},
      {{kDLInt, 4, 1}, "Invalid or unsupported DLPack integer width: 4 bits"},
      {{kDLInt, 128, 1}, "Invalid or unsupported DLPack integer width: 128 bits"},
      {{kDLUInt, 1, 1}, "Invalid or unsupported DLPack unsigned integer width: 1 bits"},
      {{kDLFloat, 8, 1}, "Invalid or unsupported DLPack float width: 8 bits"},
      {{kDLFloat, 128, 1}, "Invalid or unsupported DLPack float width: 128 bits"},
      {{kDLBfloat, 32, 1}, "Invalid or unsupported DLPack bfloat width: 32 bits"},
      {{kDLComplex, 32, 1}, "Invalid or unsupported DLPack complex width: 32 bits"},
      {{kDLFloat8_e3m4, 16, 1}, "Invalid or unsupported DLPack float8_e3m4 width: 16 bits"},
      {{kDLFloat8_e4m3, 4, 1}, "Invalid or unsupported DLPack float8_e4m3 width: 4 bits"},
      {{kDLFloat8_e4m3b11fnuz, 7, 1}, "Invalid or unsupported DLPack float8_e4m3b11fnuz width: 7 bits"},
      {{kDLFloat8_e4m3fn, 16, 1}, "Invalid or unsupported DLPack float8_e4m3fn width: 16 bits"},
      {{kDLFloat8_e4m3fnuz, 0, 1}, "Invalid or unsupported DLPack float8_e4m3fnuz width: 0 bits"},
      {{kDLFloat8_e5m2, 9, 1}, "Invalid or unsupported DLPack float8_e5m2 width: 9 bits"},
      {{kDLFloat8_e5m2fnuz, 16, 1}, "Invalid or unsupported DLPack float8_e5m2fnuz width: 16 bits"},
      {{kDLFloat8_e8m0fnu, 4, 1}, "Invalid or unsupported DLPack float8_e8m0fnu width: 4 bits"},
      {{kDLFloat4_e2m1fn, 8, 1}, "Invalid or unsupported DLPack float4_e2m1fn width: 8 bits"},
      {{kDLOpaqueHandle, 64, 1}, "Unknown or invalid DLPack type code 3"},
      {{kDLFloat6_e2m3fn, 6, 1}, "Unknown or invalid DLPack type code 15"},
      {{kDLFloat6_e3m2fn, 6, 1}, "Unknown or invalid DLPack type code 16"},
      {{200, 32, 1}, "Unknown or invalid DLPack type code 200"},
  };
  float mem[4] = {0};
  int64_t shape[1] = {-1}; /* a layout error too: the dtype message comes first */
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    hdal_capsule *c = tt_legacy(tt_make(mem, false, 1, shape, NULL, bad[k].t, tt_cpu));
    hdal_buffer *b;
    ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_UNIMPLEMENTED, bad[k].msg);
    ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
    ck_assert_int_eq(tt_deleted, (int)k);
    hdal_capsule_destroy(c);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("import_dtype");
  TCase *tc = tcase_create("dtype");
  unsetenv("HDAL_BACKENDS");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, accepted_types_import_and_round_trip);
  tcase_add_test(tc, refused_types_with_jaxlib_messages);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
