/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — which devices are the same hardware (ls.h), worked out once for
 * the whole table so that no writer compares devices pairwise: with thousands
 * of devices that was seconds, and an output that grew with the square.
 *
 * Within one process, two devices are the same hardware when
 *   - they share a PCI bus id (without case) or a UUID (without case), or are
 *     joined by a chain of such: one physical device seen by several
 *     backends (union-find over the devices sorted by each key); or
 *   - their topology cpusets intersect, unless both are devices of the host's
 *     memory (kDLCPU: two NUMA nodes).  Devices with the same cpuset text form
 *     a class; a device's cpuset partners are the members of the classes of
 *     its process that intersect its own.
 * docs/design.md ("hdal-ls") gives the rule and its cost. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ls.h"

enum { NONE = -1 };

typedef struct {
  int proc;
  bool host;    /* a device of the host's memory (kDLCPU) */
  size_t group; /* offset of its identity group in members[] */
  size_t group_len;
  long cls; /* its cpuset class, or NONE */
} device_info;

typedef struct {
  int proc;
  size_t first, count; /* its devices: class_members[first .. first + count) */
  size_t nonhost;      /* how many of them are not devices of the host's memory */
  size_t range, nranges; /* its CPUs: ranges[range .. range + nranges), sorted */
  size_t proc_first, proc_end; /* the classes of its process */
} cpuset_class;

struct ls_hardware {
  size_t n;
  device_info *dev;
  size_t *members;       /* device indices by identity group, ascending in each */
  size_t nclasses;
  cpuset_class *classes;
  size_t *class_members; /* device indices by class, ascending in each */
  unsigned long (*ranges)[2];
  size_t *mark;          /* per class: the query that found it linked */
  size_t query;
};

/* A sort key: a device's process, a string of it, its index. */
typedef struct {
  int proc;
  const char *s;
  size_t i;
} key;

static int cmp_key_nocase(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  int c = strcasecmp(x->s, y->s); /* lspci prints hex in lower case, some runtimes in upper */
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int cmp_key(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

static size_t find(size_t *parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

static void unite(size_t *parent, size_t a, size_t b) {
  a = find(parent, a), b = find(parent, b);
  if (a != b) parent[a > b ? a : b] = a < b ? a : b;
}

/* Joins the devices that share attribute `name` (compared without case). */
static void unite_by(hdal_context *ctx, size_t n, key *keys, size_t *parent, const char *name) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    const char *s = hdal_device_attribute_get(d, name);
    if (s && *s) keys[k++] = (key){hdal_device_process_index(d), s, i};
  }
  qsort(keys, k, sizeof *keys, cmp_key_nocase);
  for (size_t j = 1; j < k; j++)
    if (keys[j].proc == keys[j - 1].proc && !strcasecmp(keys[j].s, keys[j - 1].s)) unite(parent, keys[j - 1].i, keys[j].i);
}

/* The host CPUs a device computes on: its cpuset if its backend flags it a topology attribute. */
static const char *topology_cpuset(const hdal_device *d) {
  const char *k, *value;
  for (size_t i = 0; hdal_device_attribute(d, i, &k, &value); i++)
    if (!strcmp(k, HDAL_ATTRIBUTE_CPUSET)) return hdal_device_attribute_flags(d, i) & HDAL_ATTRIBUTE_TOPOLOGY ? value : NULL;
  return NULL;
}

static int cmp_range(const void *a, const void *b) {
  const unsigned long *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The ranges of a list cpuset ("0-3,8") into r[], sorted; how many, 0 when malformed.  Read as they
 * stand, not through hwloc_bitmap_list_sscanf: a cpuset from a module or another process's table may
 * be as wide as it likes ("0-4294967295", a 512 MiB bitmap); comparing lists of ranges needs none. */
static size_t parse_cpuset(const char *s, unsigned long (*r)[2]) {
  size_t k = 0;
  for (const char *p = s;;) {
    char *end;
    if (*p < '0' || *p > '9') return 0;
    r[k][0] = r[k][1] = strtoul(p, &end, 10);
    if (*end == '-') {
      if (end[1] < '0' || end[1] > '9') return 0;
      r[k][1] = strtoul(end + 1, &end, 10);
    }
    if (r[k][0] > r[k][1]) return 0;
    k++;
    if (!*end) break;
    if (*end != ',') return 0;
    p = end + 1;
  }
  qsort(r, k, sizeof *r, cmp_range);
  return k;
}

static bool classes_intersect(const ls_hardware *hw, const cpuset_class *a, const cpuset_class *b) {
  const unsigned long(*x)[2] = hw->ranges + a->range, (*y)[2] = hw->ranges + b->range;
  for (size_t i = 0, j = 0; i < a->nranges && j < b->nranges;) {
    if (x[i][0] <= y[j][1] && y[j][0] <= x[i][1]) return true;
    if (x[i][1] < y[j][1]) i++;
    else j++;
  }
  return false;
}

/* The cpuset classes: devices with a topology cpuset sorted by (process, cpuset). */
static bool build_classes(ls_hardware *hw, hdal_context *ctx, key *keys) {
  size_t k = 0, nranges = 0;
  for (size_t i = 0; i < hw->n; i++) {
    const char *s = topology_cpuset(hdal_context_device(ctx, i));
    if (!s) continue;
    keys[k++] = (key){hw->dev[i].proc, s, i};
    nranges++; /* at most one range more than it has commas */
    for (const char *p = s; (p = strchr(p, ',')); p++) nranges++;
  }
  qsort(keys, k, sizeof *keys, cmp_key);
  hw->classes = malloc((k ? k : 1) * sizeof *hw->classes);
  hw->class_members = malloc((k ? k : 1) * sizeof *hw->class_members);
  hw->ranges = malloc((nranges ? nranges : 1) * sizeof *hw->ranges);
  hw->mark = calloc(k ? k : 1, sizeof *hw->mark);
  if (!hw->classes || !hw->class_members || !hw->ranges || !hw->mark) return false;
  size_t used = 0;
  for (size_t j = 0; j < k; j++) {
    size_t i = keys[j].i;
    if (j == 0 || keys[j].proc != keys[j - 1].proc || strcmp(keys[j].s, keys[j - 1].s)) {
      cpuset_class *c = &hw->classes[hw->nclasses++];
      *c = (cpuset_class){.proc = keys[j].proc, .first = j, .range = used};
      c->nranges = parse_cpuset(keys[j].s, hw->ranges + used);
      used += c->nranges;
    }
    cpuset_class *c = &hw->classes[hw->nclasses - 1];
    c->count++;
    c->nonhost += !hw->dev[i].host;
    hw->class_members[j] = i;
    hw->dev[i].cls = (long)hw->nclasses - 1;
  }
  for (size_t a = 0, b; a < hw->nclasses; a = b) {
    for (b = a; b < hw->nclasses && hw->classes[b].proc == hw->classes[a].proc; b++) {}
    for (size_t c = a; c < b; c++) hw->classes[c].proc_first = a, hw->classes[c].proc_end = b;
  }
  return true;
}

ls_hardware *ls_hardware_new(hdal_context *ctx) {
  ls_hardware *hw = calloc(1, sizeof *hw);
  if (!hw) return NULL;
  size_t n = hw->n = hdal_context_device_count(ctx);
  size_t m = n ? n : 1;
  key *keys = malloc(m * sizeof *keys);
  size_t *parent = malloc(m * sizeof *parent), *start = calloc(m, sizeof *start);
  hw->dev = malloc(m * sizeof *hw->dev);
  hw->members = malloc(m * sizeof *hw->members);
  bool ok = keys && parent && start && hw->dev && hw->members;
  for (size_t i = 0; ok && i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    hw->dev[i] = (device_info){hdal_device_process_index(d), ls_host_memory(d), 0, 0, NONE};
    parent[i] = i;
  }
  if (ok) {
    unite_by(ctx, n, keys, parent, HDAL_ATTRIBUTE_PCI_BUS_ID);
    unite_by(ctx, n, keys, parent, HDAL_ATTRIBUTE_UUID);
    /* Each group's members in index order: a counting sort by root (the group's smallest index). */
    for (size_t i = 0; i < n; i++) start[find(parent, i)]++;
    for (size_t i = 0, sum = 0; i < n; i++) {
      size_t c = start[i];
      start[i] = sum, sum += c;
    }
    for (size_t i = 0; i < n; i++) {
      size_t r = find(parent, i);
      hw->dev[i].group = start[r];
      hw->members[start[r] + hw->dev[r].group_len++] = i;
    }
    for (size_t i = 0; i < n; i++) hw->dev[i].group_len = hw->dev[find(parent, i)].group_len;
    ok = build_classes(hw, ctx, keys);
  }
  free(keys);
  free(parent);
  free(start);
  if (!ok) {
    ls_hardware_free(hw);
    return NULL;
  }
  return hw;
}

void ls_hardware_free(ls_hardware *hw) {
  if (!hw) return;
  free(hw->dev);
  free(hw->members);
  free(hw->classes);
  free(hw->class_members);
  free(hw->ranges);
  free(hw->mark);
  free(hw);
}

/* Keeps the `max` smallest device indices seen, ascending and without repeats, in out[0 .. *k). */
static void keep_smallest(size_t *out, size_t max, size_t *k, size_t v) {
  if (*k == max && v >= out[max - 1]) return;
  size_t j = *k;
  while (j > 0 && out[j - 1] > v) j--;
  if (j > 0 && out[j - 1] == v) return;
  if (*k < max) (*k)++;
  memmove(out + j + 1, out + j, (*k - j - 1) * sizeof *out);
  out[j] = v;
}

/* The smallest members of an ascending list, until they can no longer be among the `max` smallest. */
static void keep_list(size_t *out, size_t max, size_t *k, const size_t *list, size_t len, size_t self,
                      const device_info *dev, bool host_only_excluded) {
  for (size_t j = 0; j < len; j++) {
    size_t v = list[j];
    if (*k == max && v >= out[max - 1]) return;
    if (v != self && !(host_only_excluded && dev[v].host)) keep_smallest(out, max, k, v);
  }
}

size_t ls_hardware_same(ls_hardware *hw, size_t i, size_t *out, size_t max, size_t *shown) {
  const device_info *d = &hw->dev[i];
  const size_t *group = hw->members + d->group;
  size_t count = d->group_len - 1, k = 0;
  if (max) keep_list(out, max, &k, group, d->group_len, i, hw->dev, false);
  if (d->cls != NONE) {
    const cpuset_class *own = &hw->classes[d->cls];
    size_t q = ++hw->query;
    for (size_t c = own->proc_first; c < own->proc_end; c++) {
      const cpuset_class *o = &hw->classes[c];
      if (!classes_intersect(hw, own, o)) continue;
      hw->mark[c] = q;
      /* Two devices of the host's memory are two NUMA nodes: never partners by cpuset. */
      count += (d->host ? o->nonhost : o->count) - (c == (size_t)d->cls && !d->host);
      if (max) keep_list(out, max, &k, hw->class_members + o->first, o->count, i, hw->dev, d->host);
    }
    /* Partners by identity and by cpuset alike were counted twice. */
    for (size_t j = 0; j < d->group_len; j++) {
      const device_info *g = &hw->dev[group[j]];
      count -= group[j] != i && g->cls != NONE && hw->mark[g->cls] == q && !(d->host && g->host);
    }
  }
  *shown = k;
  return count;
}
