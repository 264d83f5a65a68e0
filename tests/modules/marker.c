/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module for tests/security/setuid.sh: loading it is what must not happen in
 * a setuid program.  Its constructor writes the effective user id to the file
 * HDAL_TEST_MARKER names; as a backend it lists nothing.  The same file serves
 * as a "CUDA driver" (HDAL_CUDA_LIBRARY): the constructor runs at dlopen. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <hdal/backend.h>

__attribute__((constructor)) static void marker_loaded(void) {
  const char *file = getenv("HDAL_TEST_MARKER");
  FILE *f = file ? fopen(file, "w") : NULL;
  if (!f) return;
  fprintf(f, "loaded with euid %d\n", (int)geteuid());
  fclose(f);
}

static hdal_error *marker_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  (void)host, (void)disc;
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(marker) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "marker",
    .platform = "marker",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .discover = marker_discover,
};
