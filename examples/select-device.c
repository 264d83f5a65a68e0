/* SPDX-License-Identifier: BSD-3-Clause */
/* Example 2: pick the OpenCL device, and keep the host.
 *
 * A device selector keeps the devices it names (docs/reference.md, "Choosing
 * devices").  "opencl:0" alone would keep only OpenCL's device 0 and drop the
 * CPU device, which host memory (DLPack's kDLCPU) needs: name the host too,
 * as "cpu:*;opencl:0".  Another selector can be given as the first argument
 * ("cpu:*;opencl:gpu", "cpu:*;opencl:*").  HDAL_DEVICE_SELECTOR does the same
 * for a program that passes no selector of its own.
 *
 *   cc select-device.c $(pkg-config --cflags --libs hdal) -o select-device
 *   ./select-device ['cpu:*;opencl:0'] */
#include <hdal.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
  opts.device_selector = argc > 1 ? argv[1] : "cpu:*;opencl:0";
  hdal_context *ctx;
  hdal_error *err = hdal_context_create(&opts, &ctx);
  if (err) { /* a malformed selector: the message names the term and what is wrong */
    fprintf(stderr, "select-device: %s\n", hdal_error_message(err));
    hdal_error_destroy(err);
    return 1;
  }

  /* The first OpenCL device on which hdal serves buffers in this process
   * (runtime class "pjrt"); the host device, for host memory. */
  hdal_device *opencl = NULL, *host = NULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_runtime_class(d) != HDAL_RUNTIME_PJRT) continue;
    if (!opencl && strcmp(hdal_device_platform(d), "opencl") == 0) opencl = d;
    if (!host && strcmp(hdal_device_platform(d), "cpu") == 0) host = d;
  }
  printf("selector \"%s\": %zu devices\n", opts.device_selector, hdal_context_device_count(ctx));
  if (host) printf("  host:   device %d, %s\n", hdal_device_id(host), hdal_device_kind(host));
  if (!opencl) {
    /* Not an error of hdal: the OpenCL backend's status says why. */
    for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
      if (strcmp(hdal_context_backend_name(ctx, i), "opencl") == 0)
        fprintf(stderr, "select-device: no OpenCL device: %s\n", hdal_context_backend_status(ctx, i));
    hdal_context_destroy(ctx);
    return 2;
  }
  /* Attributes say more (hdal-ls -a lists them): the OpenCL platform, to
   * pick a device by platform with strcmp() in the loop above. */
  const char *platform = hdal_device_attribute_get(opencl, "opencl_platform");
  DLDevice dl = hdal_device_dlpack_device(opencl);
  printf("  OpenCL: device %d, %s (DLPack %s, %d), platform \"%s\"\n", hdal_device_id(opencl),
         hdal_device_kind(opencl), hdal_dlpack_device_type_name(dl.device_type), (int)dl.device_id,
         platform ? platform : "?");
  hdal_context_destroy(ctx);
  return 0;
}
