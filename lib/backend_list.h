/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — which backends a context has (backend_list.c): hdal's own and
 * the modules on the path, each enabled or not by the backend selection
 * (HDAL_BACKENDS, hdal_context_options::backends; docs/reference.md, "Backend
 * names"), and the check of a backend's name that the selection and the device
 * selector share.  Beneath discovery, the selector and the faces: it calls
 * none of them. */
#ifndef HDAL_BACKEND_LIST_H
#define HDAL_BACKEND_LIST_H

#include "internal.h"

/* A parsed backend selection: "cpu,opencl" keeps only those, "-cuda" drops one. */
typedef struct {
  char **names;
  bool *exclude;
  size_t n;
  bool any_include;
} hdal__backend_selection;

/* Parses `spec` (NULL: every backend) into *s; INVALID_ARGUMENT naming the
 * list when it is malformed.  Freeing *s is right whatever the result. */
HDAL__HIDDEN hdal_error *hdal__backend_selection_parse(const char *spec, hdal__backend_selection *s);
/* Frees what *s holds and leaves it empty. */
HDAL__HIDDEN void hdal__backend_selection_free(hdal__backend_selection *s);

/* Fills ctx->backends: the known ones, then the modules found on `path`, by
 * name, each enabled as `sel` says.  A name `sel` gives that is none of them is
 * INVALID_ARGUMENT from `who` (hdal__backend_name_check); the caller frees ctx. */
HDAL__HIDDEN hdal_error *hdal__backends_list(hdal_context *ctx, const hdal__backend_selection *sel, const char *path,
                                             const char *who);

/* NULL when ctx has a backend of that name (names are case-sensitive), else
 * INVALID_ARGUMENT "<who>: unknown backend 'openCL' (did you mean 'opencl'?);
 * known: <the context's backends>" (without "<who>: " for NULL) (docs/reference.md, "Backend names"). */
HDAL__HIDDEN hdal_error *hdal__backend_name_check(const hdal_context *ctx, const char *name, const char *who);

#endif
