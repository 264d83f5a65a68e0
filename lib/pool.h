/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — per-device memory pools (docs/memory.md).
 *
 * Every allocation hdal makes on a device goes through its pool: the core's
 * copies (import, copy_to_device, compaction, export) and a module's own
 * (hdal_backend_host::memory_allocate).  Freed blocks are cached by size
 * class and handed out again once the work queued on them is done; or, where
 * the backend's runtime has a stream-ordered pool of its own (CUDA 11.2+),
 * that pool caches and the core only counts.  Nothing here is on the
 * zero-copy import/release path. */
#ifndef HDAL_POOL_H
#define HDAL_POOL_H

#include "internal.h"

/* Allocates `nbytes` (> 0) on `d`; release with hdal__pool_free and the same size. */
HDAL__HIDDEN hdal_error *hdal__pool_alloc(hdal_device *d, size_t nbytes, void **handle);
/* Gives back a block of hdal__pool_alloc. */
HDAL__HIDDEN void hdal__pool_free(hdal_device *d, void *handle, size_t nbytes);
/* Releases the cached blocks and the pool (device teardown, before the backend's finalize). */
HDAL__HIDDEN void hdal__pool_destroy(hdal_device *d);
/* Parses a limit, "<bytes>" or "<percent>%" (of the device's memory), for `who`
 * (the variable or the option named in the error).  NULL or "": no limit. */
HDAL__HIDDEN hdal_error *hdal__pool_parse_limit(const char *spec, const char *who, hdal__pool_limit *out);

#endif
