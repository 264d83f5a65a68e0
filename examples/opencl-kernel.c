/* SPDX-License-Identifier: BSD-3-Clause */
/* Example 3: host -> device -> your own OpenCL kernel -> host.
 *
 * One million floats go from a host array into a buffer hdal allocates on the
 * OpenCL device (hdal_buffer_write); a kernel of this program, built from
 * source in hdal's own OpenCL context (the device's native handles), runs on
 * that buffer's cl_mem on hdal's command queue (the device's work stream);
 * the result comes back with hdal_buffer_read and is checked.  No DLPack
 * tensor is built by hand.
 *
 *   cc opencl-kernel.c $(pkg-config --cflags --libs hdal) -lOpenCL -o opencl-kernel
 *
 * The ordering rule (hdal.h, "Work streams"; docs/reference.md): hdal's transfers
 * go to the work stream and are complete when their call returns, so a kernel
 * enqueued on that queue after hdal_buffer_write sees the data, and
 * hdal_buffer_read after the kernel sees its result. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <hdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000000

/* y[i] = a * y[i] + b, in place. */
static const char *kernel_source =
    "__kernel void axpb(__global float *y, float a, float b) {\n"
    "  size_t i = get_global_id(0);\n"
    "  y[i] = a * y[i] + b;\n"
    "}\n";

/* Prints an hdal error, destroys it, and says the program failed. */
static int hdal_failed(const char *what, hdal_error *err) {
  fprintf(stderr, "opencl-kernel: %s: %s\n", what, hdal_error_message(err));
  hdal_error_destroy(err);
  return 1;
}

int main(void) {
  int rc = 1;
  hdal_context *ctx = NULL;
  hdal_buffer *buf = NULL;
  cl_program prog = NULL;
  cl_kernel kernel = NULL;
  float *host = malloc(N * sizeof *host);
  if (!host) return 1;

  /* The OpenCL device, keeping the host (example 2). */
  hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
  opts.device_selector = "cpu:*;opencl:0";
  hdal_error *err = hdal_context_create(&opts, &ctx);
  if (err) { free(host); return hdal_failed("hdal_context_create", err); }
  hdal_device *dev = NULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx) && !dev; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (strcmp(hdal_device_platform(d), "opencl") == 0 && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT) dev = d;
  }
  if (!dev) {
    fprintf(stderr, "opencl-kernel: no OpenCL device (hdal-ls says why)\n");
    rc = 2;
    goto out;
  }

  /* Host -> device: a buffer of N floats, then the host array written into it, whole. */
  const int64_t shape[1] = {N};
  const DLDataType f32 = {kDLFloat, 32, 1};
  for (int i = 0; i < N; i++) host[i] = (float)(i % 1000);
  if ((err = hdal_buffer_allocate(dev, 1, shape, f32, &buf))) { rc = hdal_failed("hdal_buffer_allocate", err); goto out; }
  if ((err = hdal_buffer_write(buf, 0, host, N * sizeof *host))) { rc = hdal_failed("hdal_buffer_write", err); goto out; }

  /* hdal's OpenCL objects (hdal_device_native_handle): its context on the
   * device, the device, and the device's queue, which is the work stream;
   * owned by hdal, valid while the context lives, never released here.  The
   * buffer's cl_mem, in that context, is owned by the buffer. */
  intptr_t handle[3];
  static const hdal_native_handle kinds[3] = {HDAL_NATIVE_OPENCL_CONTEXT, HDAL_NATIVE_OPENCL_DEVICE,
                                              HDAL_NATIVE_OPENCL_QUEUE};
  for (int i = 0; i < 3; i++)
    if ((err = hdal_device_native_handle(dev, kinds[i], &handle[i]))) {
      rc = hdal_failed("hdal_device_native_handle", err);
      goto out;
    }
  cl_context clctx = (cl_context)handle[0];
  cl_device_id cldev = (cl_device_id)handle[1];
  cl_command_queue queue = (cl_command_queue)handle[2];
  cl_mem mem = (cl_mem)hdal_buffer_data(buf);

  /* The program's own kernel, built from source, on hdal's buffer and queue. */
  cl_int cl;
  prog = clCreateProgramWithSource(clctx, 1, &kernel_source, NULL, &cl);
  if (cl == CL_SUCCESS) cl = clBuildProgram(prog, 1, &cldev, "", NULL, NULL);
  if (cl == CL_SUCCESS) kernel = clCreateKernel(prog, "axpb", &cl);
  const float a = 2.0f, b = 1.0f;
  if (cl == CL_SUCCESS) cl = clSetKernelArg(kernel, 0, sizeof mem, &mem);
  if (cl == CL_SUCCESS) cl = clSetKernelArg(kernel, 1, sizeof a, &a);
  if (cl == CL_SUCCESS) cl = clSetKernelArg(kernel, 2, sizeof b, &b);
  size_t global = N;
  if (cl == CL_SUCCESS) cl = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (cl != CL_SUCCESS) {
    fprintf(stderr, "opencl-kernel: OpenCL error %d\n", (int)cl);
    goto out;
  }
  /* Not needed before hdal_buffer_read (which waits for the kernel), but
   * where a program wants the device idle: it reports a failed kernel. */
  if ((err = hdal_device_synchronize(dev))) { rc = hdal_failed("hdal_device_synchronize", err); goto out; }

  /* Device -> host: the whole buffer, then a byte range (the last 4 floats). */
  memset(host, 0, N * sizeof *host);
  if ((err = hdal_buffer_read(buf, 0, host, N * sizeof *host))) { rc = hdal_failed("hdal_buffer_read", err); goto out; }
  float tail[4];
  if ((err = hdal_buffer_read(buf, (N - 4) * sizeof(float), tail, sizeof tail))) {
    rc = hdal_failed("hdal_buffer_read", err);
    goto out;
  }
  long wrong = 0;
  for (int i = 0; i < N; i++) wrong += host[i] != a * (float)(i % 1000) + b;
  for (int i = 0; i < 4; i++) wrong += tail[i] != host[N - 4 + i];
  printf("opencl-kernel: %s: %d floats, y = %g * x + %g: y[0] = %g, y[999] = %g, y[%d] = %g: %s\n",
         hdal_device_kind(dev), N, a, b, host[0], host[999], N - 1, tail[3], wrong ? "WRONG" : "all right");
  rc = wrong ? 1 : 0;

out:
  if (kernel) clReleaseKernel(kernel);
  if (prog) clReleaseProgram(prog);
  hdal_buffer_release(buf);
  hdal_context_destroy(ctx);
  free(host);
  return rc;
}
