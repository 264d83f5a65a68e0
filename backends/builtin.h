/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — the backends linked into libhdal: their descriptors, which the core
 * lists as a loader would find them (docs/design.md, "Layout and data flow"). */
#ifndef HDAL_BUILTIN_H
#define HDAL_BUILTIN_H

#include <hdal/backend.h>

HDAL__HIDDEN extern const hdal_backend hdal__cpu_backend;

#endif
