/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — contexts: backend selection, concurrent discovery, the global device table. */
#include "config.h"
#include <ctype.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "hwloc_policy.h"
#include "device_table.h"
#include "lifetime.h"
#include "pool.h"
#include "selector.h"
#include "faces.h"
#include "../backends/builtin.h"


/* ---- the host table handed to backends ---- */

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
   * still add attributes to it), then dropped and counted (drop_refused). */
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

/* ---- selection: HDAL_BACKENDS ---- */

typedef struct {
  char **names;
  bool *exclude;
  size_t n;
  bool any_include;
} selection;

static void selection_free(selection *s) {
  hdal__string_list_free(s->names, s->n);
  free(s->exclude);
}

/* "cpu,opencl" keeps only those; "-cuda" drops one; both may mix ("cpu,-cpu" keeps nothing). */
static hdal_error *selection_parse(const char *spec, selection *s) {
  memset(s, 0, sizeof *s);
  if (!spec) return NULL;
  for (const char *p = spec; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != ',' && *p != ' ')
      return hdal__error_new(HDAL_INVALID_ARGUMENT,
                             "invalid backend list \"%s\": expected names separated by commas, "
                             "each optionally preceded by '-' (e.g. \"cpu,opencl\" or \"-cuda\")",
                             spec);
  size_t cap = 1; /* entries are separated by commas and spaces */
  for (const char *p = spec; *p; p++) cap += *p == ',' || *p == ' ';
  s->names = calloc(cap, sizeof *s->names);
  s->exclude = calloc(cap, sizeof *s->exclude);
  if (!s->names || !s->exclude) goto oom;
  for (const char *p = spec; *p;) {
    while (*p == ' ' || *p == ',') p++;
    bool ex = *p == '-';
    if (ex) p++;
    size_t len = strcspn(p, ", ");
    if (len == 0) {
      if (ex) {
        selection_free(s);
        return hdal__error_new(HDAL_INVALID_ARGUMENT, "invalid backend list \"%s\": '-' without a name", spec);
      }
      continue;
    }
    if (!(s->names[s->n] = strndup(p, len))) goto oom;
    s->exclude[s->n++] = ex;
    s->any_include |= !ex;
    p += len;
  }
  return NULL;
oom:
  selection_free(s);
  return hdal__error_oom();
}

static bool selection_enables(const selection *s, const char *name) {
  bool listed = false;
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->names[i], name)) {
      if (s->exclude[i]) return false;
      listed = true;
    }
  return listed || !s->any_include;
}

/* Whether `name` is asked for by name (and not dropped): "vulkan", not "-cuda" or everything by default. */
static bool selection_names(const selection *s, const char *name) {
  return s->any_include && selection_enables(s, name);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A name for a suggestion: without case, '-' and '_' ("Level_Zero" is levelzero). */
static bool same_but_spelling(const char *a, const char *b) {
  for (;; a++, b++) {
    while (*a == '-' || *a == '_') a++;
    while (*b == '-' || *b == '_') b++;
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    if (!*a) return true;
  }
}

hdal_error *hdal__backend_name_check(const hdal_context *ctx, const char *name, const char *who) {
  const char *like = NULL;
  size_t len = 0;
  for (size_t i = 0; i < ctx->nbackends; i++) {
    if (!strcmp(ctx->backends[i].name, name)) return NULL;
    if (!like && same_but_spelling(ctx->backends[i].name, name)) like = ctx->backends[i].name;
    len += strlen(ctx->backends[i].name) + 2;
  }
  char *known = malloc(len + 1), *w = known;
  if (!known) return hdal__error_oom();
  *w = '\0';
  for (size_t i = 0; i < ctx->nbackends; i++)
    w += sprintf(w, "%s%s", i ? ", " : "", ctx->backends[i].name);
  /* A name is shown to 64 characters: a list may hold one of 64 KiB. */
  int shown = strlen(name) > 64 ? 64 : (int)strlen(name);
  hdal_error *e = hdal__error_new(HDAL_INVALID_ARGUMENT, "%s%sunknown backend '%.*s%s'%s%s%s; known: %s",
                                  who ? who : "", who ? ": " : "", shown,
                                  name, shown < (int)strlen(name) ? "..." : "", like ? " (did you mean '" : "",
                                  like ? like : "", like ? "'?)" : "", known);
  free(known);
  return e;
}

/* The context's backends: the known ones, then the modules found on the path,
 * by name.  A name the selection gives (to keep or to leave out) that is none
 * of them is an error, which names those that are (docs/reference.md,
 * "Backend names"): a misspelt "-openCL" must not pass for "nothing left out". */
static hdal_error *backends_list(hdal_context *ctx, const selection *sel, const char *path, const char *who) {
  size_t nextra = 0;
  char **extra = NULL, **files = NULL;
  hdal_error *err = hdal__module_scan(path, &extra, &files, &nextra);
  if (err) return err;
  size_t cap = HDAL__NKNOWN_BACKENDS + nextra;
  char **names = calloc(cap, sizeof *names);
  size_t n = 0;
  if (!names) goto oom;
  for (size_t i = 0; i < HDAL__NKNOWN_BACKENDS; i++)
    if (!(names[n++] = strdup(hdal__known_backends[i]))) goto oom;
  size_t first_extra = n;
  for (size_t i = 0; i < nextra; i++)
    if (!hdal__string_list_has(names, n, extra[i]) && !(names[n++] = strdup(extra[i]))) goto oom;
  qsort(names + first_extra, n - first_extra, sizeof *names, cmp_str);

  ctx->backends = calloc(n, sizeof *ctx->backends);
  if (!ctx->backends) goto oom;
  ctx->nbackends = n;
  for (size_t i = 0; i < n; i++) {
    hdal__backend *b = &ctx->backends[i];
    b->ctx = ctx;
    b->name = names[i];
    b->enabled = selection_enables(sel, names[i]);
    b->named = selection_names(sel, names[i]);
    for (size_t k = 0; k < nextra; k++)
      if (!strcmp(extra[k], names[i])) b->file = files[k], files[k] = NULL; /* the backend's now */
  }
  free(names);
  hdal__string_list_free(extra, nextra);
  hdal__string_list_free(files, nextra);
  for (size_t i = 0; i < sel->n; i++)
    if ((err = hdal__backend_name_check(ctx, sel->names[i], who))) return err; /* the caller frees ctx */
  return NULL;
oom:
  hdal__string_list_free(names, n);
  hdal__string_list_free(extra, nextra);
  hdal__string_list_free(files, nextra);
  return hdal__error_oom();
}

/* ---- discovery, concurrent ---- */

/* By local hardware id, then in the order the backend added them. */
static int cmp_local_id(const void *a, const void *b) {
  const hdal_device *p = *(hdal_device *const *)a, *q = *(hdal_device *const *)b;
  int x = p->local_hardware_id, y = q->local_hardware_id;
  if (x != y) return (x > y) - (x < y);
  return (p->id > q->id) - (p->id < q->id);
}

/* Drops the devices that break a rule (docs/backend-abi.md), a second device
 * of a local hardware id among them; the devices are sorted.  The count and
 * the first reason in *first (NULL when none, or out of memory). */
static size_t drop_refused(hdal__backend *b, char **first) {
  size_t kept = 0, refused = 0;
  *first = NULL;
  for (size_t i = 0; i < b->ndevices; i++) {
    hdal_device *d = b->devices[i];
    char why[96];
    bool holds = hdal__device_rules_hold(d->local_hardware_id, d->numa_node, d->dl.device_type, why, sizeof why);
    if (holds && kept && b->devices[kept - 1]->local_hardware_id == d->local_hardware_id)
      snprintf(why, sizeof why, "local hardware id %d given twice", d->local_hardware_id);
    else if (holds) {
      b->devices[kept++] = d;
      continue;
    }
    hdal__debug(b->ctx, b->name, "device refused: %s", why);
    if (!refused++) *first = strdup(why);
    hdal__device_free(d);
  }
  b->ndevices = kept;
  return refused;
}

static void backend_drop_devices(hdal__backend *b) {
  for (size_t i = 0; i < b->ndevices; i++) hdal__device_free(b->devices[i]);
  free(b->devices);
  b->devices = NULL;
  b->ndevices = b->devices_cap = 0;
}

/* The CPU backend is built in; every other one is a module. */
static bool built_in(const hdal__backend *b) { return !strcmp(b->name, "cpu"); }

/* ---- statuses: data first (hdal_context_backend_state), the text made from it ---- */

/* The reason of a backend whose own reason or status could not be allocated. */
static char out_of_memory[] = "out of memory";

static void backend_set_reason(hdal__backend *b, char *reason) {
  if (b->reason != out_of_memory) free(b->reason);
  b->reason = reason;
}

/* The status text of b's state, which the tests hold byte for byte (docs/reference.md
 * gives its forms); NULL when out of memory. */
static char *status_text(const hdal__backend *b) {
  size_t found = b->ndevices + b->nunselected;
  const char *s = found == 1 ? "" : "s";
  char head[640];
  switch (b->kind) {
  case HDAL_BACKEND_DISABLED: return strdup(hdal_backend_state_name(b->kind));
  case HDAL_BACKEND_OK:
    if (b->nunselected)
      snprintf(head, sizeof head, "%s: %zu of %zu device%s selected by %s", hdal_backend_state_name(b->kind),
               b->ndevices, found, s, b->ctx->selector ? hdal__selector_who(b->ctx->selector) : "the device selector");
    else
      snprintf(head, sizeof head, "%s: %zu device%s", hdal_backend_state_name(b->kind), b->ndevices, s);
    /* What the rules over whole GPUs took (faces.c): the binding's, then the narrowed runtimes'. */
    if (b->nowned_elsewhere) {
      const hdal__binding *bd = &b->ctx->binding;
      size_t at = strlen(head);
      snprintf(head + at, sizeof head - at, "; %zu owned by other local ranks (%s: local rank %d of %d)",
               b->nowned_elsewhere, bd->who, bd->local_rank, bd->local_size);
    }
    if (b->nhidden) {
      size_t at = strlen(head);
      hdal__faces_hidden_text(b, head + at, sizeof head - at);
    }
    if (!b->nrefused) return strdup(head);
    if (b->nrefused == 1) return hdal__strdup_printf("%s; 1 refused: %s", head, b->reason);
    return hdal__strdup_printf("%s; %zu refused: %s (and %zu more)", head, b->nrefused, b->reason, b->nrefused - 1);
  default: return hdal__strdup_printf("%s: %s", hdal_backend_state_name(HDAL_BACKEND_UNAVAILABLE), b->reason);
  }
}

/* Makes b stopped in state `kind` (UNAVAILABLE or FAILED) for `reason`, taken
 * (NULL: out of memory), and its status text with it (NULL when out of memory). */
static void backend_stopped(hdal__backend *b, hdal_backend_state_kind kind, char *reason) {
  b->kind = kind;
  b->nrefused = 0;
  backend_set_reason(b, reason ? reason : out_of_memory);
  free(b->status);
  b->status = status_text(b);
}

static void backend_unavailable(hdal__backend *b, char *reason) {
  backend_stopped(b, HDAL_BACKEND_UNAVAILABLE, reason);
}

static void discover_one(hdal__backend *b, const char *path) {
  char *why_not;
  if (built_in(b))
    b->desc = &hdal__cpu_backend;
  else if (!hdal__module_load(b, path, &why_not)) {
    backend_unavailable(b, why_not);
    return;
  }
  if (b->module && hdal__fork_runtime_left_behind(b->name)) {
    backend_unavailable(b, hdal__strdup_printf("this process is a fork() child of one that started the %s "
                                                     "runtime, which does not survive fork()", b->name));
    return;
  }

  hdal_error *err = b->desc->discover(&hdal__host, b, &b->state);
  if (!err && b->module) hdal__fork_runtime_started(b->name);
  if (err) {
    backend_drop_devices(b);
    /* Nothing there to run, or a runtime that broke (hdal_backend_state_kind). */
    bool absent = err->code == HDAL_UNAVAILABLE || err->code == HDAL_NOT_FOUND;
    backend_stopped(b, absent ? HDAL_BACKEND_UNAVAILABLE : HDAL_BACKEND_FAILED, strdup(err->message));
    hdal__debug(b->ctx, b->name, "%s", b->status ? b->status : "unavailable");
    hdal_error_destroy(err);
    return;
  }
  b->discovered = true;
  if (b->ndevices) qsort(b->devices, b->ndevices, sizeof *b->devices, cmp_local_id);
  char *first;
  b->kind = HDAL_BACKEND_OK;
  b->nrefused = drop_refused(b, &first);
  b->reason = first;
  b->first_lost = b->nrefused && !first; /* its reason could not be kept: "unavailable: out of memory" */
  /* The rules over every backend's devices, the selector among them, follow once all are found (settle_all). */
}

/* Once every backend is discovered, before numbering (unlisted devices never get an id): the faces of
 * GPUs a narrowed runtime does not show go (faces.c), the device selector keeps its devices, the GPU
 * binding leaves this local rank its GPUs, and each discovered backend gets its status. */
static hdal_error *settle_all(hdal_context *ctx) {
  if (ctx->hide_faces) hdal__faces_hide(ctx);
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    if (b->kind != HDAL_BACKEND_OK) continue;
    hdal_error *e = hdal__selector_apply(ctx->selector, b, &b->nunselected);
    if (e) return e;
  }
  hdal_error *err = hdal__binding_apply(ctx);
  if (err) return err;
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    if (b->kind != HDAL_BACKEND_OK) continue;
    if (!b->first_lost) b->status = status_text(b);
    if (!b->status) backend_drop_devices(b); /* listed as "unavailable: out of memory", so no devices */
    hdal__debug(ctx, b->name, "%s", b->status ? b->status : "unavailable: out of memory");
  }
  return NULL;
}

/* The enabled backends but the first, in the order of discover_all, taken by
 * whichever discovery thread is free. */
typedef struct {
  hdal_context *ctx;
  const char *path;
  size_t *backend, n;
  size_t next; /* the next entry to take; atomic */
} discovery_queue;

static void *discover_queued(void *arg) {
  discovery_queue *q = arg;
  for (size_t i; (i = __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED)) < q->n;)
    discover_one(&q->ctx->backends[q->backend[i]], q->path);
  return NULL;
}

/* The CPUs this process may run on (its affinity mask, which cgroups and
 * taskset narrow), at least 1. */
static size_t usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return (size_t)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (size_t)n : 1;
}

/* The enabled backends in the order they are started: the modules first, in
 * the documented order, the built-in CPU backend last.  A vendor runtime takes
 * longest to start (PoCL's, tens of milliseconds), hwloc a few: the first
 * module starts at once, and the CPU backend's topology is read beside the
 * runtimes rather than ahead of them.  The calling thread discovers the first
 * from the start, not after creating threads; helper threads take the others
 * in order, and the calling thread joins them once its own is done.  The order
 * of discovery is not the order of the devices, which is fixed afterwards
 * (docs/reference.md).  There are as many helpers as other CPUs, at least one
 * (on one CPU it still overlaps what waits), no more than other backends: more
 * threads than CPUs only take turns with the calling thread.  With no thread
 * to be had, all of them here, one after another. */
static hdal_error *discover_all(hdal_context *ctx, const char *path) {
  size_t *backend = calloc(ctx->nbackends, sizeof *backend), n = 0;
  if (!backend) return hdal__error_oom();
  for (int builtin = 0; builtin < 2; builtin++)
    for (size_t i = 0; i < ctx->nbackends; i++)
      if (ctx->backends[i].enabled && built_in(&ctx->backends[i]) == builtin) backend[n++] = i;
  size_t others = n ? n - 1 : 0, helpers = others ? usable_cpus() - 1 : 0;
  if (others && helpers < 1) helpers = 1;
  if (helpers > others) helpers = others;
  pthread_t *threads = helpers ? calloc(helpers, sizeof *threads) : NULL;
  if (helpers && !threads) helpers = 0;
  discovery_queue q = {ctx, path, backend + 1, others, 0};
  size_t started = 0;
  while (started < helpers && pthread_create(&threads[started], NULL, discover_queued, &q) == 0) started++;
  if (n) discover_one(&ctx->backends[backend[0]], path);
  discover_queued(&q);
  for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
  free(threads);
  free(backend);

  hdal_error *err = settle_all(ctx);
  if (err) return err;
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    if (b->status) continue;
    if (b->enabled) backend_unavailable(b, NULL); /* out of memory */
    else b->kind = HDAL_BACKEND_DISABLED, b->status = status_text(b);
    if (!b->status) return hdal__error_oom();
  }
  return NULL;
}

void hdal__context_free(hdal_context *ctx) {
  for (size_t i = 0; i < ctx->ndevices; i++)
    if (!ctx->devices[i]->backend) hdal__device_free(ctx->devices[i]); /* other processes' */
  bool forked = hdal__forked(ctx);
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    backend_drop_devices(b);
    /* In a fork() child a module's runtime may hang: its state is left, unfreed (fork.c). */
    bool leave = forked && b->module;
    if (b->discovered && b->desc->finalize && !leave) b->desc->finalize(b->state);
    else if (b->discovered && leave) hdal__fork_leave(b->state);
    if (!leave) hdal__module_unload(b);
    free(b->file);
    free(b->name);
    backend_set_reason(b, NULL);
    free(b->status);
  }
  free(ctx->backends);
  free(ctx->devices);
  free(ctx->selected_by);
  hdal__hardware_forget(ctx);
  hdal__hosts_free(ctx);
  hdal__topology_free(ctx->pci_topology);
  if (ctx->hwloc_held) hdal__hwloc_release(); /* after every topology of the context */
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

HDAL_API hdal_error *hdal_context_create(const hdal_context_options *opts, hdal_context **out) {
  if (!out) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_create: out is NULL");
  *out = NULL;
  /* Variables that choose what code runs are not trusted in setuid and setgid
   * programs (secure_getenv: NULL there), as glibc's loader does not trust
   * LD_LIBRARY_PATH; a program's own options still are (docs/design.md). */
  const char *spec = secure_getenv("HDAL_BACKENDS"), *user_path = secure_getenv("HDAL_BACKEND_PATH");
  /* Pool settings load no code, but are read the same way: one rule for every HDAL_ variable. */
  const char *pool_limit = secure_getenv("HDAL_MEMORY_POOL_LIMIT"), *limit_who = "HDAL_MEMORY_POOL_LIMIT";
  const char *selector = secure_getenv("HDAL_DEVICE_SELECTOR"), *selector_who = "HDAL_DEVICE_SELECTOR";
  const char *spec_who = "HDAL_BACKENDS";
  /* Neither loads code, but every HDAL_ variable is read one way. */
  const char *binding = secure_getenv("HDAL_GPU_BINDING"), *binding_who = "HDAL_GPU_BINDING";
  const char *hide = secure_getenv("HDAL_HIDE_FACES"), *hide_who = "HDAL_HIDE_FACES";
  int process_index = 0, process_count = 1, local_rank = 0, local_size = 0;
  if (opts) {
    if (!HDAL__HAS_FIELD(opts, hdal_context_options, backends))
      return hdal__struct_size_error("hdal_context_options", opts->struct_size);
    if (opts->backends) spec = opts->backends, spec_who = "hdal_context_options: backends";
    if (HDAL__HAS_FIELD(opts, hdal_context_options, backend_path) && opts->backend_path) user_path = opts->backend_path;
    if (HDAL__HAS_FIELD(opts, hdal_context_options, process_count) && opts->process_count != 0) {
      if (opts->process_count < 0 || opts->process_index < 0 || opts->process_index >= opts->process_count)
        return hdal__error_new(HDAL_INVALID_ARGUMENT,
                               "hdal_context_options: process_index %d is not in [0, process_count %d)",
                               opts->process_index, opts->process_count);
      process_index = opts->process_index;
      process_count = opts->process_count;
    }
    if (HDAL__HAS_FIELD(opts, hdal_context_options, memory_pool_limit) && opts->memory_pool_limit) {
      pool_limit = opts->memory_pool_limit;
      limit_who = "hdal_context_options: memory_pool_limit";
    }
    if (HDAL__HAS_FIELD(opts, hdal_context_options, device_selector) && opts->device_selector) {
      selector = opts->device_selector;
      selector_who = "hdal_context_options: device_selector";
    }
    if (HDAL__HAS_FIELD(opts, hdal_context_options, gpu_binding) && opts->gpu_binding) {
      binding = opts->gpu_binding;
      binding_who = "hdal_context_options: gpu_binding";
    }
    if (HDAL__HAS_FIELD(opts, hdal_context_options, local_size) && opts->local_size != 0) {
      if (opts->local_size < 0 || opts->local_rank < 0 || opts->local_rank >= opts->local_size)
        return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_context_options: local_rank %d is not in [0, local_size %d)",
                               opts->local_rank, opts->local_size);
      local_rank = opts->local_rank;
      local_size = opts->local_size;
    }
    if (HDAL__HAS_FIELD(opts, hdal_context_options, hide_faces) && opts->hide_faces) {
      hide = opts->hide_faces;
      hide_who = "hdal_context_options: hide_faces";
    }
  }
  bool hide_faces = !hide || !*hide || !strcmp(hide, "1");
  if (!hide_faces && strcmp(hide, "0")) {
    int shown = strlen(hide) > 64 ? 64 : (int)strlen(hide);
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: '%.*s%s' is neither 0 (keep every face) nor 1 (hide)", hide_who,
                           shown, hide, shown < (int)strlen(hide) ? "..." : "");
  }
  hdal__binding bound;
  hdal_error *berr = hdal__binding_parse(binding, binding_who, local_rank, local_size, &bound);
  if (berr) return berr;
  hdal__pool_limit limit;
  hdal_error *lerr = hdal__pool_parse_limit(pool_limit, limit_who, &limit);
  if (lerr) return lerr;

  hdal__selector *devices_wanted;
  hdal_error *err = hdal__selector_parse(selector, selector_who, &devices_wanted);
  if (err) return err;
  selection sel;
  if ((err = selection_parse(spec, &sel))) {
    hdal__selector_free(devices_wanted);
    return err;
  }
  hdal_context *ctx = calloc(1, sizeof *ctx);
  char *path = NULL;
  if (ctx) {
    const char *dbg = secure_getenv("HDAL_DEBUG");
    ctx->debug = dbg && *dbg && strcmp(dbg, "0") != 0;
    path = hdal__module_search_path(ctx, user_path);
  }
  if (!ctx || !path) {
    free(ctx);
    free(path);
    selection_free(&sel);
    hdal__selector_free(devices_wanted);
    return hdal__error_oom();
  }
  atomic_init(&ctx->refs, 1);
  atomic_init(&ctx->dying, false);
  ctx->forks = hdal__fork_watch();
  ctx->process_index = process_index;
  ctx->process_count = process_count;
  ctx->hide_faces = hide_faces;
  ctx->binding = bound;
  const char *caching = secure_getenv("HDAL_MEMORY_POOL");
  /* HDAL_NO_RECYCLE: no buffer object and no device memory kept for reuse. */
  hdal__recycle_init();
  ctx->pool_caching = (!caching || strcmp(caching, "0") != 0) && !hdal__no_recycle;
  ctx->pool_limit = limit;
  pthread_mutex_init(&ctx->lock, NULL);

  err = backends_list(ctx, &sel, path, spec_who);
  selection_free(&sel);
  ctx->selector = devices_wanted;
  if (!err) err = hdal__selector_check_backends(devices_wanted, ctx);
  if (!err) {
    /* hwloc's plugins, loaded by the policy, before the discovery threads
     * start; the environment is left as found (docs/hwloc.md). */
    hdal__hwloc_hold(0);
    ctx->hwloc_held = true;
    err = discover_all(ctx, path);
    hdal__hwloc_settled();
  }
  ctx->selector = NULL;
  /* A device the selector left out is not there to route to: the refusal says why (hdal__route). */
  if (!err && devices_wanted && !(ctx->selected_by = hdal__selector_describe(devices_wanted))) err = hdal__error_oom();
  hdal__selector_free(devices_wanted);
  if (!err && !(ctx->own_host = hdal__host_local())) err = hdal__error_oom();
  if (!err) err = hdal__table_build(ctx);
  free(path);
  if (err) {
    hdal__context_free(ctx);
    return err;
  }
  *out = ctx;
  return NULL;
}

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
