/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — a backend's status (backend_status.c): its state as data
 * (hdal_context_backend_state) and the status text made from it
 * (hdal_context_backend_status; docs/reference.md gives its forms).
 * Discovery sets the state; this file alone writes the text. */
#ifndef HDAL_BACKEND_STATUS_H
#define HDAL_BACKEND_STATUS_H

#include "internal.h"

/* Gives b the reason, taken (NULL: none), freeing the one it had. */
HDAL__HIDDEN void hdal__backend_set_reason(hdal__backend *b, char *reason);
/* The status text of b's state, which the tests hold byte for byte (docs/reference.md
 * gives its forms); NULL when out of memory. */
HDAL__HIDDEN char *hdal__backend_status_text(const hdal__backend *b);
/* Makes b stopped in state `kind` (UNAVAILABLE or FAILED) for `reason`, taken
 * (NULL: out of memory), and its status text with it (NULL when out of memory). */
HDAL__HIDDEN void hdal__backend_stopped(hdal__backend *b, hdal_backend_state_kind kind, char *reason);
HDAL__HIDDEN void hdal__backend_unavailable(hdal__backend *b, char *reason);

#endif
