/* SPDX-License-Identifier: BSD-3-Clause */
/* Example 1: list the devices hdal finds, and what each backend did.
 *
 * Build against an installed hdal:
 *   cc list-devices.c $(pkg-config --cflags --libs hdal) -o list-devices
 * or with CMake (cmake/CMakeLists.txt).  Run it with no arguments: every
 * backend hdal has runs; HDAL_BACKENDS and HDAL_DEVICE_SELECTOR narrow it
 * down (README.md, "Environment"). */
#include <hdal.h>
#include <stdio.h>

int main(void) {
  /* NULL options: every backend, every device (or what HDAL_BACKENDS and
   * HDAL_DEVICE_SELECTOR say).  Each fallible call returns an hdal_error,
   * NULL on success, that the caller destroys. */
  hdal_context *ctx;
  hdal_error *err = hdal_context_create(NULL, &ctx);
  if (err) {
    fprintf(stderr, "list-devices: %s\n", hdal_error_message(err));
    hdal_error_destroy(err);
    return 1;
  }

  printf("hdal %s: %zu devices\n", hdal_version_string(), hdal_context_device_count(ctx));
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    /* Devices belong to the context: never freed by the caller. */
    const hdal_device *d = hdal_context_device(ctx, i);
    DLDevice dl = hdal_device_dlpack_device(d);
    printf("  device %d: %-6s %s, %llu MiB, DLPack (%s, %d), %s\n", hdal_device_id(d), hdal_device_platform(d),
           hdal_device_kind(d), (unsigned long long)(hdal_device_memory_bytes(d) >> 20),
           hdal_dlpack_device_type_name(dl.device_type), (int)dl.device_id,
           hdal_runtime_class_name(hdal_device_runtime_class(d)));
  }

  /* A backend that is missing or failed does not fail the context: its
   * status says why ("unavailable: module hdal_cuda.so not found ..."). */
  printf("backends:\n");
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    printf("  %-10s %s\n", hdal_context_backend_name(ctx, i), hdal_context_backend_status(ctx, i));

  hdal_context_destroy(ctx);
  return 0;
}
