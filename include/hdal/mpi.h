/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — the multi-process layer on MPI (libhdal-mpi, pkg-config hdal-mpi). */
#ifndef HDAL_MPI_H
#define HDAL_MPI_H

#include <mpi.h>
#include <hdal.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup hdal_mpi MPI layer
 * @brief libhdal-mpi: one global device table over an MPI communicator (pkg-config hdal-mpi).
 * @{
 */

/**
 * Creates a context collectively over @p comm: every rank creates its own
 * context with @p opts, the ranks exchange their device tables
 * (hdal_context_export_devices(), hdal_context_add_process()), and every rank
 * ends with the same global device table, where its own devices are the
 * addressable ones.  The process index is the rank in @p comm and the process
 * count its size; the local rank and size (hdal_context_options::local_rank,
 * for the GPU binding, hdal_context_options::gpu_binding) are the rank's place
 * among the ranks of @p comm on its host (MPI_COMM_TYPE_SHARED).  Those fields
 * of @p opts are ignored, and the caller's struct is not modified.
 *
 * Collective: every rank of @p comm must call it.  A failure on any rank fails
 * every rank, with the same code and message, and no rank hangs (docs/mpi.md).
 *
 * @param comm an intracommunicator.
 * @param opts context options, or NULL (see ::hdal_context_options).
 * @param[out] out the context, owned by the caller (hdal_context_destroy());
 *        NULL on failure.
 * @return NULL on success, else an error owned by the caller:
 * - ::HDAL_FAILED_PRECONDITION: MPI is not initialised, or already finalised.
 * - ::HDAL_INVALID_ARGUMENT: @p comm is @c MPI_COMM_NULL or an
 *   intercommunicator; @p out is NULL on some rank; an error of
 *   hdal_context_create() with @p opts.
 * - ::HDAL_RESOURCE_EXHAUSTED: a rank ran out of memory (the message names
 *   the first), or the tables are larger than one MPI_Allgatherv moves.
 * - ::HDAL_INTERNAL: an MPI call failed (with the communicator's error handler
 *   @c MPI_ERRORS_RETURN), naming the call and MPI's message.
 * - any code a rank's hdal_context_create() returned, as "rank N could not
 *   create its hdal context: MESSAGE" on every rank.
 *
 * Thread safety: as MPI collectives on @p comm; other threads of the process
 * may use other hdal objects meanwhile.
 */
HDAL_API hdal_error *hdal_mpi_context_create(MPI_Comm comm, const hdal_context_options *opts, hdal_context **out);

/** @} */

#ifdef __cplusplus
}
#endif
#endif /* HDAL_MPI_H */
