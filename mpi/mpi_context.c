/* SPDX-License-Identifier: BSD-3-Clause */
/* libhdal-mpi — hdal_mpi_context_create: one context per rank, the process
 * tables (docs/dlpack.md, "Process tables") exchanged, the same global view on
 * every rank (docs/mpi.md).
 *
 * Every rank takes part in every collective whatever happened to it: a local
 * failure travels in place of the rank's table (its code and message), so all
 * ranks fail together with one message and none waits for a rank that gave
 * up.  The collectives, in order:
 *   0. Comm_split_type (MPI_COMM_TYPE_SHARED): each rank's place on its host,
 *      which the GPU binding reads (hdal_context_options::local_rank);
 *   1. Allreduce  every rank could allocate the table of sizes;
 *   2. Allgather  each rank's payload length and error code;
 *   3. Allreduce  every rank could allocate the receive buffer;
 *   4. Allgatherv the payloads: tables, or error messages;
 *   5. Allreduce  (MINLOC) the lowest rank whose table some rank refused;
 *   6. Bcast      that refusal's message, from the lowest rank that made it;
 *      or, when nothing was refused, Allreduce of a digest of the table, so
 *      that ranks which somehow disagree fail instead of going on.
 * Steps 1-4 end the same way on every rank (each sees the same codes), and so
 * do 5-6 (each sees the same reduction).
 */
#include "config.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <hdal/mpi.h>
#include "mpi_internal.h"

/* What each rank announces in step 2. */
typedef struct {
  int64_t len;  /* payload bytes */
  int64_t code; /* 0: the payload is the rank's table; else an hdal_code, the payload its message */
} announce;

/* Step 6's message: fixed size, so that receiving it cannot fail. */
typedef struct {
  int code;
  char message[1020];
} refusal;

static hdal_error *mpi_failed(const char *call, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return hdal__mpi_error(HDAL_INTERNAL, "hdal_mpi_context_create: %s failed: %.*s", call, len, text);
}

/* This rank's place among the ranks of comm on its host (MPI_COMM_TYPE_SHARED), for the GPU binding
 * (docs/mpi.md, "GPUs per local rank").  Collective over comm; a failure is kept, not returned, so that
 * every rank still takes part in what follows. */
static hdal_error *local_place(MPI_Comm comm, int rank, int *local_rank, int *local_size) {
  MPI_Comm node = MPI_COMM_NULL;
  int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return mpi_failed("MPI_Comm_split_type", rc);
  const char *call = "MPI_Comm_rank";
  if ((rc = MPI_Comm_rank(node, local_rank)) == MPI_SUCCESS) call = "MPI_Comm_size", rc = MPI_Comm_size(node, local_size);
  MPI_Comm_free(&node);
  return rc == MPI_SUCCESS ? NULL : mpi_failed(call, rc);
}

/* The local part: this rank's context and its table. */
static hdal_error *create_local(const hdal_context_options *opts, int rank, int size, int local_rank,
                                int local_size, hdal_context **ctx, void **blob, size_t *len) {
  hdal_context_options o = {.struct_size = sizeof o};
  if (opts) {
    memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
    /* A struct too short to hold the backend list: the core refuses it, with its message. */
    size_t known = offsetof(hdal_context_options, backends) + sizeof opts->backends;
    o.struct_size = opts->struct_size < known ? opts->struct_size : sizeof o;
  }
  o.process_index = rank;
  o.process_count = size;
  o.local_rank = local_rank;
  o.local_size = local_size;
  hdal_error *err = hdal_context_create(&o, ctx);
  if (!err) err = hdal_context_export_devices(*ctx, blob, len);
  return err;
}

/* FNV-1a over what defines the global table: ids, owners and their hosts, platforms, kinds, local ids. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = p; n--; c++) h = (h ^ *c) * 0x100000001b3ULL;
  return h;
}

static uint64_t table_digest(const hdal_context *ctx) {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t n = hdal_context_device_count(ctx);
  h = fnv(h, &n, sizeof n);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    int v[4] = {hdal_device_id(d), hdal_device_process_index(d), hdal_device_local_hardware_id(d),
                hdal_device_host_index(d)};
    h = fnv(h, v, sizeof v);
    h = fnv(h, hdal_device_platform(d), strlen(hdal_device_platform(d)) + 1);
    h = fnv(h, hdal_device_kind(d), strlen(hdal_device_kind(d)) + 1);
  }
  return h;
}

/* Steps 5 and 6: adds the other ranks' tables to ctx; the same verdict on every rank. */
static hdal_error *add_others(MPI_Comm comm, int rank, int size, hdal_context *ctx, const char *payloads,
                              const int *counts, const int *displs) {
  int bad[2] = {INT_MAX, rank}; /* {rank whose table was refused, reader}: MPI_2INT for MINLOC */
  hdal_error *refused = NULL;
  for (int r = 0; r < size && !refused; r++) {
    if (r == rank) continue;
    refused = hdal_context_add_process(ctx, r, payloads + displs[r], (size_t)counts[r]);
    if (refused) bad[0] = r;
  }
  int rc = MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_2INT, MPI_MINLOC, comm);
  if (rc != MPI_SUCCESS) {
    hdal_error_destroy(refused);
    return mpi_failed("MPI_Allreduce", rc);
  }
  if (bad[0] != INT_MAX) {
    refusal note;
    memset(&note, 0, sizeof note);
    if (rank == bad[1]) {
      note.code = (int)hdal_error_code(refused);
      strncpy(note.message, hdal_error_message(refused), sizeof note.message - 1);
    }
    hdal_error_destroy(refused);
    rc = MPI_Bcast(&note, (int)sizeof note, MPI_BYTE, bad[1], comm);
    if (rc != MPI_SUCCESS) return mpi_failed("MPI_Bcast", rc);
    note.message[sizeof note.message - 1] = '\0';
    return hdal__mpi_error((hdal_code)note.code, "rank %d could not add the device table of rank %d: %s", bad[1],
                           bad[0], note.message);
  }
  hdal_error_destroy(refused); /* NULL here */

  /* Two minima in one reduction: min(h) and min(~h) = ~max(h). */
  uint64_t h = table_digest(ctx), range[2] = {h, ~h};
  rc = MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UINT64_T, MPI_MIN, comm);
  if (rc != MPI_SUCCESS) return mpi_failed("MPI_Allreduce", rc);
  if (range[0] != ~range[1])
    return hdal__mpi_error(HDAL_INTERNAL,
                           "the ranks built different global device tables from the same process tables "
                           "(rank %d: %zu devices)",
                           rank, hdal_context_device_count(ctx));
  return NULL;
}

/* Whether every rank got its memory: one reduction, the same verdict
 * everywhere, naming the first rank that did not. */
static hdal_error *all_allocated(bool ok, int rank, MPI_Comm comm) {
  int first = ok ? INT_MAX : rank;
  int rc = MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  if (rc != MPI_SUCCESS) return mpi_failed("MPI_Allreduce", rc);
  if (first != INT_MAX)
    return hdal__mpi_error(HDAL_RESOURCE_EXHAUSTED, "rank %d ran out of memory exchanging the device tables", first);
  return NULL;
}

HDAL_API hdal_error *hdal_mpi_context_create(MPI_Comm comm, const hdal_context_options *opts, hdal_context **out) {
  if (out) *out = NULL;
  int flag = 0;
  if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag)
    return hdal__mpi_error(HDAL_FAILED_PRECONDITION, "hdal_mpi_context_create: MPI is not initialized (call MPI_Init first)");
  if (MPI_Finalized(&flag) != MPI_SUCCESS || flag)
    return hdal__mpi_error(HDAL_FAILED_PRECONDITION, "hdal_mpi_context_create: MPI is already finalized");
  if (comm == MPI_COMM_NULL)
    return hdal__mpi_error(HDAL_INVALID_ARGUMENT, "hdal_mpi_context_create: comm is MPI_COMM_NULL");
  int rank, size, rc;
  if ((rc = MPI_Comm_test_inter(comm, &flag)) != MPI_SUCCESS) return mpi_failed("MPI_Comm_test_inter", rc);
  if (flag)
    return hdal__mpi_error(HDAL_INVALID_ARGUMENT,
                           "hdal_mpi_context_create: comm is an intercommunicator; pass an intracommunicator");
  if ((rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS) return mpi_failed("MPI_Comm_rank", rc);
  if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return mpi_failed("MPI_Comm_size", rc);

  /* From here on, a failure is kept and the collectives go on. */
  hdal_context *ctx = NULL;
  void *blob = NULL;
  size_t blob_len = 0;
  int local_rank = 0, local_size = 1;
  hdal_error *local = local_place(comm, rank, &local_rank, &local_size);
  if (!local)
    local = out ? create_local(opts, rank, size, local_rank, local_size, &ctx, &blob, &blob_len)
                : hdal__mpi_error(HDAL_INVALID_ARGUMENT, "hdal_mpi_context_create: out is NULL");
  const char *mine = local ? hdal_error_message(local) : blob;
  announce me = {(int64_t)(local ? strlen(mine) : blob_len), local ? (int64_t)hdal_error_code(local) : 0};

  hdal_error *err = NULL;
  announce *all = NULL;
  char *payloads = NULL;
  int *counts = NULL, *displs = NULL;

  /* 1 */
  all = malloc((size_t)size * sizeof *all);
  if ((err = all_allocated(all != NULL, rank, comm))) goto done;
  /* 2 */
  if ((rc = MPI_Allgather(&me, 2, MPI_INT64_T, all, 2, MPI_INT64_T, comm)) != MPI_SUCCESS) {
    err = mpi_failed("MPI_Allgather", rc);
    goto done;
  }
  /* MPI counts are ints: the same verdict on every rank, before any allocation. */
  int64_t total = 0;
  for (int r = 0; r < size; r++) total += all[r].len;
  if (total > INT_MAX) {
    err = hdal__mpi_error(HDAL_RESOURCE_EXHAUSTED,
                          "the device tables of %d ranks take %lld bytes, more than one MPI_Allgatherv moves (%d)",
                          size, (long long)total, INT_MAX);
    goto done;
  }
  /* 3 */
  payloads = malloc(total ? (size_t)total : 1);
  counts = malloc((size_t)size * sizeof *counts);
  displs = malloc((size_t)size * sizeof *displs);
  if ((err = all_allocated(payloads && counts && displs, rank, comm))) goto done;
  /* 4 */
  for (int r = 0, at = 0; r < size; r++) {
    counts[r] = (int)all[r].len;
    displs[r] = at;
    at += counts[r];
  }
  if ((rc = MPI_Allgatherv(mine, (int)me.len, MPI_BYTE, payloads, counts, displs, MPI_BYTE, comm)) != MPI_SUCCESS) {
    err = mpi_failed("MPI_Allgatherv", rc);
    goto done;
  }
  for (int r = 0; r < size; r++)
    if (all[r].code != 0) {
      err = hdal__mpi_error((hdal_code)all[r].code, "rank %d could not create its hdal context: %.*s", r, counts[r],
                            payloads + displs[r]);
      goto done;
    }
  /* 5, 6 */
  err = add_others(comm, rank, size, ctx, payloads, counts, displs);

done:
  free(all);
  free(payloads);
  free(counts);
  free(displs);
  free(blob);
  hdal_error_destroy(local);
  if (err) {
    hdal_context_destroy(ctx);
    return err;
  }
  *out = ctx;
  return NULL;
}
