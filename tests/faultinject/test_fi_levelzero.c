/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walks over the Level Zero backend (hdal_levelzero.so) on the
 * suite's fake driver (tests/fakes/ze/), loaded by the system's real loader
 * (libze_loader.so.1) through ZE_ENABLE_ALT_DRIVERS: the GPU walks
 * (tests/gpusuite/walks.c) on the Level Zero face — context creation, DLPack
 * import (a view of device USM, copies of host memory onto a GPU, of a device
 * tensor onto the CPU and between the two GPUs), export, copy_to_device
 * between the GPUs and to the CPU, and the device memory pool (hdal's own:
 * Level Zero has no stream-ordered pool; docs/memory.md), whose releases
 * record event fences that reuse queries and the trim waits for.  The driver
 * calls hdal makes go through the loader, which tail-calls them so that the
 * fake sees hdal as its caller.  The fake's device memory faults on host
 * access, so a path that reads it from the host crashes the walk.  Skipped
 * (77) without the loader (Debian's libze1). */
#include "gpusuite/gpusuite.h"
#include "walk.h"
#include "fakes/ze/testze.h"

/* Only zeMemGetAllocProperties failing leaves hdal unable to place memory. */
static const gpu_walks levelzero = {.placing = "zeMemGetAllocProperties"};

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  /* Asked in a child: this process never loads the loader, so that each
   * walk's child initialises Level Zero afresh. */
  if (!test_library_loads(TEST_ZE_LOADER)) {
    printf("SKIP: no Level Zero loader (%s; Debian's libze1)\n", TEST_ZE_LOADER);
    return 77;
  }
  gpu_init(&gpu_face_ze);
  /* The walk counts hdal's and the driver's calls: no validation layer between them. */
  unsetenv("ZE_ENABLE_VALIDATION_LAYER");
  Suite *s = suite_create("faultinject-levelzero");
  TCase *tc = tcase_create("levelzero");
  tcase_set_timeout(tc, 1200);
  gpu_walks_add(tc, &levelzero);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
