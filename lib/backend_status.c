/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — a backend's status (backend_status.h): data first, the text
 * made from it, with what the rules over whole GPUs took (faces.c) and what
 * the device selector left out (selector.c). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend_status.h"
#include "faces.h"
#include "selector.h"

/* The reason of a backend whose own reason or status could not be allocated. */
static char out_of_memory[] = "out of memory";

void hdal__backend_set_reason(hdal__backend *b, char *reason) {
  if (b->reason != out_of_memory) free(b->reason);
  b->reason = reason;
}

char *hdal__backend_status_text(const hdal__backend *b) {
  size_t found = b->ndevices + b->nunselected;
  const char *s = found == 1 ? "" : "s";
  char head[640];
  switch (b->kind) {
  case HDAL_BACKEND_DISABLED: return strdup(hdal_backend_state_name(b->kind));
  case HDAL_BACKEND_OK:
    if (b->nunselected)
      snprintf(head, sizeof head, "%s: %zu of %zu device%s selected by %s", hdal_backend_state_name(b->kind),
               b->ndevices, found, s, b->ctx->selector ? hdal__selector_who(b->ctx->selector) : "the device selector");
    else
      snprintf(head, sizeof head, "%s: %zu device%s", hdal_backend_state_name(b->kind), b->ndevices, s);
    /* What the rules over whole GPUs took (faces.c): the binding's, then the narrowed runtimes'. */
    if (b->nowned_elsewhere) {
      const hdal__binding *bd = &b->ctx->binding;
      size_t at = strlen(head);
      snprintf(head + at, sizeof head - at, "; %zu owned by other local ranks (%s: local rank %d of %d)",
               b->nowned_elsewhere, bd->who, bd->local_rank, bd->local_size);
    }
    if (b->nhidden) {
      size_t at = strlen(head);
      hdal__faces_hidden_text(b, head + at, sizeof head - at);
    }
    if (!b->nrefused) return strdup(head);
    if (b->nrefused == 1) return hdal__strdup_printf("%s; 1 refused: %s", head, b->reason);
    return hdal__strdup_printf("%s; %zu refused: %s (and %zu more)", head, b->nrefused, b->reason, b->nrefused - 1);
  default: return hdal__strdup_printf("%s: %s", hdal_backend_state_name(HDAL_BACKEND_UNAVAILABLE), b->reason);
  }
}

void hdal__backend_stopped(hdal__backend *b, hdal_backend_state_kind kind, char *reason) {
  b->kind = kind;
  b->nrefused = 0;
  hdal__backend_set_reason(b, reason ? reason : out_of_memory);
  free(b->status);
  b->status = hdal__backend_status_text(b);
}

void hdal__backend_unavailable(hdal__backend *b, char *reason) {
  hdal__backend_stopped(b, HDAL_BACKEND_UNAVAILABLE, reason);
}
