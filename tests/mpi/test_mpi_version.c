/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank that sends a device table of another format version (docs/mpi.md):
 * every rank is refused with the same clear message, and none hangs.  Run
 * by tests/mpi/version.test with 2 and 3 ranks.
 *
 * The last rank plays a process built from another hdal: through the MPI
 * profiling interface, this program's MPI_Allgatherv (which libhdal-mpi calls)
 * rewrites the version field of that rank's table on its way out (bytes 4-5,
 * little-endian; docs/dlpack.md and lib/process_table.c describe the format).
 * CK_NOFORK between MPI_Init and MPI_Finalize, as in test_mpi.c.
 */
#include <hdal/mpi.h>
#include "mpi_testutil.h"

enum { FORGED_VERSION = 4 };

static int rank, size;
static bool forging;       /* this rank rewrites its table */
static int forged_tables;  /* tables rewritten: proves the interposition ran */

static void forge(unsigned char *blob, size_t len) {
  ck_assert_uint_ge(len, 8);
  ck_assert_mem_eq(blob, "HDPT", 4); /* a table, not an error message */
  blob[4] = FORGED_VERSION;
  blob[5] = 0;
  forged_tables++;
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (!forging || sendtype != MPI_BYTE || sendcount < 8)
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  unsigned char *copy = malloc((size_t)sendcount);
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, sendbuf, (size_t)sendcount);
  forge(copy, (size_t)sendcount);
  int rc = PMPI_Allgatherv(copy, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  free(copy);
  return rc;
}

/* What hdal_context_add_process says of a forged table (the reader's side of the refusal). */
static hdal_error *refusal_of_forged_table(void) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 0, .process_count = 2};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  void *blob = NULL;
  size_t len = 0;
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
  forge(blob, len);
  forged_tables--;
  hdal_error *err = hdal_context_add_process(ctx, 1, blob, len);
  ck_assert_ptr_nonnull(err);
  free(blob);
  hdal_context_destroy(ctx);
  return err;
}

START_TEST(other_table_version_refused_on_every_rank) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:1 pu:1", 1);
  forging = rank == size - 1;
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_mpi_context_create(MPI_COMM_WORLD, &o, &ctx);
  forging = false;
  ck_assert_int_eq(forged_tables, rank == size - 1);

  /* Rank 0 is the first reader of the last rank's table; every rank reports its refusal. */
  hdal_error *why = refusal_of_forged_table();
  char expected[1200];
  snprintf(expected, sizeof expected, "rank 0 could not add the device table of rank %d: %s", size - 1,
           hdal_error_message(why));
  ck_assert_ptr_null(ctx);
  ck_assert_error(err, hdal_error_code(why), expected);
  ck_assert_int_eq(hdal_error_code(why), HDAL_INVALID_ARGUMENT);
  char version[64];
  snprintf(version, sizeof version, "process table version %d", FORGED_VERSION);
  ck_assert_msg(strstr(hdal_error_message(why), version), "the refusal names the version: %s", hdal_error_message(why));
  hdal_error_destroy(why);
}
END_TEST

/* After a refused exchange the job goes on: a clean exchange succeeds. */
START_TEST(clean_exchange_after_a_refusal) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:1 pu:1", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_mpi_context_create(MPI_COMM_WORLD, &o, &ctx));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2 * (size_t)size);
  hdal_context_destroy(ctx);
}
END_TEST

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &rank, &size);
  if (size < 2) return test_mpi_leave(rank, 77, "test_mpi_version needs 2 ranks or more");
  Suite *s = suite_create("mpi_version");
  TCase *tc = tcase_create("version");
  tcase_add_test(tc, other_table_version_refused_on_every_rank);
  tcase_add_test(tc, clean_exchange_after_a_refusal);
  return test_mpi_run(s, tc);
}
