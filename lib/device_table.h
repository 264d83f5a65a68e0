/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the device table (device_table.c). */
#ifndef HDAL_DEVICE_TABLE_H
#define HDAL_DEVICE_TABLE_H

#include "internal.h"

/* The backends hdal knows, in the documented order: backends/registry's, made
 * HDAL__KNOWN_BACKENDS and HDAL__NKNOWN_BACKENDS by configure (config.h);
 * modules of other names follow them, by name. */
HDAL__HIDDEN extern const char *const hdal__known_backends[HDAL__NKNOWN_BACKENDS];

/* The one device order (docs/reference.md): process index, backend (the
 * registry's order, then others by name: names only, so that every process orders every
 * process's devices alike, whatever it has installed), local hardware id.  A
 * qsort comparator of hdal_device pointers. */
HDAL__HIDDEN int hdal__device_order(const void *pa, const void *pb);
/* Fills ctx->devices with the backends' devices in the one order, numbers
 * them, and gives each DLDevice type served here its owning backend. */
HDAL__HIDDEN hdal_error *hdal__table_build(hdal_context *ctx);

/* Inserts another process's devices (decoded, owned by the call, as are the
 * array and the host's name and id, each NULL when the table gave none) on
 * their host: ALREADY_EXISTS for a process added before, INVALID_ARGUMENT for
 * two devices of one backend and local id; the table is unchanged on error. */
HDAL__HIDDEN hdal_error *hdal__table_add_process(hdal_context *ctx, int process_index, hdal_device **devs,
                                                 size_t n, char *host_name, char *host_id);

/* The device that a tensor's DLDevice names (docs/dlpack.md, "Routing"). */
HDAL__HIDDEN hdal_error *hdal__route(hdal_context *ctx, const DLTensor *t, hdal_device **out);

/* "kDLCUDA" and the like, "unknown" for a type DLPack does not name. */
static inline const char *hdal__dl_type_name(int32_t type) {
  const char *name = hdal_dlpack_device_type_name((DLDeviceType)type);
  return name ? name : "unknown";
}

#endif
