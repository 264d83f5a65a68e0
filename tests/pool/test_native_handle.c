/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_device_native_handle (include/hdal.h, "Native handles"): the refusals,
 * each with its message (NULL arguments, a kind that is none, a kind the
 * device's backend has not, the CPU's none, an IFRT-native device, a device
 * of another process); and on PoCL, hdal's OpenCL objects, which agree with
 * each other and with hdal's buffers and work stream, and on which the test
 * builds and runs a kernel of its own, read back with hdal_buffer_read.  The
 * GPU APIs' handles are checked against their fakes in test_cuda_buffers,
 * test_rocm_buffers and test_levelzero_buffers; a fork() child's refusal in
 * test_dispatch. */
#include <stdint.h>
#include "opencl/test_opencl.h"

#ifdef __SANITIZE_ADDRESS__
/* PoCL and its LLVM keep what they allocate compiling this test's kernel for
 * the process's life: their memory, not hdal's (tests/opencl/lsan-pocl.supp). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM\n"; }
#endif

START_TEST(cpu_has_none_and_bad_input_is_refused) {
  hdal_context *ctx = test_context_with("cpu,ifrttest");
  hdal_device *cpu = hdal_context_device(ctx, 0), *ifrt = test_first_device(ctx, "ifrttest");
  ck_assert_ptr_nonnull(ifrt);
  intptr_t h = 5;
  ck_assert_error(hdal_device_native_handle(NULL, HDAL_NATIVE_OPENCL_CONTEXT, &h), HDAL_INVALID_ARGUMENT,
                  "hdal_device_native_handle: device is NULL");
  ck_assert_int_eq(h, 0);
  ck_assert_error(hdal_device_native_handle(cpu, HDAL_NATIVE_OPENCL_CONTEXT, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_device_native_handle: out is NULL");
  h = 5;
  ck_assert_error(hdal_device_native_handle(cpu, (hdal_native_handle)99, &h), HDAL_INVALID_ARGUMENT,
                  "hdal_device_native_handle: unknown native handle kind 99");
  ck_assert_int_eq(h, 0);
  ck_assert_error(hdal_device_native_handle(cpu, (hdal_native_handle)0, &h), HDAL_INVALID_ARGUMENT,
                  "hdal_device_native_handle: unknown native handle kind 0");
  ck_assert_error(hdal_device_native_handle(cpu, (hdal_native_handle)-1, &h), HDAL_INVALID_ARGUMENT,
                  "hdal_device_native_handle: unknown native handle kind -1");
  /* The CPU has no handle of any kind. */
  ck_assert_int_eq(test_assert_native_refused(cpu, 0, 0), 12);
  /* An IFRT-native device is refused as by every buffer call, whatever the kind. */
  hdal_native_handle k;
  const char *name;
  for (size_t i = 0; test_native_kind(i, &k, &name); i++) {
    h = 5;
    ck_assert_error(hdal_device_native_handle(ifrt, k, &h), HDAL_FAILED_PRECONDITION,
                    "This operation is implemented for a PjRt-compatible backend only.");
    ck_assert_int_eq(h, 0);
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* A device of another process (hdal_context_add_process) has no handle here. */
START_TEST(a_device_of_another_process_is_refused) {
  hdal_context *ctx = test_context_with("cpu");
  test_add_process_copy(ctx, 1);
  hdal_device *remote = hdal_context_device(ctx, 1);
  ck_assert(!hdal_device_is_addressable(remote));
  intptr_t h = 5;
  ck_assert_error(hdal_device_native_handle(remote, HDAL_NATIVE_OPENCL_CONTEXT, &h), HDAL_FAILED_PRECONDITION,
                  "hdal_device_native_handle: device 1 (cpu) is not addressable by the current process");
  ck_assert_int_eq(h, 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- PoCL ---- */

static const char *axpb_source =
    "__kernel void axpb(__global float *y, float a, float b) { size_t i = get_global_id(0); y[i] = a * y[i] + b; }";

/* The four objects agree with each other, with the work stream and with hdal's memory; they are the same on
 * every call; a kernel of the test's own, built on them, runs on hdal's buffer, and hdal_buffer_read sees its
 * result without a clFinish of the test's. */
START_TEST(opencl_handles_run_an_own_kernel) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  cl_platform_id platform = (cl_platform_id)opencl_native(d, HDAL_NATIVE_OPENCL_PLATFORM);
  cl_device_id id = (cl_device_id)opencl_native(d, HDAL_NATIVE_OPENCL_DEVICE);
  cl_context context = (cl_context)opencl_native(d, HDAL_NATIVE_OPENCL_CONTEXT);
  cl_command_queue queue = (cl_command_queue)opencl_native(d, HDAL_NATIVE_OPENCL_QUEUE);
  ck_assert_int_eq(opencl_native(d, HDAL_NATIVE_OPENCL_CONTEXT), (intptr_t)context); /* the same objects again */
  ck_assert_int_eq(opencl_native(d, HDAL_NATIVE_OPENCL_QUEUE), (intptr_t)queue);
  intptr_t stream = 0;
  ck_assert_ok(hdal_device_work_stream(d, &stream));
  ck_assert_int_eq(stream, (intptr_t)queue);
  /* What OpenCL says of them. */
  cl_context queue_context;
  cl_device_id queue_device, context_devices[2];
  cl_platform_id device_platform;
  size_t size = 0;
  ck_assert_cl(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context, NULL));
  ck_assert_cl(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, NULL));
  ck_assert_ptr_eq(queue_context, context);
  ck_assert_ptr_eq(queue_device, id);
  ck_assert_cl(clGetDeviceInfo(id, CL_DEVICE_PLATFORM, sizeof device_platform, &device_platform, NULL));
  ck_assert_ptr_eq(device_platform, platform);
  ck_assert_cl(clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof context_devices, context_devices, &size));
  ck_assert_uint_eq(size, sizeof(cl_device_id));
  ck_assert_ptr_eq(context_devices[0], id);
  /* hdal's buffer lives in that context. */
  enum { N = 4096 };
  int64_t n = N;
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_allocate(d, 1, &n, (DLDataType){kDLFloat, 32, 1}, &b));
  cl_mem mem = hdal_buffer_data(b);
  cl_context mem_context;
  ck_assert_cl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mem_context, &mem_context, NULL));
  ck_assert_ptr_eq(mem_context, context);
  /* The test's own kernel: host -> device (hdal), y = 3y + 1 (OpenCL, on hdal's queue), device -> host (hdal). */
  float *host = malloc(N * sizeof *host);
  for (int i = 0; i < N; i++) host[i] = (float)i;
  ck_assert_ok(hdal_buffer_write(b, 0, host, N * sizeof *host));
  cl_program prog;
  cl_kernel k = opencl_build_kernel(d, axpb_source, "axpb", &prog);
  float a = 3.0f, c = 1.0f;
  size_t global = N;
  ck_assert_cl(clSetKernelArg(k, 0, sizeof mem, &mem));
  ck_assert_cl(clSetKernelArg(k, 1, sizeof a, &a));
  ck_assert_cl(clSetKernelArg(k, 2, sizeof c, &c));
  ck_assert_cl(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  memset(host, 0, N * sizeof *host);
  ck_assert_ok(hdal_buffer_read(b, 0, host, N * sizeof *host));
  for (int i = 0; i < N; i++) ck_assert_float_eq(host[i], 3.0f * (float)i + 1.0f);
  /* The kinds of the other APIs are refused, naming the device. */
  ck_assert_int_eq(test_assert_native_refused(d, HDAL_NATIVE_OPENCL_PLATFORM, HDAL_NATIVE_OPENCL_QUEUE), 8);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  free(host);
  hdal_buffer_release(b);
  /* The context outlives hdal's while the application holds a reference of its own (clRetainContext). */
  ck_assert_cl(clRetainContext(context));
  hdal_context_destroy(ctx);
  ck_assert_cl(clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof context_devices, context_devices, &size));
  ck_assert_ptr_eq(context_devices[0], id);
  ck_assert_cl(clReleaseContext(context));
}
END_TEST

/* The context and the queue are made on first use, by this call as by any other. */
START_TEST(opencl_handles_made_on_first_use) {
  hdal_device *d;
  hdal_context *ctx = opencl_pocl_context(&d);
  cl_command_queue queue = (cl_command_queue)opencl_native(d, HDAL_NATIVE_OPENCL_QUEUE);
  cl_context context = (cl_context)opencl_native(d, HDAL_NATIVE_OPENCL_CONTEXT), queue_context;
  ck_assert_cl(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context, NULL));
  ck_assert_ptr_eq(queue_context, context);
  ck_assert_ok(hdal_device_synchronize(d));
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("native_handle");
  TCase *tc = tcase_create("native_handle");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cpu_has_none_and_bad_input_is_refused);
  tcase_add_test(tc, a_device_of_another_process_is_refused);
  if (opencl_have_pocl()) {
    tcase_add_test(tc, opencl_handles_run_an_own_kernel);
    tcase_add_test(tc, opencl_handles_made_on_first_use);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
