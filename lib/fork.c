/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — fork(): a context used in a child process.
 *
 * A child of fork() has one thread and a copy of its parent's memory: the
 * threads, queues and device mappings of a vendor runtime (PoCL's workers, the
 * CUDA driver's) did not come along, and an OpenCL call there may wait for
 * ever.  hdal counts forks (pthread_atfork) and remembers the count when a
 * context is made; a context used after a fork refuses to touch a backend
 * whose runtime does not survive one (every loadable module: hdal cannot tell
 * which do) with HDAL_FAILED_PRECONDITION, and lets its buffers go without
 * calling them.  The built-in CPU backend is plain memory: its buffers keep
 * working in the child (docs/design.md). */
#include "config.h"
#include <stdlib.h>
#include "internal.h"

atomic_uint hdal__forks;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void forked_child(void) { atomic_fetch_add_explicit(&hdal__forks, 1, memory_order_relaxed); }
static void watch(void) { pthread_atfork(NULL, NULL, forked_child); }

unsigned hdal__fork_watch(void) {
  pthread_once(&once, watch);
  return atomic_load_explicit(&hdal__forks, memory_order_relaxed);
}

bool hdal__fork_unsafe(const hdal_device *d) {
  /* Another process's device has no backend; a built-in one (the CPU's) no module. */
  return hdal__forked(d->ctx) && !(d->backend && !d->backend->module);
}

/* What a fork() child leaves unfreed stays reachable from here: a leak by
 * design, which leak checkers need not report as lost. */
static struct left {
  struct left *next;
  void *state;
} *left_behind;
static pthread_mutex_t left_lock = PTHREAD_MUTEX_INITIALIZER;

void hdal__fork_leave(void *state) {
  struct left *l = state ? malloc(sizeof *l) : NULL;
  if (!l) return;
  pthread_mutex_lock(&left_lock);
  *l = (struct left){left_behind, state};
  left_behind = l;
  pthread_mutex_unlock(&left_lock);
}

hdal_error *hdal__fork_refusal(const hdal_device *d) {
  if (!hdal__fork_unsafe(d)) return NULL;
  const char *name = d->backend ? d->backend->name : d->platform;
  return hdal__error_new(HDAL_FAILED_PRECONDITION,
                         "hdal device %d (%s) cannot be used in this process: it is a fork() child of the process "
                         "that created the context, and the %s runtime does not survive fork() (only CPU buffers "
                         "do); create contexts after fork(), in the process that uses them",
                         d->id, d->platform, name);
}
