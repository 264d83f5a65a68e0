/* hdal — the multi-process layer on MPI (libhdal-mpi, pkg-config hdal-mpi). */
#ifndef HDAL_MPI_H
#define HDAL_MPI_H

#include <mpi.h>
#include <hdal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm: every rank creates its context, the process tables are
 * exchanged, and every rank ends with the same global device table; the process
 * index is the rank. */
HDAL_API hdal_error *hdal_mpi_context_create(MPI_Comm comm, const hdal_context_options *opts, hdal_context **out);

#ifdef __cplusplus
}
#endif
#endif /* HDAL_MPI_H */
