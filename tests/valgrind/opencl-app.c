/* SPDX-License-Identifier: BSD-3-Clause */
/* An OpenCL application as a user writes one (issue 38): hdal picks the
 * OpenCL device and allocates a buffer; the application runs its own kernel
 * on hdal's cl_mem, on hdal's work stream (the device's queue), and reads the
 * result back with hdal_buffer_copy_to_host.  installcheck runs it under
 * valgrind with the installed suppressions only (docs/hardening.md). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <hdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static int fail(hdal_error *err) {
  fprintf(stderr, "opencl-app: %s\n", hdal_error_message(err));
  hdal_error_destroy(err);
  return 1;
}

int main(void) {
  hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
  opts.backends = "cpu,opencl";
  hdal_context *ctx;
  hdal_error *err = hdal_context_create(&opts, &ctx);
  if (err) return fail(err);
  hdal_device *dev = NULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx) && !dev; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (strcmp(hdal_device_platform(d), "opencl") == 0 && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT) dev = d;
  }
  if (!dev) {
    fprintf(stderr, "opencl-app: no OpenCL device\n");
    hdal_context_destroy(ctx);
    return 77;
  }
  int64_t shape[1] = {N};
  DLDataType f32 = {kDLFloat, 32, 1};
  hdal_buffer *buf;
  intptr_t stream;
  if ((err = hdal_buffer_allocate(dev, 1, shape, f32, &buf))) return fail(err);
  if ((err = hdal_device_work_stream(dev, &stream))) return fail(err);
  cl_command_queue q = (cl_command_queue)stream;
  cl_mem mem = (cl_mem)hdal_buffer_data(buf);
  cl_context clctx;
  cl_device_id cldev;
  cl_int rc = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof clctx, &clctx, NULL);
  if (rc == CL_SUCCESS) rc = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof cldev, &cldev, NULL);
  const char *src = "__kernel void fill(__global float *x) { size_t i = get_global_id(0); x[i] = 2.0f * i; }";
  cl_program prog = rc == CL_SUCCESS ? clCreateProgramWithSource(clctx, 1, &src, NULL, &rc) : NULL;
  if (rc == CL_SUCCESS) rc = clBuildProgram(prog, 1, &cldev, "", NULL, NULL);
  cl_kernel k = rc == CL_SUCCESS ? clCreateKernel(prog, "fill", &rc) : NULL;
  if (rc == CL_SUCCESS) rc = clSetKernelArg(k, 0, sizeof mem, &mem);
  size_t global = N;
  if (rc == CL_SUCCESS) rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (rc == CL_SUCCESS) rc = clFinish(q);
  if (rc != CL_SUCCESS) {
    fprintf(stderr, "opencl-app: OpenCL error %d\n", (int)rc);
    return 1;
  }
  float *host = malloc(N * sizeof *host);
  if (!host) return 1;
  if ((err = hdal_buffer_copy_to_host(buf, host, N * sizeof *host))) return fail(err);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += host[i] != 2.0f * i;
  printf("opencl-app: %s: %d of %d elements right\n", hdal_device_kind(dev), N - bad, N);
  free(host);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  hdal_buffer_release(buf);
  hdal_context_destroy(ctx);
  return bad ? 1 : 0;
}
