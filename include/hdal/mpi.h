/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — the multi-process layer on MPI (libhdal-mpi, pkg-config hdal-mpi). */
#ifndef HDAL_MPI_H
#define HDAL_MPI_H

#include <mpi.h>
#include <hdal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm (an intracommunicator): every rank creates its context
 * with opts, the process tables are exchanged, and every rank ends with the
 * same global device table.  The process index is the rank in comm and the
 * process count its size (opts' own process fields are ignored).  A failure on
 * any rank fails every rank, with the same error (docs/mpi.md). */
HDAL_API hdal_error *hdal_mpi_context_create(MPI_Comm comm, const hdal_context_options *opts, hdal_context **out);

#ifdef __cplusplus
}
#endif
#endif /* HDAL_MPI_H */
