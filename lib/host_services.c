/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the services the core gives a backend's discover()
 * (hdal_backend_host, include/hdal/backend.h): the only way a backend reaches
 * the core, since its code includes nothing of lib/ (docs/design.md). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "pool.h"
#include "../backends/builtin.h"

static hdal_device *host_add_device(hdal_backend_discovery *b, const hdal_backend_device_info *info) {
  if (!info || !info->kind) return NULL;
  hdal_device *d = hdal__device_new();
  if (!d) return NULL;
  d->ctx = b->ctx;
  d->backend = b;
  d->ops = b->desc->buffer_ops;
  d->host_rule = b->desc == &hdal__cpu_backend;
  d->data = info->data;
  d->local_hardware_id = info->local_hardware_id;
  d->dl = info->dlpack_device;
  d->memory_bytes = info->memory_bytes;
  d->numa_node = info->numa_node;
  d->host_addressable = info->host_addressable;
  d->runtime_class = info->runtime_class ? info->runtime_class : b->desc->runtime_class;
  if (!b->desc->buffer_ops && d->runtime_class == HDAL_RUNTIME_PJRT) {
    /* The ABI's rule: no buffer operations, no buffer runtime. */
    d->runtime_class = HDAL_RUNTIME_IFRT_NATIVE;
    d->reason = hdal__strdup_printf("backend '%s' provides no buffer operations", b->name);
  } else if (d->runtime_class != HDAL_RUNTIME_PJRT) {
    d->runtime_class = HDAL_RUNTIME_IFRT_NATIVE;
    d->reason = info->runtime_class_reason ? strndup(info->runtime_class_reason, HDAL__MAX_STRING)
                                           : hdal__strdup_printf("backend '%s' is IFRT-native", b->name);
  }
  d->platform = strdup(b->desc->platform ? b->desc->platform : b->name);
  d->kind = strndup(info->kind, HDAL__MAX_STRING);
  /* A device that breaks a rule is kept until discovery ends (the backend may
   * still add attributes to it), then dropped and counted (discovery.c, drop_refused). */
  d->id = (int)b->ndevices; /* the order of addition, until the table is numbered */
  d->added = b->ndevices;
  if (!d->platform || !d->kind || (d->runtime_class != HDAL_RUNTIME_PJRT && !d->reason)) goto oom;
  if (b->ndevices == b->devices_cap) {
    size_t cap = b->devices_cap ? 2 * b->devices_cap : 4;
    hdal_device **v = realloc(b->devices, cap * sizeof *v);
    if (!v) goto oom;
    b->devices = v;
    b->devices_cap = cap;
  }
  b->devices[b->ndevices++] = d;
  return d;
oom:
  hdal__device_free(d);
  return NULL;
}

static void host_debug(hdal_backend_discovery *b, const char *fmt, ...) {
  if (!b->ctx->debug) return;
  char *msg;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  hdal__debug(b->ctx, b->name, "%s", msg);
  free(msg);
}

static int host_numa_node_of_pci(hdal_backend_discovery *b, const char *bus_id) {
  return hdal__numa_node_of_pci(b->ctx, bus_id);
}

static bool host_named(hdal_backend_discovery *b) { return b->named; }

static hdal_error *host_memory_allocate(hdal_device *d, size_t nbytes, void **handle) {
  return hdal__pool_alloc(d, nbytes, handle);
}

const hdal_backend_host hdal__host = {
    .add_device = host_add_device,
    .add_attribute = hdal__device_add_attribute,
    .debug = host_debug,
    .numa_node_of_pci = host_numa_node_of_pci,
    .error_new = hdal__error_new,
    .error_oom = hdal__error_oom,
    .memory_allocate = host_memory_allocate,
    .memory_release = hdal__pool_free,
    .host_buffer_ops = &hdal__host_buffer_ops,
    .topology_restrict = hdal__topology_restrict,
    .named = host_named,
};
