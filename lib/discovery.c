/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — discovery (discovery.h): each enabled backend loaded and its
 * discover() run, concurrently, the devices it adds held to the device rules
 * (docs/backend-abi.md), the rules over every backend's devices applied once
 * all are found, and each backend's status set; and, when the context goes,
 * each backend's end (finalize, its module unloaded). */
#include "config.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend_status.h"
#include "device_table.h"
#include "discovery.h"
#include "faces.h"
#include "identity.h"
#include "selector.h"
#include "../backends/builtin.h"

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

static void discover_one(hdal__backend *b, const char *path) {
  char *why_not;
  if (built_in(b))
    b->desc = &hdal__cpu_backend;
  else if (!hdal__module_load(b, path, &why_not)) {
    hdal__backend_unavailable(b, why_not);
    return;
  }
  if (b->module && hdal__fork_runtime_left_behind(b->name)) {
    hdal__backend_unavailable(b, hdal__strdup_printf("this process is a fork() child of one that started the %s "
                                                     "runtime, which does not survive fork()", b->name));
    return;
  }

  hdal_error *err = b->desc->discover(&hdal__host, b, &b->state);
  if (!err && b->module) hdal__fork_runtime_started(b->name);
  if (err) {
    backend_drop_devices(b);
    /* Nothing there to run, or a runtime that broke (hdal_backend_state_kind). */
    bool absent = err->code == HDAL_UNAVAILABLE || err->code == HDAL_NOT_FOUND;
    hdal__backend_stopped(b, absent ? HDAL_BACKEND_UNAVAILABLE : HDAL_BACKEND_FAILED, strdup(err->message));
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
    if (!b->first_lost) b->status = hdal__backend_status_text(b);
    if (!b->status) backend_drop_devices(b); /* listed as "unavailable: out of memory", so no devices */
    hdal__debug(ctx, b->name, "%s", b->status ? b->status : "unavailable: out of memory");
  }
  return NULL;
}

/* The enabled backends but the first, in the order of hdal__discover_all, taken by
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
hdal_error *hdal__discover_all(hdal_context *ctx, const char *path) {
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

  /* A first-party backend left out still narrows (docs/reference.md, "The scheduler's GPUs on every
   * backend"): where another backend found a GPU, its module is opened, not run, for its variables
   * (hdal_backend::visibility).  Not otherwise: a module brings its libraries (the OpenCL one, the ICD loader). */
  bool gpus = false;
  for (size_t i = 0; i < ctx->nbackends && !gpus; i++)
    for (size_t j = 0; ctx->backends[i].discovered && j < ctx->backends[i].ndevices && !gpus; j++)
      gpus = hdal__device_identity(ctx->backends[i].devices[j], HDAL_ATTRIBUTE_PCI_BUS_ID) ||
             hdal__device_identity(ctx->backends[i].devices[j], HDAL_ATTRIBUTE_UUID);
  for (size_t i = 0; ctx->hide_faces && gpus && i < ctx->nbackends && i < HDAL__NKNOWN_BACKENDS; i++) {
    hdal__backend *b = &ctx->backends[i];
    char *why_not = NULL;
    if (!b->enabled && b->file && !hdal__module_load(b, path, &why_not)) free(why_not);
  }

  hdal_error *err = settle_all(ctx);
  if (err) return err;
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    if (b->status) continue;
    if (b->enabled) hdal__backend_unavailable(b, NULL); /* out of memory */
    else b->kind = HDAL_BACKEND_DISABLED, b->status = hdal__backend_status_text(b);
    if (!b->status) return hdal__error_oom();
  }
  return NULL;
}

void hdal__backends_free(hdal_context *ctx) {
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
    hdal__backend_set_reason(b, NULL);
    free(b->status);
  }
  free(ctx->backends);
}
