/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — contexts: what the caller's options, else the environment, ask
 * of one (one table), its making and its end, and its accessors.  Which
 * backends it has is backend_list.c's, their discovery and end discovery.c's,
 * their status backend_status.c's, what a backend may call host_services.c's. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "backend_list.h"
#include "binding.h"
#include "device_table.h"
#include "discovery.h"
#include "faces.h"
#include "hwloc_policy.h"
#include "pool.h"
#include "selector.h"

/* ---- settings: each from its option, else its variable ---- */

/* What the caller's options, else the environment, ask of a new context. */
typedef struct {
  int process_index, process_count; /* 0 of 1 unless given */
  int local_rank, local_size;       /* 0 of 0 unless given: the launcher's then (faces.c) */
  bool hide_faces, debug, pool_caching;
  hdal__binding binding;
  hdal__cpu_binding cpu_binding;    /* HDAL_CPU_BINDING: applied once the devices are known (binding.c) */
  hdal__pool_limit pool_limit;
  hdal__selector *selector;         /* owned; NULL selects every device */
  hdal__backend_selection backends; /* owned */
  const char *backends_who;         /* where the backend selection came from, for its errors */
  const char *backend_path;         /* NULL: the install directory */
} settings;

static void settings_free(settings *s) {
  hdal__selector_free(s->selector);
  s->selector = NULL;
  hdal__backend_selection_free(&s->backends);
}

/* The parsers, one per setting: the text (NULL when neither option nor variable gives one) into *s, or
 * INVALID_ARGUMENT naming `who`, the option or variable it came from. */
static hdal_error *read_hide_faces(const char *text, const char *who, settings *s) {
  s->hide_faces = !text || !*text || !strcmp(text, "1");
  if (s->hide_faces || !strcmp(text, "0")) return NULL;
  int shown = strlen(text) > 64 ? 64 : (int)strlen(text);
  return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: '%.*s%s' is neither 0 (keep every face) nor 1 (hide)", who,
                         shown, text, shown < (int)strlen(text) ? "..." : "");
}

static hdal_error *read_gpu_binding(const char *text, const char *who, settings *s) {
  return hdal__binding_parse(text, who, s->local_rank, s->local_size, &s->binding);
}

static hdal_error *read_cpu_binding(const char *text, const char *who, settings *s) {
  return hdal__cpu_binding_parse(text, who, &s->cpu_binding);
}

static hdal_error *read_pool_limit(const char *text, const char *who, settings *s) {
  return hdal__pool_parse_limit(text, who, &s->pool_limit);
}

static hdal_error *read_device_selector(const char *text, const char *who, settings *s) {
  return hdal__selector_parse(text, who, &s->selector);
}

static hdal_error *read_backends(const char *text, const char *who, settings *s) {
  s->backends_who = who;
  return hdal__backend_selection_parse(text, &s->backends);
}

static hdal_error *read_backend_path(const char *text, const char *who, settings *s) {
  s->backend_path = text;
  return NULL;
}

/* HDAL_DEBUG: set, not empty and not "0". */
static hdal_error *read_debug(const char *text, const char *who, settings *s) {
  s->debug = text && *text && strcmp(text, "0") != 0;
  return NULL;
}

/* HDAL_MEMORY_POOL: anything but "0" keeps freed device memory for reuse. */
static hdal_error *read_memory_pool(const char *text, const char *who, settings *s) {
  s->pool_caching = !text || strcmp(text, "0") != 0;
  return NULL;
}

/* The field of hdal_context_options a setting reads: its name as errors give it, and where it lies (the caller's
 * struct holds it when its struct_size reaches the end). */
#define OPTION(field) \
  "hdal_context_options: " #field, offsetof(hdal_context_options, field), \
      offsetof(hdal_context_options, field) + sizeof(((hdal_context_options *)0)->field)

/* Every setting with a variable, in the order they are read (an error names the first wrong one; the GPU
 * binding takes the local rank read before).  Each comes from its option when the caller's struct holds it
 * and it is not NULL, else from its variable.  Variables that choose what code runs are not trusted in setuid
 * and setgid programs (secure_getenv: NULL there), as glibc's loader does not trust LD_LIBRARY_PATH; a
 * program's own options still are (docs/design.md).  The others load no code, but are read the same way:
 * one rule for every HDAL_ variable. */
static const struct {
  const char *option; /* "hdal_context_options: <field>"; NULL: a variable only */
  size_t at, end;     /* the field's place */
  const char *variable;
  hdal_error *(*read)(const char *text, const char *who, settings *s);
} settings_table[] = {
    {OPTION(hide_faces), "HDAL_HIDE_FACES", read_hide_faces},
    {OPTION(gpu_binding), "HDAL_GPU_BINDING", read_gpu_binding},
    {NULL, 0, 0, "HDAL_CPU_BINDING", read_cpu_binding},
    {OPTION(memory_pool_limit), "HDAL_MEMORY_POOL_LIMIT", read_pool_limit},
    {OPTION(device_selector), "HDAL_DEVICE_SELECTOR", read_device_selector},
    {OPTION(backends), "HDAL_BACKENDS", read_backends},
    {OPTION(backend_path), "HDAL_BACKEND_PATH", read_backend_path},
    {NULL, 0, 0, "HDAL_DEBUG", read_debug},
    {NULL, 0, 0, "HDAL_MEMORY_POOL", read_memory_pool},
};

/* An index given with its count, options only (process_index of process_count, local_rank of local_size): a
 * count of 0 says nothing; any other must hold the index. */
static hdal_error *read_range(const char *index_name, int index, const char *count_name, int count, int *index_out,
                              int *count_out) {
  if (count == 0) return NULL;
  if (count < 0 || index < 0 || index >= count)
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_options: %s %d is not in [0, %s %d)", index_name,
                           index, count_name, count);
  *index_out = index;
  *count_out = count;
  return NULL;
}

/* The pair of fields `index`, `count` of opts (NULL: none) into the settings' of those names. */
#define READ_RANGE(opts, s, index, count)                                                                            \
  ((opts) && HDAL__HAS_FIELD(opts, hdal_context_options, count)                                                      \
       ? read_range(#index, (opts)->index, #count, (opts)->count, &(s)->index, &(s)->count)                          \
       : NULL)

/* *s from opts (NULL: none) and the environment; on error, *s holds nothing. */
static hdal_error *settings_read(const hdal_context_options *opts, settings *s) {
  *s = (settings){.process_count = 1};
  if (opts && !HDAL__HAS_FIELD(opts, hdal_context_options, backends))
    return hdal__struct_size_error("hdal_context_options", opts->struct_size);
  hdal_error *err = READ_RANGE(opts, s, process_index, process_count);
  if (!err) err = READ_RANGE(opts, s, local_rank, local_size);
  for (size_t i = 0; !err && i < sizeof settings_table / sizeof *settings_table; i++) {
    const char *text = opts && settings_table[i].option && opts->struct_size >= settings_table[i].end
                           ? *(const char *const *)((const char *)opts + settings_table[i].at)
                           : NULL;
    const char *who = text ? settings_table[i].option : settings_table[i].variable;
    err = settings_table[i].read(text ? text : secure_getenv(settings_table[i].variable), who, s);
  }
  if (err) settings_free(s);
  return err;
}

/* ---- making and ending ---- */

/* A new context's fields from its settings; ctx->debug is set before, for the module path's diagnostics. */
static void context_init(hdal_context *ctx, const settings *s) {
  atomic_init(&ctx->refs, 1);
  atomic_init(&ctx->dying, false);
  ctx->forks = hdal__fork_watch();
  ctx->process_index = s->process_index;
  ctx->process_count = s->process_count;
  ctx->hide_faces = s->hide_faces;
  ctx->binding = s->binding;
  /* HDAL_NO_RECYCLE: no buffer object and no device memory kept for reuse. */
  hdal__recycle_init();
  ctx->pool_caching = s->pool_caching && !hdal__no_recycle;
  ctx->pool_limit = s->pool_limit;
  pthread_mutex_init(&ctx->lock, NULL);
}

void hdal__context_free(hdal_context *ctx) {
  for (size_t i = 0; i < ctx->ndevices; i++)
    if (!ctx->devices[i]->backend) hdal__device_free(ctx->devices[i]); /* other processes' */
  hdal__backends_free(ctx);
  free(ctx->devices);
  free(ctx->selected_by);
  hdal__hardware_forget(ctx);
  hdal__hosts_free(ctx);
  hdal__topology_free(ctx->pci_topology);
  free(ctx->topology_detail);
  if (ctx->hwloc_held) hdal__hwloc_release(); /* after every topology of the context */
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

HDAL_API hdal_error *hdal_context_create(const hdal_context_options *opts, hdal_context **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_create: out is NULL");
  *out = NULL;
  settings s;
  hdal_error *err = settings_read(opts, &s);
  if (err) return err;
  hdal_context *ctx = calloc(1, sizeof *ctx);
  if (ctx) ctx->debug = s.debug;
  char *path = ctx ? hdal__module_search_path(ctx, s.backend_path) : NULL;
  if (!path) {
    free(ctx);
    settings_free(&s);
    return hdal__error_oom();
  }
  context_init(ctx, &s);

  err = hdal__backends_list(ctx, &s.backends, path, s.backends_who);
  ctx->selector = s.selector;
  if (!err) err = hdal__selector_check_backends(s.selector, ctx);
  if (!err) {
    /* hwloc's plugins, loaded by the policy, before the discovery threads
     * start; the environment is left as found (docs/hwloc.md). */
    hdal__hwloc_hold(0);
    ctx->hwloc_held = true;
    err = hdal__discover_all(ctx, path);
    hdal__hwloc_settled();
  }
  ctx->selector = NULL;
  /* A device the selector left out is not there to route to: the refusal says why (hdal__route). */
  if (!err && s.selector && !(ctx->selected_by = hdal__selector_describe(s.selector))) err = hdal__error_oom();
  settings_free(&s);
  if (!err && !(ctx->own_host = hdal__host_local())) err = hdal__error_oom();
  if (!err) err = hdal__table_build(ctx);
  /* Last: nothing after it fails, so that a context refused leaves the process unbound. */
  if (!err) err = hdal__cpu_binding_apply(ctx, s.cpu_binding);
  free(path);
  if (err) {
    hdal__context_free(ctx);
    return err;
  }
  *out = ctx;
  return NULL;
}

/* ---- accessors ---- */

HDAL_API int hdal_context_process_index(const hdal_context *ctx) { return ctx->process_index; }
HDAL_API int hdal_context_process_count(const hdal_context *ctx) { return ctx->process_count; }
HDAL_API size_t hdal_context_device_count(const hdal_context *ctx) { return ctx->ndevices; }

HDAL_API hdal_device *hdal_context_device(const hdal_context *ctx, size_t index) {
  return index < ctx->ndevices ? ctx->devices[index] : NULL;
}

HDAL_API size_t hdal_context_backend_count(const hdal_context *ctx) { return ctx->nbackends; }

HDAL_API const char *hdal_context_backend_name(const hdal_context *ctx, size_t i) {
  return i < ctx->nbackends ? ctx->backends[i].name : NULL;
}

HDAL_API const char *hdal_context_backend_status(const hdal_context *ctx, size_t i) {
  return i < ctx->nbackends ? ctx->backends[i].status : NULL;
}

HDAL_API bool hdal_context_backend_state(const hdal_context *ctx, size_t i, hdal_backend_state *out) {
  if (i >= ctx->nbackends || !out || !HDAL__HAS_FIELD(out, hdal_backend_state, state)) return false;
  const hdal__backend *b = &ctx->backends[i];
  out->state = b->kind;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, device_count))
    out->device_count = b->kind == HDAL_BACKEND_OK ? b->ndevices : 0;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, refused_count)) out->refused_count = b->nrefused;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, reason)) out->reason = b->reason;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, unselected_count)) out->unselected_count = b->nunselected;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, hidden_count)) out->hidden_count = b->nhidden;
  if (HDAL__HAS_FIELD(out, hdal_backend_state, owned_elsewhere_count)) out->owned_elsewhere_count = b->nowned_elsewhere;
  return true;
}
