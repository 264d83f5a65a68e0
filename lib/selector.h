/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the device selector (HDAL_DEVICE_SELECTOR,
 * hdal_context_options::device_selector; grammar in docs/reference.md,
 * "Choosing devices").  Parsed once when a context is made; each backend's
 * discovery then keeps the devices it selects, before they are numbered. */
#ifndef HDAL_SELECTOR_H
#define HDAL_SELECTOR_H

#include "internal.h"

typedef struct hdal__selector hdal__selector;

/* Parses `text` (NULL or blank: selects everything, *out NULL); `who` names
 * where it came from in errors ("HDAL_DEVICE_SELECTOR").  A malformed text is
 * HDAL_INVALID_ARGUMENT naming the term and its position. */
HDAL__HIDDEN hdal_error *hdal__selector_parse(const char *text, const char *who, hdal__selector **out);
HDAL__HIDDEN void hdal__selector_free(hdal__selector *s);
/* Where the selector came from, for statuses ("selected by <who>"). */
HDAL__HIDDEN const char *hdal__selector_who(const hdal__selector *s);
/* 'the device selector "opencl:cpu" (HDAL_DEVICE_SELECTOR)', the text escaped
 * as terms are and cut at 64 characters, for refusals that a selection
 * explains (hdal_context::selected_by); NULL: out of memory. */
HDAL__HIDDEN char *hdal__selector_describe(const hdal__selector *s);
/* NULL, or the error for a term that names a backend ctx does not know. */
HDAL__HIDDEN hdal_error *hdal__selector_check_backends(const hdal__selector *s, const hdal_context *ctx);
/* Keeps the devices of backend b that s selects, in order, freeing the
 * others; their count in *dropped.  An error (a UUID prefix naming two of
 * b's devices) leaves the devices as they were. */
HDAL__HIDDEN hdal_error *hdal__selector_apply(const hdal__selector *s, hdal__backend *b, size_t *dropped);
/* What the selector's cpu, gpu and accelerator match in d: its device_type attribute (OpenCL's),
 * else its DLPack device type's class; NULL when neither says. */
HDAL__HIDDEN const char *hdal__selector_kind_of(const hdal_device *d);

#endif
