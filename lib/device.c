/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the device model: accessors and typed attributes (docs/reference.md, "Contexts, backends and devices"). */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device_ops.h"
#include "internal.h"
#include "pool.h"

hdal_device *hdal__device_new(void) {
  hdal_device *d = calloc(1, sizeof *d);
  if (d) d->numa_node = -1;
  return d;
}

void hdal__device_free(hdal_device *d) {
  if (!d) return;
  hdal__pool_destroy(d); /* the backend is still there to take the blocks back */
  for (size_t i = 0; i < d->nattrs; i++) {
    free(d->attrs[i].key);
    free(d->attrs[i].value);
  }
  free(d->attrs);
  free(d->platform);
  free(d->remote_backend);
  free(d->kind);
  free(d->reason);
  free(d->locality); /* one block (locality.c) */
  free(d);
}

/* A device that can hold buffers in this process. */
hdal_error *hdal__check_target(const hdal_device *d, const hdal_context *ctx, const char *who) {
  if (d->ctx != ctx)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: device %d belongs to another context", who, d->id);
  hdal__service s = hdal__device_service(ctx, d);
  if (s == HDAL__NOT_PJRT)
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "This operation is implemented for a PjRt-compatible backend only.");
  if (s == HDAL__NOT_ADDRESSABLE)
    return hdal__error_new(HDAL_FAILED_PRECONDITION, "%s: device %d (%s) is not addressable by the current process",
                           who, d->id, d->platform);
  return NULL;
}

void hdal__device_list_free(hdal_device **v, size_t n) {
  for (size_t i = 0; i < n; i++) hdal__device_free(v[i]);
  free(v);
}

bool hdal__device_rules_hold(int local_hardware_id, int numa_node, int dl_type, char *why, size_t size) {
  if (local_hardware_id < 0) snprintf(why, size, "negative local hardware id %d", local_hardware_id);
  else if (numa_node < -1) snprintf(why, size, "NUMA node %d (below -1, which means unknown)", numa_node);
  else if (dl_type < 0) snprintf(why, size, "negative DLPack device type %d", dl_type);
  else return true;
  return false;
}

/* The core writes every value's text, so that each number and boolean has one spelling (words.c).
 * A key given twice keeps its last value and type. */
bool hdal__device_add_attribute(hdal_device *d, const hdal_backend_attribute *a) {
  if (!d || !a || !a->key) return false;
  unsigned type_flags = a->type_and_flags & HDAL__ATTRIBUTE_KNOWN;
  uint64_t number = 0;
  char text[24];
  const char *value = text;
  switch (type_flags & HDAL_ATTRIBUTE_TYPE_MASK) {
  case HDAL_ATTRIBUTE_STRING: value = a->value.string; break;
  case HDAL_BACKEND_ATTRIBUTE_MEMORY_BYTES: /* the info's field, listed here (docs/backend-abi.md) */
    type_flags = (type_flags & ~HDAL_ATTRIBUTE_TYPE_MASK) | HDAL_ATTRIBUTE_UINT;
    number = d->memory_bytes;
    snprintf(text, sizeof text, "%" PRIu64, number);
    break;
  case HDAL_ATTRIBUTE_UINT:
    number = a->value.uint;
    snprintf(text, sizeof text, "%" PRIu64, number);
    break;
  case HDAL_ATTRIBUTE_BOOL:
    number = a->value.boolean;
    value = hdal__bool_word(number);
    break;
  default: return false;
  }
  if (!value) return false;
  char *v = strndup(value, HDAL__MAX_STRING);
  if (!v) return false;
  for (size_t i = 0; i < d->nattrs; i++)
    if (!strncmp(d->attrs[i].key, a->key, HDAL__MAX_STRING)) {
      free(d->attrs[i].value);
      d->attrs[i].value = v;
      d->attrs[i].type_flags = type_flags;
      d->attrs[i].number = number;
      return true;
    }
  if (d->nattrs == d->attrs_cap) {
    size_t cap = d->attrs_cap ? 2 * d->attrs_cap : 8;
    hdal__attribute *na = realloc(d->attrs, cap * sizeof *na);
    if (!na) {
      free(v);
      return false;
    }
    d->attrs = na;
    d->attrs_cap = cap;
  }
  char *k = strndup(a->key, HDAL__MAX_STRING);
  if (!k) {
    free(v);
    return false;
  }
  d->attrs[d->nattrs++] = (hdal__attribute){k, v, type_flags, number};
  return true;
}

HDAL_API int hdal_device_id(const hdal_device *d) { return d->id; }
HDAL_API const char *hdal_device_platform(const hdal_device *d) { return d->platform; }
HDAL_API unsigned hdal_device_runtime_vendor(const hdal_device *d) {
  if (d->backend) return d->backend->desc ? d->backend->desc->pci_vendor : 0;
  /* Another process's device: what this process's module of its backend says. */
  for (size_t i = 0; d->remote_backend && i < d->ctx->nbackends; i++)
    if (!strcmp(d->ctx->backends[i].name, d->remote_backend))
      return d->ctx->backends[i].desc ? d->ctx->backends[i].desc->pci_vendor : 0;
  return 0;
}
HDAL_API const char *hdal_device_kind(const hdal_device *d) { return d->kind; }
HDAL_API int hdal_device_local_hardware_id(const hdal_device *d) { return d->local_hardware_id; }
HDAL_API int hdal_device_process_index(const hdal_device *d) { return d->process_index; }
HDAL_API bool hdal_device_is_addressable(const hdal_device *d) { return d->process_index == d->ctx->process_index; }
HDAL_API hdal_runtime_class hdal_device_runtime_class(const hdal_device *d) { return d->runtime_class; }
HDAL_API const char *hdal_device_runtime_class_reason(const hdal_device *d) { return d->reason; }
HDAL_API DLDevice hdal_device_dlpack_device(const hdal_device *d) { return d->dl; }
HDAL_API uint64_t hdal_device_memory_bytes(const hdal_device *d) { return d->memory_bytes; }
HDAL_API int hdal_device_numa_node(const hdal_device *d) { return d->numa_node; }
HDAL_API size_t hdal_device_attribute_count(const hdal_device *d) { return d->nattrs; }

HDAL_API bool hdal_device_attribute(const hdal_device *d, size_t i, const char **key, const char **value) {
  if (i >= d->nattrs) return false;
  if (key) *key = d->attrs[i].key;
  if (value) *value = d->attrs[i].value;
  return true;
}

HDAL_API const char *hdal_device_attribute_get(const hdal_device *d, const char *key) {
  for (size_t i = 0; key && i < d->nattrs; i++)
    if (!strcmp(d->attrs[i].key, key)) return d->attrs[i].value;
  return NULL;
}

HDAL_API hdal_attribute_type hdal_device_attribute_type(const hdal_device *d, size_t i) {
  return i < d->nattrs ? (hdal_attribute_type)(d->attrs[i].type_flags & HDAL_ATTRIBUTE_TYPE_MASK) : HDAL_ATTRIBUTE_STRING;
}

HDAL_API unsigned hdal_device_attribute_flags(const hdal_device *d, size_t i) {
  return i < d->nattrs ? d->attrs[i].type_flags & ~HDAL_ATTRIBUTE_TYPE_MASK : 0;
}

HDAL_API bool hdal_device_attribute_uint(const hdal_device *d, size_t i, uint64_t *value) {
  if (i >= d->nattrs || (d->attrs[i].type_flags & HDAL_ATTRIBUTE_TYPE_MASK) != HDAL_ATTRIBUTE_UINT) return false;
  if (value) *value = d->attrs[i].number;
  return true;
}

HDAL_API bool hdal_device_attribute_bool(const hdal_device *d, size_t i, bool *value) {
  if (i >= d->nattrs || (d->attrs[i].type_flags & HDAL_ATTRIBUTE_TYPE_MASK) != HDAL_ATTRIBUTE_BOOL) return false;
  if (value) *value = d->attrs[i].number != 0;
  return true;
}

HDAL_API hdal_error *hdal_device_work_stream(hdal_device *d, intptr_t *stream) {
  if (stream) *stream = 0;
  if (!d || !stream) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_work_stream: device or stream is NULL");
  hdal_error *e = hdal__check_target(d, d->ctx, "hdal_device_work_stream");
  return e ? e : hdal__op_work_stream(d, stream);
}

HDAL_API hdal_error *hdal_device_synchronize(const hdal_device *d) {
  if (!d) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_synchronize: device is NULL");
  hdal_error *e = hdal__check_target(d, d->ctx, "hdal_device_synchronize");
  return e ? e : hdal__op_synchronize(d);
}

HDAL_API hdal_error *hdal_device_native_handle(const hdal_device *d, hdal_native_handle which, intptr_t *out) {
  if (out) *out = 0;
  if (!d) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_native_handle: device is NULL");
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_native_handle: out is NULL");
  const char *name = hdal_native_handle_name(which); /* words.c: NULL, no kind */
  if (!name)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_native_handle: unknown native handle kind %d", (int)which);
  hdal_error *e = hdal__check_target(d, d->ctx, "hdal_device_native_handle");
  if (e) return e;
  if (hdal__op_native_handle(d, which, out, &e)) {
    if (e) *out = 0;
    return e;
  }
  *out = 0;
  return hdal__error_new(HDAL_NOT_FOUND, "hdal_device_native_handle: device %d (%s) has no %s", d->id, d->platform,
                         name);
}
