/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/new-backend.sh: DLPack routing to the template backend, and bytes through its buffers. */
#include <stdio.h>
#include <hdal.h>

static int failed(hdal_error *e, const char *what) {
  if (!e) return 0;
  printf("%s: %s\n", what, hdal_error_message(e));
  hdal_error_destroy(e);
  return 1;
}

int main(void) {
  hdal_context *ctx;
  hdal_device *d;
  hdal_buffer *b, *back;
  hdal_capsule *capsule;
  if (failed(hdal_context_create(NULL, &ctx), "hdal_context_create")) return 1;
  if (failed(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLExtDev, 1}, &d), "kDLExtDev:1")) return 1;
  printf("kDLExtDev:1 -> %s %d (%s)\n", hdal_device_platform(d), hdal_device_local_hardware_id(d), hdal_device_kind(d));
  int64_t shape[1] = {4};
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  if (failed(hdal_buffer_allocate(d, 1, shape, (DLDataType){kDLFloat, 32, 1}, &b), "allocate") ||
      failed(hdal_buffer_write(b, 0, in, sizeof in), "write") || failed(hdal_buffer_read(b, 0, out, sizeof out), "read"))
    return 1;
  printf("bytes: %g %g %g %g\n", out[0], out[1], out[2], out[3]);
  if (failed(hdal_buffer_to_dlpack(b, NULL, &capsule), "export") ||
      failed(hdal_buffer_from_dlpack(ctx, capsule, NULL, NULL, &back), "import"))
    return 1;
  hdal_device *to = hdal_buffer_device(back);
  printf("import of kDLExtDev:1 -> %s %d\n", hdal_device_platform(to), hdal_device_local_hardware_id(to));
  hdal_capsule_destroy(capsule);
  hdal_buffer_release(back);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
  return 0;
}
