/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — binding a thread or the process near a device (docs/reference.md, "Binding").
 *
 *   - hdal_device_bind: the device's locality (hdal_device_locality, locality.c), within the CPUs
 *     and NUMA nodes this process may use, bound with hwloc in a topology of this machine loaded
 *     for the call: the CPUs with hwloc_set_cpubind, the calling thread's memory policy with
 *     hwloc_set_membind (HWLOC_MEMBIND_BIND).  Nothing changes on an error: memory is bound
 *     first and put back as it was when the CPUs then fail.
 *   - HDAL_CPU_BINDING=near: the same for a new context, the process bound near the GPUs it
 *     keeps (its local rank's with HDAL_GPU_BINDING=local-rank), the union of their localities.
 *
 * What the process may use: hwloc's allowed cpuset and nodeset of this machine (the cgroup's
 * cpuset), within the CPUs the process ran on when hdal first bound it (its launcher's
 * affinity, kept, so that a thread bound near one device may be bound near another).
 *
 * hwloc binds on this machine only: where HWLOC_XMLFILE, HWLOC_SYNTHETIC or HWLOC_FSROOT make
 * its topology another machine's (and HWLOC_THISSYSTEM=1 does not say it is this one), a
 * device's CPUs are that machine's and the binding is refused rather than done on CPUs that
 * only share their numbers. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hwloc.h>
#include "binding.h"
#include "hwloc_policy.h"
#include "selector.h"

/* ---- this machine ---- */

/* A topology of this machine for the binding, as hdal loads every topology (hwloc_policy.h); NULL when
 * hwloc cannot load one. */
static hwloc_topology_t machine_load(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return NULL;
  hdal__topology_apply(t, HDAL__TOPOLOGY_DEVICES);
  if (hwloc_topology_load(t) < 0) {
    hwloc_topology_destroy(t);
    return NULL;
  }
  return t;
}

/* What makes hwloc's topology another machine's, for the refusal: "HWLOC_XMLFILE=/path", ... */
static void elsewhere(char *buf, size_t size) {
  static const char *const inputs[] = {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT"};
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
    const char *v = getenv(inputs[i]);
    if (v && *v) {
      snprintf(buf, size, "%s=%.256s%s", inputs[i], v, strlen(v) > 256 ? "..." : "");
      return;
    }
  }
  snprintf(buf, size, "HWLOC_THISSYSTEM=0");
}

/* The CPUs the process ran on when hdal first bound it (every thread's, as hwloc reads them): kept for
 * the process's life, freed at exit. */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static hwloc_bitmap_t first_cpus;

static void __attribute__((destructor)) first_cpus_free(void) {
  hwloc_bitmap_free(first_cpus);
  first_cpus = NULL;
}

/* The CPUs this process may use into `out`: hwloc's allowed cpuset within the first CPUs; false when out of
 * memory. */
static bool allowed_cpus(hwloc_topology_t t, hwloc_bitmap_t out) {
  pthread_mutex_lock(&first_lock);
  if (!first_cpus && (first_cpus = hwloc_bitmap_alloc()) &&
      hwloc_get_cpubind(t, first_cpus, HWLOC_CPUBIND_PROCESS) < 0 &&
      hwloc_bitmap_copy(first_cpus, hwloc_topology_get_complete_cpuset(t)) < 0) {
    hwloc_bitmap_free(first_cpus); /* the OS does not say: the machine's CPUs, the allowed set alone decides */
    first_cpus = NULL;
  }
  bool ok = first_cpus && hwloc_bitmap_and(out, hwloc_topology_get_allowed_cpuset(t), first_cpus) == 0;
  pthread_mutex_unlock(&first_lock);
  return ok;
}

/* ---- the binding ---- */

/* A bitmap as hwloc_bitmap_snprintf (cpusets) or hwloc_bitmap_list_snprintf (NUMA nodes) writes it, cut
 * to the buffer. */
static const char *bitmap_text(char *buf, size_t size, hwloc_const_bitmap_t set, bool list) {
  if ((list ? hwloc_bitmap_list_snprintf(buf, size, set) : hwloc_bitmap_snprintf(buf, size, set)) < 0)
    snprintf(buf, size, "?");
  return buf;
}

enum { SET_TEXT = 1024 };

/* Binds to cpus (and memory to nodes, unless NO_MEMORY or nodes is empty) in t, within what the process
 * may use.  `who` opens every message ("hdal_device_bind: device 3 (cuda, NVIDIA H100)"), `whose` names
 * the CPUs' owner ("its", "their"), `hint` ends the memory refusal.  Nothing changed on an error. */
static hdal_error *bind_sets(hwloc_topology_t t, const char *who, const char *whose, hwloc_const_bitmap_t cpus,
                             hwloc_const_bitmap_t nodes, unsigned flags, const char *hint) {
  hwloc_bitmap_t may = hwloc_bitmap_alloc(), to = hwloc_bitmap_alloc(), mem = hwloc_bitmap_alloc(),
                 before = hwloc_bitmap_alloc();
  hdal_error *err = NULL;
  char a[SET_TEXT], b[SET_TEXT];
  if (!may || !to || !mem || !before || !allowed_cpus(t, may) || hwloc_bitmap_and(to, cpus, may) < 0 ||
      hwloc_bitmap_and(mem, nodes, hwloc_topology_get_allowed_nodeset(t)) < 0) {
    err = hdal__error_oom();
    goto out;
  }
  if (hwloc_bitmap_iszero(to)) {
    err = hdal__error_new(HDAL_PERMISSION_DENIED, "%s: %s CPUs %s are all outside the CPUs this process may use %s",
                          who, whose, bitmap_text(a, sizeof a, cpus, false), bitmap_text(b, sizeof b, may, false));
    goto out;
  }
  bool memory = !(flags & HDAL_BIND_NO_MEMORY) && !hwloc_bitmap_iszero(nodes);
  if (memory && hwloc_bitmap_iszero(mem)) {
    err = hdal__error_new(HDAL_PERMISSION_DENIED,
                          "%s: %s NUMA nodes %s are all outside the NUMA nodes this process may use %s", who, whose,
                          bitmap_text(a, sizeof a, nodes, true),
                          bitmap_text(b, sizeof b, hwloc_topology_get_allowed_nodeset(t), true));
    goto out;
  }
  /* Bound to every node it may use, memory comes from where it comes from unbound: the nearest of them to
   * the CPU that allocates.  The policy is left as it is (set_mempolicy is refused in containers that
   * refuse nothing else, for nothing gained). */
  if (memory && hwloc_bitmap_isequal(mem, hwloc_topology_get_allowed_nodeset(t))) memory = false;
  /* Memory first: its policy is the calling thread's (Linux keeps one per thread; threads it makes later
   * inherit it), which hwloc reads back exactly, so that it goes back as it was when the CPUs fail. */
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  const int mflags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;
  bool restore = false;
  if (memory) {
    restore = hwloc_get_membind(t, before, &policy, mflags) == 0;
    if (hwloc_set_membind(t, mem, HWLOC_MEMBIND_BIND, mflags) < 0) {
      err = hdal__error_new(HDAL_UNAVAILABLE, "%s: the operating system refused to bind memory to NUMA nodes %s: %s%s",
                            who, bitmap_text(a, sizeof a, mem, true), strerror(errno), hint);
      goto out;
    }
  }
  bool process = flags & HDAL_BIND_PROCESS;
  if (hwloc_set_cpubind(t, to, process ? HWLOC_CPUBIND_PROCESS : HWLOC_CPUBIND_THREAD) < 0) {
    int e = errno;
    if (restore) hwloc_set_membind(t, before, policy, mflags);
    err = hdal__error_new(HDAL_UNAVAILABLE, "%s: the operating system refused to bind the %s to CPUs %s: %s", who,
                          process ? "process" : "thread", bitmap_text(a, sizeof a, to, false), strerror(e));
  }
out:
  hwloc_bitmap_free(may);
  hwloc_bitmap_free(to);
  hwloc_bitmap_free(mem);
  hwloc_bitmap_free(before);
  return err;
}

/* The machine's topology for a binding, or why there is none: hwloc cannot load it, or it is another
 * machine's. */
static hdal_error *machine_for(const char *who, hwloc_topology_t *out) {
  *out = machine_load();
  if (!*out) return hdal__error_new(HDAL_UNAVAILABLE, "%s: hwloc could not load this machine's topology", who);
  if (hwloc_topology_is_thissystem(*out)) return NULL;
  hwloc_topology_destroy(*out);
  *out = NULL;
  char input[300];
  elsewhere(input, sizeof input);
  return hdal__error_new(HDAL_FAILED_PRECONDITION,
                         "%s: hwloc's topology is not this machine's (%s): its CPUs are another machine's, and hwloc "
                         "binds on this machine only (HWLOC_THISSYSTEM=1 says the topology is this machine's)",
                         who, input);
}

/* The locality of d into cpus and nodes (or'ed into them); an error worded for `prefix`. */
static hdal_error *add_locality(const hdal_device *d, const char *prefix, hwloc_bitmap_t cpus, hwloc_bitmap_t nodes) {
  hdal_locality l;
  hdal_error *e = hdal__device_locality(d, prefix, &l);
  if (e) return e;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  bool ok = set && hwloc_bitmap_sscanf(set, l.cpuset) == 0 && hwloc_bitmap_or(cpus, cpus, set) == 0;
  for (size_t i = 0; ok && i < l.numa_node_count; i++) ok = hwloc_bitmap_set(nodes, l.numa_nodes[i]) == 0;
  hwloc_bitmap_free(set);
  return ok ? NULL : hdal__error_oom();
}

/* The device for messages: "device 3 (cuda, NVIDIA H100)". */
static void device_words(const hdal_device *d, char *buf, size_t size) {
  snprintf(buf, size, "device %d (%s, %.200s)", d->id, d->platform ? d->platform : "?", d->kind ? d->kind : "?");
}

HDAL_API hdal_error *hdal_device_bind(const hdal_device *d, unsigned flags) {
  if (!d) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_bind: device is NULL");
  if (flags & ~(unsigned)(HDAL_BIND_PROCESS | HDAL_BIND_NO_MEMORY))
    return hdal__error_new(HDAL_INVALID_ARGUMENT,
                           "hdal_device_bind: unknown flags 0x%x (known: HDAL_BIND_PROCESS, HDAL_BIND_NO_MEMORY)",
                           flags & ~(unsigned)(HDAL_BIND_PROCESS | HDAL_BIND_NO_MEMORY));
  const hdal_context *ctx = d->ctx;
  /* Its CPUs are its host's: this process runs on its own. */
  if (d->process_index != ctx->process_index && d->host != ctx->own_host)
    return hdal__error_new(HDAL_FAILED_PRECONDITION,
                           "hdal_device_bind: device %d is of process %d, on another host than this process's: its "
                           "CPUs are not this process's to run on",
                           d->id, d->process_index);
  char who[300];
  int n = snprintf(who, sizeof who, "hdal_device_bind: ");
  device_words(d, who + n, sizeof who - (size_t)n);
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
  hwloc_topology_t t = NULL;
  hdal_error *err = !cpus || !nodes ? hdal__error_oom() : machine_for(who, &t);
  if (!err) err = add_locality(d, "hdal_device_bind", cpus, nodes);
  if (!err)
    err = bind_sets(t, who, "its", cpus, nodes, flags, " (HDAL_BIND_NO_MEMORY binds the CPUs only)");
  if (t) hwloc_topology_destroy(t);
  hwloc_bitmap_free(cpus);
  hwloc_bitmap_free(nodes);
  return err;
}

/* ---- HDAL_CPU_BINDING ---- */

hdal_error *hdal__cpu_binding_parse(const char *text, const char *who, hdal__cpu_binding *out) {
  *out = HDAL__CPU_BINDING_NONE;
  if (!text || !*text || !strcmp(text, "none")) return NULL;
  if (!strcmp(text, "near")) {
    *out = HDAL__CPU_BINDING_NEAR;
    return NULL;
  }
  int shown = strlen(text) > 64 ? 64 : (int)strlen(text);
  return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: unknown CPU binding '%.*s%s'; known: none, near", who, shown,
                         text, shown < (int)strlen(text) ? "..." : "");
}

static bool is_gpu(const hdal_context *ctx, const hdal_device *d) {
  const char *k = d->process_index == ctx->process_index ? hdal__selector_kind_of(d) : NULL;
  return k && (!strcasecmp(k, "gpu") || !strcasecmp(k, "accelerator"));
}

hdal_error *hdal__cpu_binding_apply(hdal_context *ctx, hdal__cpu_binding mode) {
  if (mode != HDAL__CPU_BINDING_NEAR) return NULL;
  size_t n = 0, first = 0;
  for (size_t i = 0; i < ctx->ndevices; i++)
    if (is_gpu(ctx, ctx->devices[i]) && !n++) first = i;
  if (!n) {
    hdal__debug(ctx, "binding", "HDAL_CPU_BINDING=near: this process keeps no GPU: not bound");
    return NULL;
  }
  /* "HDAL_CPU_BINDING=near: device 1 (cuda, ...)", or "...: devices 1, 2 (the GPUs of this process)". */
  char who[400];
  int len = snprintf(who, sizeof who, "HDAL_CPU_BINDING=near: ");
  if (n == 1) device_words(ctx->devices[first], who + len, sizeof who - (size_t)len);
  else {
    len += snprintf(who + len, sizeof who - (size_t)len, "devices");
    size_t listed = 0;
    for (size_t i = 0; i < ctx->ndevices && len < 300; i++)
      if (is_gpu(ctx, ctx->devices[i]))
        len += snprintf(who + len, sizeof who - (size_t)len, "%s %d", listed++ ? "," : "", ctx->devices[i]->id);
    snprintf(who + len, sizeof who - (size_t)len, "%s (the GPUs of this process)", listed < n ? ", ..." : "");
  }
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
  hwloc_topology_t t = NULL;
  hdal_error *err = !cpus || !nodes ? hdal__error_oom() : machine_for(who, &t);
  for (size_t i = 0; !err && i < ctx->ndevices; i++)
    if (is_gpu(ctx, ctx->devices[i])) err = add_locality(ctx->devices[i], "HDAL_CPU_BINDING=near", cpus, nodes);
  if (!err) err = bind_sets(t, who, n == 1 ? "its" : "their", cpus, nodes, HDAL_BIND_PROCESS, "");
  if (!err) {
    char a[SET_TEXT], b[SET_TEXT];
    hdal__debug(ctx, "binding", "%s: the process bound near CPUs %s, NUMA nodes %s", who,
                bitmap_text(a, sizeof a, cpus, false), bitmap_text(b, sizeof b, nodes, true));
  }
  if (t) hwloc_topology_destroy(t);
  hwloc_bitmap_free(cpus);
  hwloc_bitmap_free(nodes);
  return err;
}
