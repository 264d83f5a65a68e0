/* SPDX-License-Identifier: BSD-3-Clause */
/* A program that links libhdal, made setuid root by tests/security/setuid.sh (as test_setuid_probe) and run by
 * an unprivileged user, who controls its environment.
 *   probe euid     prints "euid=N" (can this file system run setuid programs?)
 *   probe env      a context with the defaults: HDAL_BACKENDS, HDAL_BACKEND_PATH
 *                  and HDAL_DEBUG are the user's to set
 *   probe cuda     backends "cpu,cuda" from the build tree's CUDA module, which
 *                  opens HDAL_CUDA_LIBRARY if it trusts it
 * Prints "euid=N", then "name: status" per backend. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <hdal.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "env";
  printf("euid=%d\n", (int)geteuid());
  if (!strcmp(mode, "euid")) return 0;
  hdal_context_options o = {.struct_size = sizeof o};
  if (!strcmp(mode, "cuda")) {
    o.backends = "cpu,cuda";
    o.backend_path = HDAL_PROBE_CUDA_DIR; /* the program's own choice: trusted */
  }
  hdal_context *ctx;
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) {
    printf("error: %s\n", hdal_error_message(e));
    hdal_error_destroy(e);
    return 1;
  }
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    printf("%s: %s\n", hdal_context_backend_name(ctx, i), hdal_context_backend_status(ctx, i));
  hdal_context_destroy(ctx);
  return 0;
}
