/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — one GPU, several faces (faces.c): the devices of different
 * backends that are one piece of hardware (a UUID or PCI bus id in common),
 * and the two rules that act on whole GPUs rather than on one backend's
 * devices (docs/reference.md, "The scheduler's GPUs on every backend" and
 * "GPUs per local rank"):
 *   - hiding: where CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES /
 *     HIP_VISIBLE_DEVICES or ZE_AFFINITY_MASK narrowed a runtime, the other
 *     backends' faces of that vendor's GPUs the runtime does not show go;
 *   - binding: with HDAL_GPU_BINDING=local-rank, each local rank keeps the
 *     GPUs (every face of each) that fall to it.
 * Both run once every backend's discovery is done, before numbering: hiding
 * before the device selector, binding after it (discovery.c). */
#ifndef HDAL_FACES_H
#define HDAL_FACES_H

#include "internal.h"

/* Hides, in every discovered backend, the devices that are faces of a GPU a
 * narrowed runtime does not show, counting them in hdal__backend::hidden.
 * Allocates nothing. */
HDAL__HIDDEN void hdal__faces_hide(hdal_context *ctx);
/* "; 1 hidden: not shown by cuda (CUDA_VISIBLE_DEVICES)" for b's hidden
 * devices into buf (cut to len), "" when none. */
HDAL__HIDDEN void hdal__faces_hidden_text(const hdal__backend *b, char *buf, size_t len);

/* The binding `spec` names (NULL or empty: none), from `who`; INVALID_ARGUMENT
 * for another word.  The local rank is local_rank of local_size when
 * local_size is not 0 (libhdal-mpi's, checked by the caller), else the
 * launcher's (docs/reference.md, "GPUs per local rank"). */
HDAL__HIDDEN hdal_error *hdal__binding_parse(const char *spec, const char *who, int local_rank, int local_size,
                                             hdal__binding *out);
/* Leaves ctx's backends only the GPUs (every face) of ctx->binding's local
 * rank, counting the others in hdal__backend::owned_elsewhere.  Out of memory
 * is an error and changes nothing. */
HDAL__HIDDEN hdal_error *hdal__binding_apply(hdal_context *ctx);

#endif
