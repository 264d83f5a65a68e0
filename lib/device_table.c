/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the device table: the one device order and numbering, other
 * processes' devices inserted into it, DLDevice -> device routing through the
 * owner table, and whether a device is served here (docs/reference.md,
 * "Contexts, backends and devices"; docs/dlpack.md, "Routing").  context.c
 * keeps options, discovery.c the backends' lifecycle; process_table.c only
 * encodes and decodes. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device_ops.h"
#include "device_table.h"

/* backends/registry, in its order, through configure (config.h). */
const char *const hdal__known_backends[HDAL__NKNOWN_BACKENDS] = {HDAL__KNOWN_BACKENDS};

/* The documented backend order (docs/reference.md): backends/registry's, then the others by name.
 * It depends on names only, so that every process orders every other
 * process's devices the same way, whatever backends it has itself. */
static int cmp_backend_names(const char *a, const char *b) {
  size_t ra = HDAL__NKNOWN_BACKENDS, rb = HDAL__NKNOWN_BACKENDS;
  for (size_t i = 0; i < HDAL__NKNOWN_BACKENDS; i++) {
    if (!strcmp(a, hdal__known_backends[i])) ra = i;
    if (!strcmp(b, hdal__known_backends[i])) rb = i;
  }
  if (ra != rb) return ra < rb ? -1 : 1;
  return ra == HDAL__NKNOWN_BACKENDS ? strcmp(a, b) : 0;
}

static const char *device_backend_name(const hdal_device *d) {
  return d->backend ? d->backend->name : d->remote_backend;
}

int hdal__device_order(const void *pa, const void *pb) {
  const hdal_device *a = *(hdal_device *const *)pa, *b = *(hdal_device *const *)pb;
  if (a->process_index != b->process_index) return a->process_index < b->process_index ? -1 : 1;
  int c = cmp_backend_names(device_backend_name(a), device_backend_name(b));
  if (c) return c;
  return (a->local_hardware_id > b->local_hardware_id) - (a->local_hardware_id < b->local_hardware_id);
}

/* Sorts ctx->devices into the documented order (docs/reference.md: process,
 * backend, local id) and numbers them densely. */
static void renumber(hdal_context *ctx) {
  qsort(ctx->devices, ctx->ndevices, sizeof *ctx->devices, hdal__device_order);
  for (size_t i = 0; i < ctx->ndevices; i++) ctx->devices[i]->id = (int)i;
}

hdal_error *hdal__table_build(hdal_context *ctx) {
  size_t n = 0;
  for (size_t i = 0; i < ctx->nbackends; i++) n += ctx->backends[i].ndevices;
  ctx->devices_cap = n ? n : 1;
  ctx->devices = calloc(ctx->devices_cap, sizeof *ctx->devices);
  if (!ctx->devices || !hdal__hosts_reserve(ctx, 1)) return hdal__error_oom();
  if (n) hdal__hosts_place(ctx, ctx->own_host, ctx->process_index);
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    for (size_t j = 0; j < b->ndevices; j++) {
      b->devices[j]->process_index = ctx->process_index;
      b->devices[j]->host = ctx->own_host;
      ctx->devices[ctx->ndevices++] = b->devices[j];
    }
    /* Import routing: the first backend (in order) that serves a device type owns it. */
    if (b->desc && b->discovered && b->desc->buffer_ops)
      for (unsigned t = 0; t < 64; t++)
        if ((b->desc->dl_device_types & HDAL_DL_TYPE_BIT(t)) && !ctx->owner_of_dl_type[t])
          ctx->owner_of_dl_type[t] = b;
  }
  renumber(ctx);
  return NULL;
}

static bool process_present(const hdal_context *ctx, int p) {
  size_t lo = 0, hi = ctx->ndevices; /* the table is sorted by process index */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int q = ctx->devices[mid]->process_index;
    if (q == p) return true;
    if (q < p) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

hdal_error *hdal__table_add_process(hdal_context *ctx, int process_index, hdal_device **devs, size_t n,
                                    char *host_name, char *host_id) {
  pthread_mutex_lock(&ctx->lock);
  if (process_present(ctx, process_index)) {
    pthread_mutex_unlock(&ctx->lock);
    free(host_name);
    free(host_id);
    hdal__device_list_free(devs, n);
    return hdal__error_new(HDAL_ALREADY_EXISTS, "hdal_context_add_process: process %d was already added",
                           process_index);
  }
  /* The same order as every other process gives these devices (docs/reference.md). */
  qsort(devs, n, sizeof *devs, hdal__device_order);
  for (size_t i = 1; i < n; i++)
    if (!hdal__device_order(&devs[i - 1], &devs[i])) {
      pthread_mutex_unlock(&ctx->lock);
      hdal_error *dup = hdal__error_new(HDAL_INVALID_ARGUMENT,
                                        "hdal_context_add_process: malformed process table: two devices of backend "
                                        "'%s' have local hardware id %d",
                                        devs[i]->remote_backend, devs[i]->local_hardware_id);
      free(host_name);
      free(host_id);
      hdal__device_list_free(devs, n); /* after the message, which names them */
      return dup;
    }
  /* A process without devices leaves no trace but the count; its host none either. */
  if (!n) {
    if (ctx->process_count <= process_index) ctx->process_count = process_index + 1;
    pthread_mutex_unlock(&ctx->lock);
    free(host_name);
    free(host_id);
    free(devs);
    return NULL;
  }
  /* Its host: one the context knows (this process's own included), or a new one (docs/dlpack.md, "Hosts"). */
  hdal__machine *host = hdal__hosts_find(ctx, host_name, host_id), *fresh = NULL;
  if (host) {
    free(host_name);
    free(host_id);
  } else {
    host = fresh = hdal__host_new(host_name, host_id);
  }
  if (!host || (host->index < 0 && !hdal__hosts_reserve(ctx, 1))) {
    pthread_mutex_unlock(&ctx->lock);
    hdal__host_free(fresh);
    hdal__device_list_free(devs, n);
    return hdal__error_oom();
  }
  /* Grow geometrically, so that adding P processes costs O(devices added) each. */
  if (ctx->ndevices + n > ctx->devices_cap) {
    size_t want = ctx->devices_cap * 2 > ctx->ndevices + n ? ctx->devices_cap * 2 : ctx->ndevices + n;
    hdal_device **v = realloc(ctx->devices, want * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&ctx->lock);
      hdal__host_free(fresh);
      hdal__device_list_free(devs, n);
      return hdal__error_oom();
    }
    ctx->devices = v;
    ctx->devices_cap = want;
  }
  for (size_t i = 0; i < n; i++) devs[i]->host = host;
  hdal__hosts_place(ctx, host, process_index);
  hdal__hardware_forget(ctx);
  /* The table is sorted by process index and the new devices are in order
   * among themselves: insert them before the first device of a later process
   * and renumber from there.  Processes usually come in increasing index, or
   * all before this process's own devices (MPI ranks after rank 0), so only
   * a short tail moves. */
  size_t lo = 0, hi = ctx->ndevices;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ctx->devices[mid]->process_index < process_index) lo = mid + 1;
    else hi = mid;
  }
  memmove(ctx->devices + lo + n, ctx->devices + lo, (ctx->ndevices - lo) * sizeof *ctx->devices);
  memcpy(ctx->devices + lo, devs, n * sizeof *devs);
  ctx->ndevices += n;
  for (size_t i = lo; i < ctx->ndevices; i++) ctx->devices[i]->id = (int)i;
  if (ctx->process_count <= process_index) ctx->process_count = process_index + 1;
  pthread_mutex_unlock(&ctx->lock);
  free(devs);
  return NULL;
}

HDAL_API const char *hdal_dlpack_device_type_name(DLDeviceType type) {
  int32_t t = (int32_t)type;
  static const char *const names[] = {
      [kDLCPU] = "kDLCPU",         [kDLCUDA] = "kDLCUDA",         [kDLCUDAHost] = "kDLCUDAHost",
      [kDLOpenCL] = "kDLOpenCL",   [kDLVulkan] = "kDLVulkan",     [kDLMetal] = "kDLMetal",
      [kDLVPI] = "kDLVPI",         [kDLROCM] = "kDLROCM",         [kDLROCMHost] = "kDLROCMHost",
      [kDLExtDev] = "kDLExtDev",   [kDLCUDAManaged] = "kDLCUDAManaged", [kDLOneAPI] = "kDLOneAPI",
      [kDLWebGPU] = "kDLWebGPU",   [kDLHexagon] = "kDLHexagon",   [kDLMAIA] = "kDLMAIA",
      [18] = "kDLTrn", /* DLPack 1.2 (AWS Trainium), which the 0.6 and 1.0 headers lack */
      /* Reserved after DLPack 1.3, minor version unchanged (enumeration values only); by number, as
       * include/hdal/dlpack.h may not name them yet.  JAX 0.12 exports TPU host memory as 20. */
      [19] = "kDLTPU",     [20] = "kDLTPUHost",     [21] = "kDLAscend",
  };
  return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : NULL;
}

hdal_error *hdal__route(hdal_context *ctx, const DLTensor *t, hdal_device **out) {
  int32_t ty = t->device.device_type, id = t->device.device_id;
  hdal_error *e;
  hdal__backend *b = ty >= 0 && ty < 64 ? ctx->owner_of_dl_type[ty] : NULL;
  if (!b && hdal__host_readable_type(ty)) b = ctx->owner_of_dl_type[kDLCPU]; /* pinned, managed: host memory */
  if (!b)
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "No hdal backend serves DLPack device type %s (%" PRId32 "), device id %" PRId32,
                           hdal__dl_type_name(ty), ty, id);
  size_t idx;
  if ((e = hdal__op_route(b, t, &idx))) return e;
  if (idx != SIZE_MAX) {
    /* The backend's own index (the order it added its devices), of a device hdal kept: the selector and
     * the GPU binding leave gaps, so the place in b->devices is not it. */
    if (idx < b->ndevices && b->devices[idx]->added == idx) {
      *out = b->devices[idx];
      return NULL;
    }
    for (size_t i = 0; i < b->ndevices; i++)
      if (b->devices[i]->added == idx) {
        *out = b->devices[i];
        return NULL;
      }
    /* Host memory is every CPU device's: a NUMA node left out routes to the first one kept. */
    if (b->ndevices && b->devices[0]->host_rule) {
      *out = b->devices[0];
      return NULL;
    }
  } else {
    for (size_t i = 0; i < b->ndevices; i++)
      if (b->devices[i]->dl.device_id == id) {
        *out = b->devices[i];
        return NULL;
      }
  }
  if (b->nunselected && ctx->selected_by) {
    /* The device may be there, left out by the selector (docs/reference.md, "Choosing devices"). */
    size_t found = b->ndevices + b->nunselected;
    char left[64];
    if (b->ndevices) snprintf(left, sizeof left, "left out %zu of the %zu", b->nunselected, found);
    else snprintf(left, sizeof left, "left out all %zu", found);
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack device (%s, %" PRId32 ") is out of range: backend '%s' has %zu device%s: %s %s it found; "
                           "add \"%s:*\" to keep them",
                           hdal__dl_type_name(ty), id, b->name, b->ndevices, b->ndevices == 1 ? "" : "s", ctx->selected_by,
                           left, b->name);
  }
  if (b->nowned_elsewhere) {
    /* The device may be another local rank's GPU (docs/reference.md, "GPUs per local rank"). */
    const hdal__binding *bd = &ctx->binding;
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "DLPack device (%s, %" PRId32 ") is out of range: backend '%s' has %zu device%s: %s left "
                           "%zu of the %zu it found to other local ranks (this is local rank %d of %d)",
                           hdal__dl_type_name(ty), id, b->name, b->ndevices, b->ndevices == 1 ? "" : "s", bd->who,
                           b->nowned_elsewhere, b->ndevices + b->nowned_elsewhere, bd->local_rank, bd->local_size);
  }
  return hdal__error_new(HDAL_INVALID_ARGUMENT,
                         "DLPack device (%s, %" PRId32 ") is out of range: backend '%s' has %zu device%s", hdal__dl_type_name(ty),
                         id, b->name, b->ndevices, b->ndevices == 1 ? "" : "s");
}

HDAL_API hdal_error *hdal_context_device_for_dlpack(hdal_context *ctx, DLDevice dl, hdal_device **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_device_for_dlpack: out is NULL");
  *out = NULL;
  if (!ctx) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_device_for_dlpack: context is NULL");
  /* A device alone is routed as a tensor without data: the backend's route
   * op knows its devices' numbering (docs/backend-abi.md). */
  DLTensor bare = {.device = dl};
  return hdal__route(ctx, &bare, out);
}
