/* SPDX-License-Identifier: BSD-3-Clause */
/* libhdal-mpi — internal declarations. */
#ifndef HDAL_MPI_INTERNAL_H
#define HDAL_MPI_INTERNAL_H

#include <hdal.h>


/* Errors of the MPI layer: the core's objects, freed by hdal_error_destroy().
 * Out of memory gives a static RESOURCE_EXHAUSTED error, never NULL. */
HDAL__HIDDEN hdal_error *hdal__mpi_error(hdal_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
HDAL__HIDDEN hdal_error *hdal__mpi_error_oom(void);

#endif /* HDAL_MPI_INTERNAL_H */
