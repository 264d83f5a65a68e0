/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — how the tool gets its context: the plain tool creates a local one;
 * hdal-ls-mpi (built from the same source with HDAL_LS_MPI) builds the global view. */
#ifndef HDAL_LS_CONTEXT_H
#define HDAL_LS_CONTEXT_H

#ifdef HDAL_LS_MPI
#include "ls_mpi.h"
#else
#define HDAL_LS_NAME "hdal-ls"
#define HDAL_LS_EXTRA_HELP ""
#define HDAL_LS_EXTRA_OPTIONS
static inline void hdal_ls_init(int *argc, char ***argv) { (void)argc, (void)argv; }
static inline bool hdal_ls_option(int c, const char *arg) { (void)c, (void)arg; return false; }
static inline hdal_error *hdal_ls_context_create(const hdal_context_options *o, hdal_context **ctx) {
  return hdal_context_create(o, ctx);
}
static inline bool hdal_ls_should_print(hdal_context *ctx) { (void)ctx; return true; }
static inline int hdal_ls_exit(int rc) { return rc; }
static inline FILE *hdal_ls_stderr(void) { return stderr; }
static inline ls_binding *hdal_ls_bindings(size_t *n) { *n = 0; return NULL; }
static inline void hdal_ls_bindings_free(ls_binding *b, size_t n) { (void)b, (void)n; }
#endif

#endif
