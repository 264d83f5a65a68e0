/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — binding near a device (binding.c; docs/reference.md, "Binding"):
 * hdal_device_bind, and HDAL_CPU_BINDING, which binds a new context's process
 * near the GPUs it keeps (the GPUs of its local rank with HDAL_GPU_BINDING). */
#ifndef HDAL_BINDING_H
#define HDAL_BINDING_H

#include "internal.h"

typedef enum { HDAL__CPU_BINDING_NONE = 0, HDAL__CPU_BINDING_NEAR = 1 } hdal__cpu_binding;

/* HDAL_CPU_BINDING's text (NULL or empty: none), from `who`; INVALID_ARGUMENT for another word. */
HDAL__HIDDEN hdal_error *hdal__cpu_binding_parse(const char *text, const char *who, hdal__cpu_binding *out);
/* For HDAL__CPU_BINDING_NEAR: binds the process to the CPUs of the GPUs of this process in ctx (the union
 * of their localities, within what the process may use) and the calling thread's memory to their NUMA
 * nodes; nothing when the process keeps no GPU.  An error says why it could not, nothing bound. */
HDAL__HIDDEN hdal_error *hdal__cpu_binding_apply(hdal_context *ctx, hdal__cpu_binding mode);

#endif
