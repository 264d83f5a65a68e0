/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — which devices are the same hardware (docs/reference.md, "Hosts
 * and hardware"; docs/design.md, "hdal-ls"), worked out once for the
 * whole table on first need, so that no caller compares devices pairwise: with
 * thousands of devices that was seconds, and an output that grew with the
 * square.  hdal-ls prints what this file says.
 *
 * Devices of two hosts are never the same hardware.  On one host, two devices are
 *   - when they share a PCI bus id (without case) or a UUID (without case), or
 *     are joined by a chain of such: one physical device seen by several
 *     backends or several processes (union-find over the devices sorted by
 *     host and each key); or
 *   - when their topology cpusets intersect, unless both are devices of the
 *     host's memory (kDLCPU): two of those are two NUMA nodes, the same
 *     hardware only as the same node seen by two processes (the same NUMA
 *     node, cpusets that intersect).  Devices of one host with the same cpuset
 *     text form a class; a device's cpuset partners are members of the
 *     classes of its host that intersect its own.
 *
 * The pieces of hardware (hdal_device_hardware_index) partition the devices:
 * the identity chains, the nodes of host memory joined across processes, and
 * each device that computes on host CPUs without an identity of its own (PoCL's
 * CPU device) counted with the lowest host-memory device its cpuset meets (or,
 * with none, the lowest such device). */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "identity.h"
#include "internal.h"

enum { NONE = -1 };

typedef struct {
  int host, proc, numa;
  bool hostmem; /* a device of the host's memory (kDLCPU) */
  bool pure;    /* a topology cpuset and neither PCI bus id nor UUID: host CPUs seen by another runtime */
  size_t group; /* offset of its identity group in members[] */
  size_t group_len;
  long cls; /* its cpuset class, or NONE */
} device_info;

typedef struct {
  int host;
  size_t nh_first, nh_count; /* its members not of host memory: nonhost[nh_first ..), ascending */
  size_t hm_first, hm_count; /* its members of host memory: hostmem[hm_first ..), by NUMA node, then ascending */
  size_t hm_min, pure_min;   /* its smallest host-memory and pure member; SIZE_MAX: none */
  size_t range, nranges;     /* its CPUs: ranges[range .. range + nranges), sorted */
  size_t host_first, host_end; /* the classes of its host */
} cpuset_class;

typedef struct hdal__hardware {
  size_t n;
  device_info *dev;
  size_t *members; /* device indices by identity group, ascending in each */
  size_t nclasses;
  cpuset_class *classes;
  size_t *nonhost, *hostmem;
  unsigned long (*ranges)[2];
  size_t *mark; /* per class: the query that found it linked */
  size_t query;
  int *piece;   /* per device: its piece of hardware */
  size_t npieces;
} hdal__hardware;

/* A sort key: a device's host, a string of it, its index. */
typedef struct {
  int host;
  const char *s;
  size_t i;
} key;

static int cmp_key_nocase(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  int c = strcasecmp(x->s, y->s); /* lspci prints hex in lower case, some runtimes in upper */
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int cmp_key(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Joins the devices of one host that share attribute `name` (compared without case). */
static void unite_by(const hdal_context *ctx, const device_info *dev, key *keys, size_t *parent, const char *name) {
  size_t k = 0;
  for (size_t i = 0; i < ctx->ndevices; i++) {
    const char *s = hdal__device_identity(ctx->devices[i], name);
    if (s) keys[k++] = (key){dev[i].host, s, i};
  }
  qsort(keys, k, sizeof *keys, cmp_key_nocase);
  for (size_t j = 1; j < k; j++)
    if (keys[j].host == keys[j - 1].host && hdal__same_identity(keys[j].s, keys[j - 1].s))
      hdal__uf_unite(parent, keys[j - 1].i, keys[j].i);
}

/* The host CPUs a device computes on: its cpuset if its backend flags it a topology attribute. */
static const char *topology_cpuset(const hdal_device *d) {
  for (size_t i = 0; i < d->nattrs; i++)
    if (!strcmp(d->attrs[i].key, HDAL_ATTRIBUTE_CPUSET))
      return d->attrs[i].type_flags & HDAL_ATTRIBUTE_TOPOLOGY ? d->attrs[i].value : NULL;
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

static bool classes_intersect(const hdal__hardware *hw, const cpuset_class *a, const cpuset_class *b) {
  const unsigned long(*x)[2] = hw->ranges + a->range, (*y)[2] = hw->ranges + b->range;
  for (size_t i = 0, j = 0; i < a->nranges && j < b->nranges;) {
    if (x[i][0] <= y[j][1] && y[j][0] <= x[i][1]) return true;
    if (x[i][1] < y[j][1]) i++;
    else j++;
  }
  return false;
}

/* Host-memory members of a class: by NUMA node, then index. */
typedef struct {
  int numa;
  size_t i;
} by_numa;

static int cmp_by_numa(const void *a, const void *b) {
  const by_numa *x = a, *y = b;
  if (x->numa != y->numa) return x->numa < y->numa ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* The cpuset classes: devices with a topology cpuset sorted by (host, cpuset). */
static bool build_classes(hdal__hardware *hw, const hdal_context *ctx, key *keys) {
  size_t k = 0, nranges = 0;
  for (size_t i = 0; i < hw->n; i++) {
    const char *s = topology_cpuset(ctx->devices[i]);
    if (!s) continue;
    keys[k++] = (key){hw->dev[i].host, s, i};
    nranges++; /* at most one range more than it has commas */
    for (const char *p = s; (p = strchr(p, ',')); p++) nranges++;
  }
  qsort(keys, k, sizeof *keys, cmp_key);
  size_t m = k ? k : 1;
  hw->classes = malloc(m * sizeof *hw->classes);
  hw->nonhost = malloc(m * sizeof *hw->nonhost);
  hw->hostmem = malloc(m * sizeof *hw->hostmem);
  hw->ranges = malloc((nranges ? nranges : 1) * sizeof *hw->ranges);
  hw->mark = calloc(m, sizeof *hw->mark);
  by_numa *order = malloc(m * sizeof *order);
  if (!hw->classes || !hw->nonhost || !hw->hostmem || !hw->ranges || !hw->mark || !order) {
    free(order);
    return false;
  }
  size_t used = 0, nh = 0, hm = 0;
  for (size_t j = 0; j < k; j++) {
    size_t i = keys[j].i;
    if (j == 0 || keys[j].host != keys[j - 1].host || strcmp(keys[j].s, keys[j - 1].s)) {
      cpuset_class *c = &hw->classes[hw->nclasses++];
      *c = (cpuset_class){.host = keys[j].host, .nh_first = nh, .hm_first = hm, .hm_min = SIZE_MAX,
                          .pure_min = SIZE_MAX, .range = used};
      c->nranges = parse_cpuset(keys[j].s, hw->ranges + used);
      used += c->nranges;
    }
    cpuset_class *c = &hw->classes[hw->nclasses - 1];
    const device_info *d = &hw->dev[i];
    if (d->hostmem) {
      order[hm++] = (by_numa){d->numa, i};
      c->hm_count++;
      if (i < c->hm_min) c->hm_min = i;
    } else {
      hw->nonhost[nh++] = i;
      c->nh_count++;
      if (d->pure && i < c->pure_min) c->pure_min = i;
    }
    hw->dev[i].cls = (long)hw->nclasses - 1;
  }
  for (size_t c = 0; c < hw->nclasses; c++) {
    cpuset_class *cl = &hw->classes[c];
    qsort(order + cl->hm_first, cl->hm_count, sizeof *order, cmp_by_numa);
    for (size_t j = cl->hm_first; j < cl->hm_first + cl->hm_count; j++) hw->hostmem[j] = order[j].i;
  }
  free(order);
  for (size_t a = 0, b; a < hw->nclasses; a = b) {
    for (b = a; b < hw->nclasses && hw->classes[b].host == hw->classes[a].host; b++) {}
    for (size_t c = a; c < b; c++) hw->classes[c].host_first = a, hw->classes[c].host_end = b;
  }
  return true;
}

/* The host-memory members of class c on NUMA node `numa`: hostmem[*first .. *end). */
static void numa_run(const hdal__hardware *hw, const cpuset_class *c, int numa, size_t *first, size_t *end) {
  size_t lo = c->hm_first, hi = c->hm_first + c->hm_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (hw->dev[hw->hostmem[mid]].numa < numa) lo = mid + 1;
    else hi = mid;
  }
  *first = lo;
  for (hi = c->hm_first + c->hm_count; lo < hi;) {
    size_t mid = lo + (hi - lo) / 2;
    if (hw->dev[hw->hostmem[mid]].numa <= numa) lo = mid + 1;
    else hi = mid;
  }
  *end = lo;
}

/* In list[first .. end), ascending indices hence processes: the first entry past those of process p. */
static size_t past_process(const hdal__hardware *hw, const size_t *list, size_t first, size_t end, int p) {
  while (first < end) {
    size_t mid = first + (end - first) / 2;
    if (hw->dev[list[mid]].proc <= p) first = mid + 1;
    else end = mid;
  }
  return first;
}

/* The pieces: identity chains (in parent already), host-memory nodes across processes, pure cpuset devices. */
static bool build_pieces(hdal__hardware *hw, size_t *parent) {
  for (size_t c = 0; c < hw->nclasses; c++) {
    const cpuset_class *own = &hw->classes[c];
    size_t target = SIZE_MAX, pure = SIZE_MAX;
    for (size_t o = own->host_first; o < own->host_end; o++) {
      const cpuset_class *other = &hw->classes[o];
      if (!classes_intersect(hw, own, other)) continue;
      if (other->hm_min < target) target = other->hm_min;
      if (other->pure_min < pure) pure = other->pure_min;
      /* The same node of two processes: each member of other's run joins the first member of own's run
       * of another process, which the pass with own and other swapped joins in turn. */
      for (size_t j = other->hm_first, end; j < other->hm_first + other->hm_count; j = end) {
        int numa = hw->dev[hw->hostmem[j]].numa;
        size_t first, last;
        numa_run(hw, other, numa, &j, &end);
        if (numa < 0) continue;
        numa_run(hw, own, numa, &first, &last);
        if (first == last) continue;
        size_t a0 = hw->hostmem[first], a1_at = past_process(hw, hw->hostmem, first, last, hw->dev[a0].proc);
        for (size_t b = j; b < end; b++) {
          size_t i = hw->hostmem[b];
          if (hw->dev[i].proc != hw->dev[a0].proc) hdal__uf_unite(parent, i, a0);
          else if (a1_at < last) hdal__uf_unite(parent, i, hw->hostmem[a1_at]);
        }
      }
    }
    /* Host CPUs seen by another runtime: counted with the lowest node of host memory they meet. */
    if (target == SIZE_MAX) target = pure;
    for (size_t j = own->nh_first; target != SIZE_MAX && j < own->nh_first + own->nh_count; j++)
      if (hw->dev[hw->nonhost[j]].pure) hdal__uf_unite(parent, hw->nonhost[j], target);
  }
  hw->piece = malloc((hw->n ? hw->n : 1) * sizeof *hw->piece);
  if (!hw->piece) return false;
  for (size_t i = 0; i < hw->n; i++) {
    size_t r = hdal__uf_find(parent, i); /* the smallest index of its piece: numbered already */
    hw->piece[i] = r == i ? (int)hw->npieces++ : hw->piece[r];
  }
  return true;
}

static void hardware_free(hdal__hardware *hw) {
  if (!hw) return;
  free(hw->dev);
  free(hw->members);
  free(hw->classes);
  free(hw->nonhost);
  free(hw->hostmem);
  free(hw->ranges);
  free(hw->mark);
  free(hw->piece);
  free(hw);
}

static hdal__hardware *hardware_new(const hdal_context *ctx) {
  hdal__hardware *hw = calloc(1, sizeof *hw);
  if (!hw) return NULL;
  size_t n = hw->n = ctx->ndevices;
  size_t m = n ? n : 1;
  key *keys = calloc(m, sizeof *keys);
  size_t *parent = malloc(m * sizeof *parent), *start = calloc(m, sizeof *start);
  hw->dev = calloc(m, sizeof *hw->dev); /* zeroed: gcc 14 cannot see that unite_by reads only what the loop wrote */
  hw->members = malloc(m * sizeof *hw->members);
  bool ok = keys && parent && start && hw->dev && hw->members;
  for (size_t i = 0; ok && i < n; i++) {
    const hdal_device *d = ctx->devices[i];
    bool hostmem = d->dl.device_type == kDLCPU;
    bool pure = !hostmem && topology_cpuset(d) && !hdal__device_has_identity(d);
    hw->dev[i] = (device_info){d->host->index, d->process_index, d->numa_node, hostmem, pure, 0, 0, NONE};
    parent[i] = i;
  }
  if (ok) {
    unite_by(ctx, hw->dev, keys, parent, HDAL_ATTRIBUTE_PCI_BUS_ID);
    unite_by(ctx, hw->dev, keys, parent, HDAL_ATTRIBUTE_UUID);
    /* Each group's members in index order: a counting sort by root (the group's smallest index). */
    for (size_t i = 0; i < n; i++) start[hdal__uf_find(parent, i)]++;
    for (size_t i = 0, sum = 0; i < n; i++) {
      size_t c = start[i];
      start[i] = sum, sum += c;
    }
    for (size_t i = 0; i < n; i++) {
      size_t r = hdal__uf_find(parent, i);
      hw->dev[i].group = start[r];
      hw->members[start[r] + hw->dev[r].group_len++] = i;
    }
    for (size_t i = 0; i < n; i++) hw->dev[i].group_len = hw->dev[hdal__uf_find(parent, i)].group_len;
    ok = build_classes(hw, ctx, keys) && build_pieces(hw, parent);
  }
  free(keys);
  free(parent);
  free(start);
  if (!ok) {
    hardware_free(hw);
    return NULL;
  }
  return hw;
}

void hdal__hardware_forget(hdal_context *ctx) {
  hardware_free(ctx->hardware);
  ctx->hardware = NULL;
}

/* The context's links, worked out now if they are not yet; NULL when out of memory.  The lock is held. */
static hdal__hardware *hardware_of(hdal_context *ctx) {
  if (!ctx->hardware) ctx->hardware = hardware_new(ctx);
  return ctx->hardware;
}

/* ---- queries ---- */

/* Keeps the `max` smallest device indices seen, ascending and without repeats, in out[0 .. *k). */
static void keep_smallest(int *out, size_t max, size_t *k, size_t v) {
  if (*k == max && (int)v >= out[max - 1]) return;
  size_t j = *k;
  while (j > 0 && out[j - 1] > (int)v) j--;
  if (j > 0 && out[j - 1] == (int)v) return;
  if (*k < max) (*k)++;
  memmove(out + j + 1, out + j, (*k - j - 1) * sizeof *out);
  out[j] = (int)v;
}

/* The smallest members of an ascending list but `self` and those of process `skip` (NONE: none),
 * until they can no longer be among the `max` smallest. */
static void keep_list(const hdal__hardware *hw, int *out, size_t max, size_t *k, const size_t *list, size_t len,
                      size_t self, int skip) {
  for (size_t j = 0; j < len; j++) {
    size_t v = list[j];
    if (*k == max && (int)v >= out[max - 1]) return;
    if (v != self && hw->dev[v].proc != skip) keep_smallest(out, max, k, v);
  }
}

/* Whether g, whose class meets d's, is a cpuset partner of d. */
static bool cpuset_partner(const device_info *d, const device_info *g) {
  if (!d->hostmem || !g->hostmem) return true;
  return d->proc != g->proc && d->numa >= 0 && d->numa == g->numa;
}

/* How many devices device i is the same hardware as; the smallest `max` of them, ascending, in out[0 .. *shown). */
static size_t same_hardware(hdal__hardware *hw, size_t i, int *out, size_t max, size_t *shown) {
  const device_info *d = &hw->dev[i];
  const size_t *group = hw->members + d->group;
  size_t count = d->group_len - 1, k = 0;
  if (max) keep_list(hw, out, max, &k, group, d->group_len, i, NONE);
  if (d->cls != NONE) {
    const cpuset_class *own = &hw->classes[d->cls];
    size_t q = ++hw->query;
    for (size_t c = own->host_first; c < own->host_end; c++) {
      const cpuset_class *o = &hw->classes[c];
      if (!classes_intersect(hw, own, o)) continue;
      hw->mark[c] = q;
      count += o->nh_count - (c == (size_t)d->cls && !d->hostmem);
      if (max) keep_list(hw, out, max, &k, hw->nonhost + o->nh_first, o->nh_count, i, NONE);
      if (!d->hostmem) {
        count += o->hm_count;
        /* By NUMA node: ascending run by run, each kept while it can be. */
        for (size_t j = o->hm_first, end; max && j < o->hm_first + o->hm_count; j = end) {
          numa_run(hw, o, hw->dev[hw->hostmem[j]].numa, &j, &end);
          keep_list(hw, out, max, &k, hw->hostmem + j, end - j, i, NONE);
        }
      } else if (d->numa >= 0) {
        /* Host memory: the same node of the other processes. */
        size_t first, end;
        numa_run(hw, o, d->numa, &first, &end);
        size_t mine = past_process(hw, hw->hostmem, first, end, d->proc), from = mine;
        while (from > first && hw->dev[hw->hostmem[from - 1]].proc == d->proc) from--;
        count += (end - first) - (mine - from);
        if (max) keep_list(hw, out, max, &k, hw->hostmem + first, end - first, i, d->proc);
      }
    }
    /* Partners by identity and by cpuset alike were counted twice. */
    for (size_t j = 0; j < d->group_len; j++) {
      const device_info *g = &hw->dev[group[j]];
      count -= group[j] != i && g->cls != NONE && hw->mark[g->cls] == q && cpuset_partner(d, g);
    }
  }
  *shown = k;
  return count;
}

/* ---- the API ---- */

HDAL_API hdal_error *hdal_device_same_hardware(const hdal_device *d, int *ids, size_t max, size_t *count) {
  if (!d) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_same_hardware: device is NULL");
  if (!count) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_same_hardware: count is NULL");
  if (!ids && max) return hdal__error_new(HDAL_INVALID_ARGUMENT, "hdal_device_same_hardware: ids is NULL, max %zu", max);
  hdal_context *ctx = d->ctx;
  pthread_mutex_lock(&ctx->lock);
  hdal__hardware *hw = hardware_of(ctx);
  size_t shown;
  if (hw) *count = same_hardware(hw, (size_t)d->id, ids, max, &shown);
  pthread_mutex_unlock(&ctx->lock);
  return hw ? NULL : hdal__error_oom();
}

HDAL_API int hdal_device_hardware_index(const hdal_device *d) {
  if (!d) return -1;
  hdal_context *ctx = d->ctx;
  pthread_mutex_lock(&ctx->lock);
  hdal__hardware *hw = hardware_of(ctx);
  int piece = hw ? hw->piece[d->id] : -1;
  pthread_mutex_unlock(&ctx->lock);
  return piece;
}

HDAL_API size_t hdal_context_hardware_count(const hdal_context *ctx) {
  if (!ctx) return 0;
  hdal_context *c = (hdal_context *)ctx; /* the links are worked out once, under the lock */
  pthread_mutex_lock(&c->lock);
  hdal__hardware *hw = hardware_of(c);
  size_t n = hw ? hw->npieces : 0;
  pthread_mutex_unlock(&c->lock);
  return n;
}
