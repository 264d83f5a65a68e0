/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — process tables (docs/dlpack.md, "Process tables"; docs/mpi.md): a portable description of
 * this process's devices, and adding another process's devices to a context.
 *
 * Format version 3, all integers little-endian, every length explicit and
 * bounded (docs/dlpack.md has the table):
 *   "HDPT" u16 version=3 u16 reserved=0 u32 total_length i32 process_index u32 ndevices
 *   ostr host_name, ostr host_id (docs/dlpack.md, "Hosts")
 *   per device: str backend, str platform, str kind, ostr reason,
 *               i32 local_hardware_id, u32 runtime_class, i32 dl_type, i32 dl_id,
 *               u64 memory_bytes, i32 numa_node, u32 nattrs,
 *               nattrs x (str key, str value, u32 type_and_flags)
 *   str: u32 length + bytes (no NUL);  ostr: u32 0xFFFFFFFF for none, else str.
 * Version 2 (hdal before hosts) has no host fields: its process is on a host
 * of its own, not known.  Version 1 (hdal before typed attributes) has no
 * type_and_flags either: its attributes are strings.  Both are still read.  A
 * blob is parsed whole into new device objects before the context changes. */
#include "config.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "device_table.h"

#define PT_MAGIC "HDPT"
#define PT_VERSION 3u
#define PT_VERSION_HOSTLESS 2u /* no host fields: still read */
#define PT_VERSION_UNTYPED 1u  /* no host fields, attributes without their type: still read */
#define PT_MAX_STRING HDAL__MAX_STRING /* what a device may hold */
#define PT_MAX_ATTRS 256u
#define PT_MAX_DEVICES 65536u
#define PT_NO_STRING 0xFFFFFFFFu

/* Does `value` read as type `type` (canonical decimal below 2^64; yes/no, or true/false as tables of
 * hdal before module ABI 5 may say)?  What it reads as in *number (a BOOL: 0 or 1; else 0). */
static bool value_read(unsigned type, const char *value, uint64_t *number) {
  *number = 0;
  switch (type) {
  case HDAL_ATTRIBUTE_STRING: return true;
  case HDAL_ATTRIBUTE_UINT: {
    /* Canonical decimal only: one spelling per number, nothing a reader could take two ways. */
    size_t n = strspn(value, "0123456789");
    if (!n || value[n] || (value[0] == '0' && n > 1) || n > 20) return false;
    if (n == 20 && strcmp(value, "18446744073709551615") > 0) return false;
    for (size_t i = 0; i < n; i++) *number = *number * 10 + (uint64_t)(value[i] - '0');
    return true;
  }
  case HDAL_ATTRIBUTE_BOOL:
    if (!strcmp(value, "yes") || !strcmp(value, "true")) return *number = 1, true;
    return !strcmp(value, "no") || !strcmp(value, "false");
  default: return false;
  }
}

/* ---- writing ---- */

typedef struct {
  unsigned char *p;
  size_t len;
} writer;

static void put_bytes(writer *w, const void *b, size_t n) {
  if (w->p) memcpy(w->p + w->len, b, n);
  w->len += n;
}
static void put_u32(writer *w, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  put_bytes(w, b, 4);
}
static void put_u64(writer *w, uint64_t v) {
  put_u32(w, (uint32_t)v);
  put_u32(w, (uint32_t)(v >> 32));
}
static void put_str(writer *w, const char *s) {
  if (!s) {
    put_u32(w, PT_NO_STRING);
    return;
  }
  size_t n = strlen(s);
  if (n > PT_MAX_STRING) n = PT_MAX_STRING; /* never produce what the reader refuses */
  put_u32(w, (uint32_t)n);
  put_bytes(w, s, n);
}

static void write_table(const hdal_context *ctx, writer *w, uint32_t ndev) {
  put_bytes(w, PT_MAGIC, 4);
  put_u32(w, PT_VERSION); /* u16 version + u16 reserved, little-endian */
  size_t len_at = w->len;
  put_u32(w, 0);
  put_u32(w, (uint32_t)ctx->process_index);
  put_u32(w, ndev);
  put_str(w, ctx->own_host->name); /* valid, or NULL: host.c keeps no other */
  put_str(w, ctx->own_host->id);
  for (size_t i = 0; i < ctx->ndevices; i++) {
    const hdal_device *d = ctx->devices[i];
    if (!d->backend) continue;
    put_str(w, d->backend->name);
    put_str(w, d->platform);
    put_str(w, d->kind);
    put_str(w, d->runtime_class == HDAL_RUNTIME_PJRT ? NULL : d->reason ? d->reason : "");
    put_u32(w, (uint32_t)d->local_hardware_id);
    put_u32(w, (uint32_t)d->runtime_class);
    put_u32(w, (uint32_t)d->dl.device_type);
    put_u32(w, (uint32_t)d->dl.device_id);
    put_u64(w, d->memory_bytes);
    put_u32(w, (uint32_t)d->numa_node);
    size_t na = d->nattrs < PT_MAX_ATTRS ? d->nattrs : PT_MAX_ATTRS;
    put_u32(w, (uint32_t)na);
    for (size_t k = 0; k < na; k++) {
      put_str(w, d->attrs[k].key);
      put_str(w, d->attrs[k].value);
      put_u32(w, d->attrs[k].type_flags);
    }
  }
  if (w->p) {
    writer at = {w->p + len_at, 0};
    put_u32(&at, (uint32_t)w->len);
  }
}

HDAL_API hdal_error *hdal_context_export_devices(const hdal_context *ctx, void **blob, size_t *len) {
  if (!ctx || !blob || !len) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_export_devices: NULL argument");
  *blob = NULL;
  *len = 0;
  uint32_t ndev = 0;
  for (size_t i = 0; i < ctx->ndevices; i++) ndev += ctx->devices[i]->backend != NULL;
  if (ndev > PT_MAX_DEVICES)
    return hdal__error_new(HDAL_RESOURCE_EXHAUSTED, "hdal_context_export_devices: %u devices exceed the format's %u",
                           ndev, PT_MAX_DEVICES);
  writer w = {NULL, 0};
  write_table(ctx, &w, ndev); /* measure */
  w.p = malloc(w.len);
  if (!w.p) return hdal__error_oom();
  w.len = 0;
  write_table(ctx, &w, ndev);
  *blob = w.p;
  *len = w.len;
  return NULL;
}

/* ---- reading ---- */

typedef struct {
  const unsigned char *p;
  size_t len, pos;
  const char *why; /* first problem met */
  size_t why_at;
  char rule[96]; /* a device rule that a device breaks */
} reader;

static bool fail(reader *r, const char *why) {
  if (!r->why) {
    r->why = why;
    r->why_at = r->pos;
  }
  return false;
}
static bool get_u32(reader *r, uint32_t *v) {
  if (r->len - r->pos < 4) return fail(r, "truncated");
  const unsigned char *b = r->p + r->pos;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  r->pos += 4;
  return true;
}
static bool get_i32(reader *r, int32_t *v) {
  uint32_t u;
  if (!get_u32(r, &u)) return false;
  *v = (int32_t)u;
  return true;
}
static bool get_u64(reader *r, uint64_t *v) {
  uint32_t lo, hi;
  if (!get_u32(r, &lo) || !get_u32(r, &hi)) return false;
  *v = (uint64_t)hi << 32 | lo;
  return true;
}
/* A string (optional when `optional`); *out is NULL for "none". */
static bool get_str(reader *r, char **out, bool optional) {
  uint32_t n;
  *out = NULL;
  if (!get_u32(r, &n)) return false;
  if (n == PT_NO_STRING && optional) return true;
  if (n > PT_MAX_STRING) return fail(r, "string too long");
  if (r->len - r->pos < n) return fail(r, "truncated");
  if (memchr(r->p + r->pos, 0, n)) return fail(r, "NUL byte inside a string");
  if (!(*out = strndup((const char *)r->p + r->pos, n))) return fail(r, "out of memory");
  r->pos += n;
  return true;
}

/* A host's name or id (optional): refused, at its length field, when `valid` says no. */
static bool get_host_field(reader *r, char **out, bool (*valid)(const char *, size_t), const char *why) {
  size_t at = r->pos;
  if (!get_str(r, out, true)) return false;
  if (*out && !valid(*out, strlen(*out))) {
    free(*out);
    *out = NULL;
    r->pos = at;
    return fail(r, why);
  }
  return true;
}

static bool valid_backend_name(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

static hdal_device *read_device(reader *r, hdal_context *ctx, int process_index, uint32_t version) {
  hdal_device *d = hdal__device_new();
  if (!d) {
    fail(r, "out of memory");
    return NULL;
  }
  d->ctx = ctx;
  d->process_index = process_index;
  int32_t lid, dlt, dli, numa;
  uint32_t rc, na;
  if (!get_str(r, &d->remote_backend, false) || !get_str(r, &d->platform, false) || !get_str(r, &d->kind, false) ||
      !get_str(r, &d->reason, true) || !get_i32(r, &lid) || !get_u32(r, &rc) || !get_i32(r, &dlt) ||
      !get_i32(r, &dli) || !get_u64(r, &d->memory_bytes) || !get_i32(r, &numa) || !get_u32(r, &na))
    goto bad;
  if (!valid_backend_name(d->remote_backend)) {
    fail(r, "invalid backend name");
    goto bad;
  }
  /* The rules a backend's devices keep when added (hdal__device_rules_hold). */
  if (!hdal__device_rules_hold(lid, numa, dlt, r->rule, sizeof r->rule)) {
    fail(r, r->rule);
    goto bad;
  }
  if (!((rc == HDAL_RUNTIME_PJRT && !d->reason) || (rc == HDAL_RUNTIME_IFRT_NATIVE && d->reason))) {
    fail(r, "invalid runtime class (or a reason that does not match it)");
    goto bad;
  }
  if (na > PT_MAX_ATTRS) {
    fail(r, "too many attributes");
    goto bad;
  }
  d->local_hardware_id = lid;
  d->runtime_class = (hdal_runtime_class)rc;
  d->dl = (DLDevice){(DLDeviceType)dlt, dli};
  d->numa_node = numa;
  d->host_addressable = false;
  if (na) {
    /* Exactly sized: remote devices stay small when thousands of processes add theirs. */
    if (!(d->attrs = calloc(na, sizeof *d->attrs))) {
      fail(r, "out of memory");
      goto bad;
    }
    d->attrs_cap = na;
    for (; d->nattrs < na; d->nattrs++) {
      hdal__attribute *a = &d->attrs[d->nattrs];
      if (!get_str(r, &a->key, false) || !get_str(r, &a->value, false) ||
          (version != PT_VERSION_UNTYPED && !get_u32(r, &a->type_flags))) {
        free(a->key);
        free(a->value);
        goto bad;
      }
      if ((a->type_flags & ~HDAL__ATTRIBUTE_KNOWN) || (a->type_flags & HDAL_ATTRIBUTE_TYPE_MASK) > HDAL_ATTRIBUTE_BOOL) {
        r->pos -= 4;
        fail(r, "unknown attribute type or flags");
      } else if (!value_read(a->type_flags & HDAL_ATTRIBUTE_TYPE_MASK, a->value, &a->number)) {
        r->pos -= 4;
        fail(r, "attribute value does not read as its type");
      } else if ((a->type_flags & HDAL_ATTRIBUTE_TYPE_MASK) == HDAL_ATTRIBUTE_BOOL &&
                 strcmp(a->value, hdal__bool_word(a->number))) {
        /* One spelling, whatever the other process's hdal wrote. */
        char *w = strdup(hdal__bool_word(a->number));
        if (w) free(a->value), a->value = w;
        else fail(r, "out of memory");
      }
      if (r->why) {
        free(a->key);
        free(a->value);
        goto bad;
      }
      for (size_t k = 0; k < d->nattrs; k++)
        if (!strcmp(d->attrs[k].key, a->key)) {
          free(a->key);
          free(a->value);
          fail(r, "duplicate attribute key");
          goto bad;
        }
    }
  }
  return d;
bad:
  hdal__device_free(d);
  return NULL;
}

HDAL_API hdal_error *hdal_context_add_process(hdal_context *ctx, int process_index, const void *blob, size_t len) {
  if (!ctx || (!blob && len))
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_add_process: NULL %s", ctx ? "blob" : "context");
  if (process_index < 0)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_add_process: process index %d is negative", process_index);
  if (process_index == INT_MAX) /* the process count, an int, is the highest index + 1 */
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "hdal_context_add_process: process index %d cannot be counted: the process count would "
                           "exceed INT_MAX (%d)",
                           process_index, INT_MAX);
  if (process_index == ctx->process_index)
    return hdal__error_new(HDAL_ALREADY_EXISTS,
                           "hdal_context_add_process: process index %d is this process's own", process_index);

  reader r = {blob, len, 0, NULL, 0, ""};
  uint32_t version, total, ndev;
  char *host_name = NULL, *host_id = NULL;
  int32_t exporter;
  hdal_device **devs = NULL;
  size_t n = 0;
  if (len < 4 || memcmp(blob, PT_MAGIC, 4)) {
    fail(&r, "not an hdal process table (bad magic)");
    goto bad;
  }
  r.pos = 4;
  if (!get_u32(&r, &version) || !get_u32(&r, &total) || !get_i32(&r, &exporter) || !get_u32(&r, &ndev)) goto bad;
  if ((version & 0xFFFF) < PT_VERSION_UNTYPED || (version & 0xFFFF) > PT_VERSION || version >> 16) {
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "hdal_context_add_process: process table version %u (flags %u) is not supported: this hdal "
                           "reads versions %u to %u",
                           version & 0xFFFF, version >> 16, PT_VERSION_UNTYPED, PT_VERSION);
  }
  if (total != len) {
    r.pos = 8; /* the length field */
    fail(&r, total > len ? "truncated" : "length field does not match the blob's size");
    goto bad;
  }
  if (ndev > PT_MAX_DEVICES) {
    fail(&r, "too many devices");
    goto bad;
  }
  /* The host (docs/dlpack.md, "Hosts"): none in versions 1 and 2. */
  if (version > PT_VERSION_HOSTLESS &&
      (!get_host_field(&r, &host_name, hdal__host_name_valid, "invalid host name") ||
       !get_host_field(&r, &host_id, hdal__host_id_valid, "invalid host id")))
    goto bad;
  /* Each device takes at least 48 bytes: a count that cannot fit is refused before allocating. */
  if (ndev > (len - r.pos) / 48) {
    fail(&r, "truncated");
    goto bad;
  }
  if (!(devs = calloc(ndev ? ndev : 1, sizeof *devs))) {
    fail(&r, "out of memory");
    goto bad;
  }
  for (; n < ndev; n++)
    if (!(devs[n] = read_device(&r, ctx, process_index, version))) goto bad;
  if (r.pos != len) {
    fail(&r, "trailing bytes after the last device");
    goto bad;
  }

  return hdal__table_add_process(ctx, process_index, devs, n, host_name, host_id);

bad:;
  hdal_error *e = r.why && !strcmp(r.why, "out of memory")
                      ? hdal__error_oom()
                      : hdal__error_new(HDAL_INVALID_ARGUMENT,
                                        "hdal_context_add_process: malformed process table (%zu bytes): %s at byte %zu",
                                        len, r.why ? r.why : "invalid", r.why_at);
  hdal__device_list_free(devs, n);
  free(host_name);
  free(host_id);
  return e;
}
