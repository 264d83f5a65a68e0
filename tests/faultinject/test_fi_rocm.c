/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walks over the ROCm backend on the suite's fake HIP runtimes
 * (tests/fakes/hip/, both ABIs): the GPU walks (tests/gpusuite/walks.c) on the
 * HIP face — context creation, DLPack import (view and copies), export,
 * copies between GPUs and to the CPU, and the device memory pool, walked
 * twice: on the runtime's default memory pool (hipMallocAsync,
 * hipMemPoolTrimTo...) and on hdal's own (FAKEHIP_MEMPOOLS=0), whose releases
 * record event fences that the reuse queries and the trim waits for.  The
 * fake's device memory faults on host access, so a path that reads it from
 * the host crashes the walk. */
#include "gpusuite/gpusuite.h"
#include "walk.h"

static void abi5(void) { gpu_fake = "fakehip5"; }
static void abi6(void) { gpu_fake = "fakehip6"; }

/* Any runtime call failing may leave hdal unable to place memory (docs/rocm.md). */
static const gpu_walks rocm = {.placing = NULL};

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  gpu_init(&gpu_face_hip);
  Suite *s = suite_create("faultinject-rocm");
  for (int abi = 6; abi >= 5; abi--) {
    TCase *tc = tcase_create(abi == 6 ? "rocm6" : "rocm5");
    tcase_set_timeout(tc, 1200);
    tcase_add_checked_fixture(tc, abi == 6 ? abi6 : abi5, NULL);
    gpu_walks_add(tc, &rocm);
    suite_add_tcase(s, tc);
  }
  return test_run_suite(s);
}
