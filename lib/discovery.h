/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — discovery (discovery.c): a context's backends from their
 * discover() to their finalize().  Above the backend list, the device
 * selector and the faces, which it applies; beneath the context, which
 * calls it once the backends are listed and once it goes. */
#ifndef HDAL_DISCOVERY_H
#define HDAL_DISCOVERY_H

#include "internal.h"

/* Loads and discovers ctx's enabled backends (modules on `path`), concurrently,
 * applies the rules over all their devices (faces, the device selector in
 * ctx->selector, the GPU binding), and gives every backend its status.  An
 * error is one of those rules' or out of memory; a backend's own failure is
 * its status. */
HDAL__HIDDEN hdal_error *hdal__discover_all(hdal_context *ctx, const char *path);
/* Each backend's end, when its context goes: its devices freed, finalize()
 * called (owed after a discover() that succeeded; not in a fork() child,
 * fork.c), its module unloaded; then the array. */
HDAL__HIDDEN void hdal__backends_free(hdal_context *ctx);

#endif
