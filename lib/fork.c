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
 * calling them: the rule is applied where the core calls a backend
 * (device_ops.c).  The built-in CPU backend is plain memory: its buffers keep
 * working in the child (docs/design.md). */
#include "config.h"
#include <stdint.h>
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

/* The modules whose runtime this process started (a successful discover()),
 * with the fork count then: in a fork() child of that process the runtime's
 * threads and mappings stayed behind, so a new context there lists the module
 * as unavailable rather than call into it (every module alike: none needs a
 * guard of its own).  By name, as modules are loaded once per process, kept
 * as a hash in a fixed table: nothing is allocated for it. */
enum { STARTED_MAX = 64 }; /* modules past these many are not recorded: their children are not warned */
static struct {
  uint64_t name; /* FNV-1a of the name; 0: free */
  unsigned forks;
} started[STARTED_MAX];
static pthread_mutex_t started_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t name_hash(const char *name) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * UINT64_C(1099511628211);
  return h ? h : 1;
}

void hdal__fork_runtime_started(const char *name) {
  pthread_once(&once, watch);
  uint64_t h = name_hash(name);
  pthread_mutex_lock(&started_lock);
  for (size_t i = 0; i < STARTED_MAX; i++) {
    if (started[i].name == h) break;
    if (!started[i].name) {
      started[i].name = h;
      started[i].forks = atomic_load_explicit(&hdal__forks, memory_order_relaxed);
      break;
    }
  }
  pthread_mutex_unlock(&started_lock);
}

bool hdal__fork_runtime_left_behind(const char *name) {
  uint64_t h = name_hash(name);
  unsigned now = atomic_load_explicit(&hdal__forks, memory_order_relaxed);
  bool behind = false;
  pthread_mutex_lock(&started_lock);
  for (size_t i = 0; i < STARTED_MAX && started[i].name; i++)
    if (started[i].name == h) behind = started[i].forks != now;
  pthread_mutex_unlock(&started_lock);
  return behind;
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
