/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_buffer_allocate and hdal_device_work_stream (docs/dlpack.md, "C
 * exchange API"): what DLPack's exchange API asks of a producer, on the CPU
 * and on PoCL (the OpenCL work stream is hdal's queue in its own context);
 * bad input refused with its message, nothing allocated. */
#include <stdint.h>
#include "opencl/test_opencl.h"

static const DLDataType f32 = {kDLFloat, 32, 1};

static uint64_t in_use(hdal_device *d) {
  hdal_memory_stats s = {.struct_size = sizeof s};
  ck_assert_ok(hdal_device_memory_stats(d, &s));
  return s.bytes_in_use;
}

START_TEST(cpu_buffer_allocated_compact_and_writable) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *cpu = hdal_context_device(ctx, 0);
  int64_t shape[2] = {3, 4};
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(cpu, 2, shape, f32, &b));
  ck_assert_ptr_eq(hdal_buffer_device(b), cpu);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert(!hdal_buffer_is_read_only(b));
  ck_assert_int_eq(hdal_buffer_ndim(b), 2);
  ck_assert_int_eq(hdal_buffer_shape(b)[0], 3);
  ck_assert_int_eq(hdal_buffer_shape(b)[1], 4);
  ck_assert_int_eq(hdal_buffer_strides(b)[0], 4);
  ck_assert_int_eq(hdal_buffer_strides(b)[1], 1);
  ck_assert_uint_eq(in_use(cpu), 48);
  float *p = hdal_buffer_data(b);
  for (int i = 0; i < 12; i++) p[i] = (float)i;
  float back[12];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, sizeof back));
  ck_assert_mem_eq(back, p, sizeof back);
  /* An export of it is a DLPack 1.3 tensor with strides. */
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 3}};
  hdal_capsule *c;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &o, &c));
  DLManagedTensorVersioned *m = hdal_capsule_pointer(c);
  ck_assert_uint_eq(m->version.major, 1);
  ck_assert_uint_eq(m->version.minor, 3);
  ck_assert_ptr_eq(m->dl_tensor.data, p);
  ck_assert_ptr_nonnull(m->dl_tensor.strides);
  ck_assert_int_eq(m->dl_tensor.strides[0], 4);
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_uint_eq(in_use(cpu), 0);
  /* A scalar and an empty tensor: one element, and nothing allocated. */
  ck_assert_ok(hdal_buffer_allocate(cpu, 0, NULL, (DLDataType){kDLInt, 64, 1}, &b));
  ck_assert_uint_eq(in_use(cpu), 8);
  hdal_buffer_release(b);
  int64_t empty[2] = {0, 5};
  ck_assert_ok(hdal_buffer_allocate(cpu, 2, empty, f32, &b));
  ck_assert_uint_eq(in_use(cpu), 0);
  ck_assert_int_eq(hdal_buffer_shape(b)[1], 5);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(bad_allocations_refused) {
  hdal_context *ctx = test_context_with("cpu,ifrttest");
  hdal_device *cpu = hdal_context_device(ctx, 0), *ifrt = test_first_device(ctx, "ifrttest");
  ck_assert_ptr_nonnull(ifrt);
  int64_t shape[2] = {3, 4}, negative[2] = {3, -4}, huge[2] = {INT64_MAX, 2};
  hdal_buffer *b = (hdal_buffer *)1;
  ck_assert_error(hdal_buffer_allocate(cpu, 2, shape, f32, NULL), HDAL_INVALID_ARGUMENT, "hdal_buffer_allocate: out is NULL");
  ck_assert_error(hdal_buffer_allocate(NULL, 2, shape, f32, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_allocate: device is NULL");
  ck_assert_ptr_null(b);
  ck_assert_error(hdal_buffer_allocate(cpu, -1, shape, f32, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_allocate: ndim must be nonnegative, got -1");
  ck_assert_error(hdal_buffer_allocate(cpu, 2, NULL, f32, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor has 2 dimensions but a NULL shape");
  ck_assert_error(hdal_buffer_allocate(cpu, 2, negative, f32, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor has a negative dimension: shape[1] is -4");
  ck_assert_error(hdal_buffer_allocate(cpu, 2, huge, f32, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor's element count overflows: dimensions were [9223372036854775807,2]");
  ck_assert_error(hdal_buffer_allocate(cpu, 2, shape, ((DLDataType){kDLFloat, 13, 1}), &b), HDAL_UNIMPLEMENTED,
                  "Invalid or unsupported DLPack float width: 13 bits");
  ck_assert_error(hdal_buffer_allocate(ifrt, 2, shape, f32, &b), HDAL_FAILED_PRECONDITION,
                  "This operation is implemented for a PjRt-compatible backend only.");
  ck_assert_ptr_null(b);
  ck_assert_uint_eq(in_use(cpu), 0);
  intptr_t s = 5;
  ck_assert_error(hdal_device_work_stream(NULL, &s), HDAL_INVALID_ARGUMENT,
                  "hdal_device_work_stream: device or stream is NULL");
  ck_assert_int_eq(s, 0);
  ck_assert_error(hdal_device_work_stream(cpu, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_device_work_stream: device or stream is NULL");
  ck_assert_error(hdal_device_work_stream(ifrt, &s), HDAL_FAILED_PRECONDITION,
                  "This operation is implemented for a PjRt-compatible backend only.");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(allocation_past_the_pool_limit_refused) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .memory_pool_limit = "100"};
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  hdal_device *cpu = hdal_context_device(ctx, 0);
  int64_t n = 64;
  hdal_buffer *a, *b;
  ck_assert_ok(hdal_buffer_allocate(cpu, 1, &n, (DLDataType){kDLUInt, 8, 1}, &a));
  hdal_error *e = hdal_buffer_allocate(cpu, 1, &n, (DLDataType){kDLUInt, 8, 1}, &b);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(hdal_error_code(e), HDAL_RESOURCE_EXHAUSTED);
  hdal_error_destroy(e);
  ck_assert_uint_eq(in_use(cpu), 64);
  hdal_buffer_release(a);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(cpu_work_stream_is_none) {
  hdal_context *ctx = test_context_with("cpu");
  intptr_t s = 5;
  ck_assert_ok(hdal_device_work_stream(hdal_context_device(ctx, 0), &s));
  ck_assert_int_eq(s, 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* The device a DLPack device names, as an export's dl_device finds it. */
START_TEST(device_for_a_dlpack_device) {
  hdal_context *ctx = test_context_with("cpu");
  hdal_device *d = NULL, *cpu = hdal_context_device(ctx, 0);
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 0}, &d));
  ck_assert_ptr_eq(d, cpu);
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDAHost, 0}, &d)); /* host memory */
  ck_assert_ptr_eq(d, cpu);
  d = cpu;
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLROCM, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "No hdal backend serves DLPack device type kDLROCM (10), device id 0");
  ck_assert_ptr_null(d);
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 3}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCPU, 3) is out of range: the CPU backend's devices are all (kDLCPU, 0)");
  ck_assert_error(hdal_context_device_for_dlpack(NULL, (DLDevice){kDLCPU, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "hdal_context_device_for_dlpack: context is NULL");
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 0}, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_context_device_for_dlpack: out is NULL");
  hdal_context_destroy(ctx);
}
END_TEST

/* PoCL: memory of hdal's own context, and its queue in that context, the same on every call. */
START_TEST(opencl_allocation_and_work_queue) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  hdal_device *found;
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, hdal_device_dlpack_device(d), &found));
  ck_assert_ptr_eq(found, d);
  int64_t shape[1] = {16};
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, shape, f32, &b));
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_uint_eq(in_use(d), 64);
  cl_mem mem = hdal_buffer_data(b);
  ck_assert_ptr_nonnull(mem);
  cl_context mem_ctx, queue_ctx;
  ck_assert_cl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mem_ctx, &mem_ctx, NULL));
  intptr_t s = 0, again = 0;
  ck_assert_ok(hdal_device_work_stream(d, &s));
  ck_assert_ok(hdal_device_work_stream(d, &again));
  ck_assert(s != 0);
  ck_assert_int_eq(s, again);
  cl_command_queue q = (cl_command_queue)s;
  ck_assert_cl(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof queue_ctx, &queue_ctx, NULL));
  ck_assert_ptr_eq(queue_ctx, mem_ctx);
  /* The queue works: a write on it, read back through hdal. */
  float in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = (float)(i * 3);
  ck_assert_cl(clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, sizeof in, in, 0, NULL, NULL));
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, sizeof out));
  ck_assert_mem_eq(out, in, sizeof in);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("allocate");
  TCase *tc = tcase_create("allocate");
  tcase_add_test(tc, cpu_buffer_allocated_compact_and_writable);
  tcase_add_test(tc, bad_allocations_refused);
  tcase_add_test(tc, allocation_past_the_pool_limit_refused);
  tcase_add_test(tc, cpu_work_stream_is_none);
  tcase_add_test(tc, device_for_a_dlpack_device);
  if (opencl_have_pocl()) tcase_add_test(tc, opencl_allocation_and_work_queue);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
