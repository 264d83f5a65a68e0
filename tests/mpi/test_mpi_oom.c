/* SPDX-License-Identifier: BSD-3-Clause */
/* Out of memory on one rank during hdal_mpi_context_create (docs/reference.md,
 * "Errors"): for N = 1, 2, ... rank 0 fails the Nth allocation (or hwloc / thread
 * call) that hdal makes, the other ranks none; every rank must then either
 * succeed with the same table or fail with the same RESOURCE_EXHAUSTED error,
 * no rank may hang or crash, and rank 0 must get back everything hdal took.
 * The walk ends with the first N that injects nothing.  Run by
 * tests/mpi/oom.test (2 ranks) with the fault-injection interposer
 * (tests/faultinject/fi.c) preloaded; skipped (77) in sanitizer builds, whose
 * malloc the interposer cannot stack on.  CK_NOFORK as in test_mpi.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>
#include <hdal/mpi.h>
#include "fi.h"
#include "mpi_testutil.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || __has_feature(address_sanitizer) || \
    __has_feature(thread_sanitizer)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static int rank, size;
static hdalfi_start_fn *fi_start;
static hdalfi_stop_injecting_fn *fi_stop_injecting;
static hdalfi_get_report_fn *fi_get_report;
static hdalfi_stop_fn *fi_stop;

/* FNV-1a over the outcome: the error's code and message, or the table. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = p; n--; c++) h = (h ^ *c) * 0x100000001b3ULL;
  return h;
}

static uint64_t outcome_digest(const hdal_error *err, const hdal_context *ctx) {
  uint64_t h = 0xcbf29ce484222325ULL;
  if (err) {
    int code = hdal_error_code(err);
    h = fnv(h, &code, sizeof code);
    return fnv(h, hdal_error_message(err), strlen(hdal_error_message(err)));
  }
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    int v[3] = {hdal_device_id(d), hdal_device_process_index(d), hdal_device_local_hardware_id(d)};
    h = fnv(fnv(h, v, sizeof v), hdal_device_platform(d), strlen(hdal_device_platform(d)) + 1);
  }
  return h;
}

START_TEST(out_of_memory_on_one_rank) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:1 pu:1", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  long errors = 0, successes = 0, n;
  char why[1024] = ""; /* this rank's first problem; the walk stops on any rank's */
  int any_failed = 0;
  for (n = 1;; n++) {
    if (rank == 0) fi_start(n);
    hdal_context *ctx = NULL;
    hdal_error *err = hdal_mpi_context_create(MPI_COMM_WORLD, &o, &ctx);
    hdalfi_report rep = {0};
    if (rank == 0) {
      fi_stop_injecting();
      fi_get_report(&rep);
    }
    uint64_t h = outcome_digest(err, ctx), range[2] = {h, ~h};
    MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    long injected = rep.injected_at;
    MPI_Bcast(&injected, 1, MPI_LONG, 0, MPI_COMM_WORLD);

    const char *what = err ? hdal_error_message(err) : "success";
    if (range[0] != ~range[1])
      snprintf(why, sizeof why, "N=%ld: the ranks ended differently; rank %d: %s", n, rank, what);
    else if (err && !injected)
      snprintf(why, sizeof why, "N=%ld: error without an injected failure: %s", n, what);
    else if (err && ctx)
      snprintf(why, sizeof why, "N=%ld: an error and a context", n);
    else if (err && (rep.kind == HDALFI_MEMORY || rank != 0) && hdal_error_code(err) != HDAL_RESOURCE_EXHAUSTED)
      snprintf(why, sizeof why, "N=%ld (%s in %s): %s: %s", n, rep.function, rep.caller,
               hdal_code_name(hdal_error_code(err)), what);
    else if (!err && (!ctx || hdal_context_process_count(ctx) != size))
      snprintf(why, sizeof why, "N=%ld: success without the job's context", n);
    errors += err != NULL;
    successes += err == NULL;
    hdal_error_destroy(err);
    hdal_context_destroy(ctx);
    if (rank == 0) {
      fi_get_report(&rep);
      fi_stop();
      if (!why[0] && (rep.live_allocations || rep.live_objects))
        snprintf(why, sizeof why, "N=%ld (%s in %s): hdal still holds %ld allocation(s) and %ld object(s)", n,
                 rep.function, rep.caller, rep.live_allocations, rep.live_objects);
    }
    any_failed = why[0] != 0;
    MPI_Allreduce(MPI_IN_PLACE, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_failed || !injected) break; /* a problem, or the whole call ran without reaching the Nth */
  }
  ck_assert_msg(!why[0], "%s", why);
  ck_assert_msg(!any_failed, "N=%ld: another rank failed", n);
  ck_assert_int_gt(errors, 0);
  ck_assert_int_gt(successes, 0); /* at least the last, clean run */
  if (rank == 0) printf("out of memory on rank 0: %ld runs, %ld failed cleanly on every rank, %ld succeeded\n",
                        n, errors, successes);
}
END_TEST

int main(int argc, char **argv) {
  fi_start = (hdalfi_start_fn *)dlsym(RTLD_DEFAULT, "hdalfi_start");
  if (!fi_start) {
    /* Before MPI_Init: every rank re-executes itself with the interposer. */
    const char *pre = getenv("LD_PRELOAD");
    if (SANITIZED || (pre && strstr(pre, "vgpreload"))) {
      printf("fault injection needs a build without sanitizers and no valgrind: skipped\n");
      return 77;
    }
    if (getenv("HDALFI_REEXEC") || access(HDALFI_SHIM_PATH, R_OK) != 0) {
      fprintf(stderr, "test_mpi_oom: the interposer %s cannot be preloaded\n", HDALFI_SHIM_PATH);
      return 99;
    }
    char *preload;
    if (asprintf(&preload, "%s%s%s", HDALFI_SHIM_PATH, pre && *pre ? ":" : "", pre ? pre : "") < 0) return 99;
    setenv("LD_PRELOAD", preload, 1);
    setenv("HDALFI_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "test_mpi_oom: re-executing with the interposer: %s\n", strerror(errno));
    return 99;
  }
  fi_stop_injecting = (hdalfi_stop_injecting_fn *)dlsym(RTLD_DEFAULT, "hdalfi_stop_injecting");
  fi_get_report = (hdalfi_get_report_fn *)dlsym(RTLD_DEFAULT, "hdalfi_get_report");
  fi_stop = (hdalfi_stop_fn *)dlsym(RTLD_DEFAULT, "hdalfi_stop");
  unsetenv("LD_PRELOAD"); /* not for the helpers MPI may start */

  test_mpi_init(&argc, &argv, &rank, &size);
  Suite *s = suite_create("mpi_oom");
  TCase *tc = tcase_create("oom");
  tcase_add_test(tc, out_of_memory_on_one_rank);
  return test_mpi_run(s, tc);
}
