/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_buffer_write, hdal_buffer_read and hdal_device_synchronize (issue 38):
 * host bytes into a buffer and back, whole and by range, on the CPU and on
 * PoCL; bad input refused with its message and nothing changed; and the
 * ordering rule of include/hdal.h ("Work streams"): a kernel the test
 * enqueues on hdal's OpenCL queue is seen by hdal_buffer_read, and a
 * hdal_buffer_write is seen by a kernel enqueued after it. */
#include <stdint.h>
#include "dlpack_testutil.h"
#include "opencl/test_opencl.h"

#ifdef __SANITIZE_ADDRESS__
/* PoCL and its LLVM keep what they allocate compiling this test's kernel for
 * the process's life: their memory, not hdal's (tests/opencl/lsan-pocl.supp). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM\n"; }
#endif

static const DLDataType f32 = {kDLFloat, 32, 1};

/* A buffer of n floats 0, 1, 2... on d, written by hdal_buffer_write. */
static hdal_buffer *iota_buffer(hdal_device *d, int64_t n) {
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, f32, &b));
  float *v = tt_iota((size_t)n);
  ck_assert_ok(hdal_buffer_write(b, 0, v, (size_t)n * sizeof *v));
  free(v);
  return b;
}

/* Whole and by range, in and out: the bytes read back are those written. */
static void whole_and_ranges(hdal_device *d) {
  hdal_buffer *b = iota_buffer(d, 1000);
  float out[1000];
  ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
  for (int i = 0; i < 1000; i++) ck_assert_float_eq(out[i], (float)i);
  /* Elements 10..19 replaced, then read alone and with their neighbours. */
  float ten[10] = {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}, got[12];
  ck_assert_ok(hdal_buffer_write(b, 10 * sizeof(float), ten, sizeof ten));
  ck_assert_ok(hdal_buffer_read(b, 9 * sizeof(float), got, sizeof got));
  ck_assert_float_eq(got[0], 9);
  ck_assert_mem_eq(got + 1, ten, sizeof ten);
  ck_assert_float_eq(got[11], 20);
  /* A range of bytes that is no whole element; the last byte; nothing at the end. */
  unsigned char bytes[3] = {0xAB, 0xCD, 0xEF}, back[3];
  ck_assert_ok(hdal_buffer_write(b, 401, bytes, 3));
  ck_assert_ok(hdal_buffer_read(b, 401, back, 3));
  ck_assert_mem_eq(back, bytes, 3);
  ck_assert_ok(hdal_buffer_write(b, sizeof out - 1, bytes, 1));
  ck_assert_ok(hdal_buffer_read(b, sizeof out - 1, back, 1));
  ck_assert_uint_eq(back[0], 0xAB);
  ck_assert_ok(hdal_buffer_write(b, sizeof out, NULL, 0));
  ck_assert_ok(hdal_buffer_read(b, sizeof out, NULL, 0));
  /* The whole, as hdal_buffer_copy_to_host sees it. */
  float all[1000];
  ck_assert_ok(hdal_buffer_copy_to_host(b, all, sizeof all));
  ck_assert_float_eq(all[9], 9);
  ck_assert_mem_eq(all + 10, ten, sizeof ten);
  ck_assert_ok(hdal_device_synchronize(d));
  hdal_buffer_release(b);
}

START_TEST(cpu_whole_and_ranges) {
  hdal_context *ctx = test_context_with("cpu");
  whole_and_ranges(hdal_context_device(ctx, 0));
  hdal_context_destroy(ctx);
}
END_TEST

/* Each refusal says what is wrong, byte for byte, and changes nothing. */
START_TEST(bad_input_refused_nothing_changed) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *cpu = hdal_context_device(ctx, 0);
  hdal_buffer *b = iota_buffer(cpu, 4);
  float v[5] = {7, 7, 7, 7, 7}, out[5] = {5, 5, 5, 5, 5};
  ck_assert_error(hdal_buffer_write(NULL, 0, v, 4), HDAL_INVALID_ARGUMENT, "hdal_buffer_write: buffer is NULL");
  ck_assert_error(hdal_buffer_read(NULL, 0, out, 4), HDAL_INVALID_ARGUMENT, "hdal_buffer_read: buffer is NULL");
  ck_assert_error(hdal_buffer_write(b, 0, NULL, 16), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_write: src is NULL with size 16");
  ck_assert_error(hdal_buffer_read(b, 0, NULL, 16), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_read: dst is NULL with size 16");
  ck_assert_error(hdal_buffer_write(b, 0, v, 20), HDAL_OUT_OF_RANGE,
                  "hdal_buffer_write: 20 bytes at offset 0 are past the end of the buffer (16 bytes)");
  ck_assert_error(hdal_buffer_write(b, 4, v, 16), HDAL_OUT_OF_RANGE,
                  "hdal_buffer_write: 16 bytes at offset 4 are past the end of the buffer (16 bytes)");
  ck_assert_error(hdal_buffer_read(b, 17, out, 0), HDAL_OUT_OF_RANGE,
                  "hdal_buffer_read: 0 bytes at offset 17 are past the end of the buffer (16 bytes)");
  /* offset + size wraps: still past the end, and said with the numbers given. */
  ck_assert_error(hdal_buffer_read(b, 8, out, SIZE_MAX), HDAL_OUT_OF_RANGE,
                  "hdal_buffer_read: 18446744073709551615 bytes at offset 8 are past the end of the buffer (16 bytes)");
  for (int i = 0; i < 5; i++) ck_assert_float_eq(out[i], 5); /* dst untouched */
  float now[4];
  ck_assert_ok(hdal_buffer_read(b, 0, now, sizeof now));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(now[i], (float)i); /* buffer untouched */
  ck_assert_error(hdal_device_synchronize(NULL), HDAL_INVALID_ARGUMENT, "hdal_device_synchronize: device is NULL");
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* A view writes into the producer's memory; a read-only view refuses; a
 * transposed view has no byte ranges. */
START_TEST(views) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *cpu = hdal_context_device(ctx, 0);
  float *mem = tt_iota(6);
  int64_t shape[2] = {2, 3}, transposed[2] = {1, 3};
  hdal_buffer *view, *ro, *t;
  hdal_capsule *c = tt_legacy(tt_make(mem, false, 2, shape, NULL, f32, tt_cpu));
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, cpu, &tt_never, &view));
  hdal_capsule_destroy(c);
  float nine = 9;
  ck_assert_ok(hdal_buffer_write(view, 4 * sizeof(float), &nine, sizeof nine));
  ck_assert_float_eq(mem[4], 9);
  c = tt_versioned(tt_make(mem, false, 2, shape, NULL, f32, tt_cpu), DLPACK_FLAG_BITMASK_READ_ONLY);
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, cpu, &tt_never, &ro));
  hdal_capsule_destroy(c);
  ck_assert_error(hdal_buffer_write(ro, 0, &nine, sizeof nine), HDAL_FAILED_PRECONDITION,
                  "hdal_buffer_write: the buffer is read-only (a view of a tensor flagged "
                  "DLPACK_FLAG_BITMASK_READ_ONLY)");
  ck_assert_float_eq(mem[0], 0);
  float got;
  ck_assert_ok(hdal_buffer_read(ro, 4 * sizeof(float), &got, sizeof got));
  ck_assert_float_eq(got, 9);
  int64_t tshape[2] = {3, 2};
  c = tt_legacy(tt_make(mem, false, 2, tshape, transposed, f32, tt_cpu));
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, cpu, &tt_never, &t));
  hdal_capsule_destroy(c);
  const char *why = "the buffer is a view whose elements are not in row-major order in memory, so a byte range of "
                    "it is no range of its memory; hdal_buffer_copy_to_host() reads it whole, and "
                    "hdal_buffer_copy_to_device() makes a row-major copy";
  char msg[512];
  snprintf(msg, sizeof msg, "hdal_buffer_write: %s", why);
  ck_assert_error(hdal_buffer_write(t, 0, &nine, sizeof nine), HDAL_UNIMPLEMENTED, msg);
  snprintf(msg, sizeof msg, "hdal_buffer_read: %s", why);
  ck_assert_error(hdal_buffer_read(t, 0, &got, sizeof got), HDAL_UNIMPLEMENTED, msg);
  hdal_buffer_release(t);
  hdal_buffer_release(ro);
  hdal_buffer_release(view);
  free(mem);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- PoCL ---- */

static const char *scale_source = "__kernel void scale(__global float *x, float k) { x[get_global_id(0)] *= k; }";

static void enqueue_scale(cl_command_queue q, cl_kernel k, cl_mem m, float by, size_t n) {
  ck_assert_cl(clSetKernelArg(k, 0, sizeof m, &m));
  ck_assert_cl(clSetKernelArg(k, 1, sizeof by, &by));
  ck_assert_cl(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
}

START_TEST(opencl_whole_and_ranges) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  whole_and_ranges(d);
  hdal_context_destroy(ctx);
}
END_TEST

/* The newcomer's job: host -> device, an own kernel on hdal's queue, device ->
 * host, with no OpenCL call to move bytes and no clFinish of the test's own. */
START_TEST(opencl_kernel_on_the_work_queue_is_ordered) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  enum { N = 1000000 };
  hdal_buffer *b = iota_buffer(d, N);
  intptr_t s;
  ck_assert_ok(hdal_device_work_stream(d, &s));
  cl_command_queue q = (cl_command_queue)s;
  cl_program prog;
  cl_kernel k = opencl_build_kernel(d, scale_source, "scale", &prog);
  enqueue_scale(q, k, hdal_buffer_data(b), 2.0f, N); /* not waited for: hdal's read comes after it */
  float *out = malloc(N * sizeof *out);
  ck_assert_ok(hdal_buffer_read(b, 0, out, N * sizeof *out));
  for (int i = 0; i < N; i += 997) ck_assert_float_eq(out[i], 2.0f * (float)i);
  ck_assert_float_eq(out[N - 1], 2.0f * (float)(N - 1));
  /* A write, then a kernel after it, then hdal_device_synchronize and the memory read by OpenCL itself. */
  float three[4] = {3, 3, 3, 3};
  ck_assert_ok(hdal_buffer_write(b, 0, three, sizeof three));
  enqueue_scale(q, k, hdal_buffer_data(b), 10.0f, 4);
  ck_assert_ok(hdal_device_synchronize(d));
  float seen[5];
  ck_assert_cl(clEnqueueReadBuffer(q, hdal_buffer_data(b), CL_TRUE, 0, sizeof seen, seen, 0, NULL, NULL));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(seen[i], 30);
  ck_assert_float_eq(seen[4], 8); /* 4, doubled by the first kernel alone */
  clReleaseKernel(k);
  clReleaseProgram(prog);
  free(out);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

/* A device whose queue was never made has nothing to wait for. */
START_TEST(opencl_synchronize_before_any_work) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  ck_assert_ok(hdal_device_synchronize(d));
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("transfer");
  TCase *tc = tcase_create("transfer");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cpu_whole_and_ranges);
  tcase_add_test(tc, bad_input_refused_nothing_changed);
  tcase_add_test(tc, views);
  if (opencl_have_pocl()) {
    tcase_add_test(tc, opencl_whole_and_ranges);
    tcase_add_test(tc, opencl_kernel_on_the_work_queue_is_ordered);
    tcase_add_test(tc, opencl_synchronize_before_any_work);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
