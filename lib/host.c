/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — hosts: which host a process is on, and the hosts of a context's
 * devices numbered densely (docs/dlpack.md, "Hosts"; docs/mpi.md, "Hosts and the
 * same hardware").
 *
 * A host is a name (the UTS hostname) and an id: the kernel's boot id and the
 * network namespace, "BOOT_ID/net:[INODE]".  Two containers or namespaces
 * given one hostname differ in their namespace; two machines, or one rebooted,
 * in their boot id.  Both are read from /proc, under HDAL_FSROOT when it is
 * set (the tests' stand-in for /), so a test can give processes of one
 * machine the identities of several hosts. */
#include "config.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

bool hdal__host_name_valid(const char *s, size_t n) {
  if (n == 0 || n > HDAL__HOST_FIELD_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F) return false;
  return true;
}

bool hdal__host_id_valid(const char *s, size_t n) {
  if (n == 0 || n > HDAL__HOST_FIELD_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x21 || s[i] > 0x7E) return false;
  return true;
}

/* The first line of ROOT/path, without its end of line, in *out (malloc'ed); *out NULL when the file
 * cannot be read or the line is empty.  false when out of memory. */
static bool first_line(const char *root, const char *path, char **out) {
  char file[PATH_MAX], line[HDAL__HOST_FIELD_MAX + 2];
  *out = NULL;
  if (snprintf(file, sizeof file, "%s%s", root, path) >= (int)sizeof file) return true;
  FILE *f = fopen(file, "re");
  if (!f) return true;
  bool got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!got) return true;
  line[strcspn(line, "\n")] = '\0';
  return !*line || (*out = strdup(line)) != NULL;
}

hdal__machine *hdal__host_new(char *name, char *id) {
  hdal__machine *h = calloc(1, sizeof *h);
  if (!h) {
    free(name);
    free(id);
    return NULL;
  }
  h->name = name;
  h->id = id;
  h->index = -1;
  return h;
}

void hdal__host_free(hdal__machine *h) {
  if (!h) return;
  free(h->name);
  free(h->id);
  free(h);
}

hdal__machine *hdal__host_local(void) {
  const char *root = secure_getenv("HDAL_FSROOT");
  if (!root) root = "";
  char *name, *boot, *id = NULL;
  if (!first_line(root, "/proc/sys/kernel/hostname", &name)) return NULL;
  if (!name) {
    char buf[HOST_NAME_MAX + 1] = "";
    if (gethostname(buf, sizeof buf) == 0 && buf[sizeof buf - 1] == '\0' && *buf && !(name = strdup(buf))) return NULL;
  }
  if (name && !hdal__host_name_valid(name, strlen(name))) free(name), name = NULL;
  /* The id: the boot id, then the network namespace as its link reads ("net:[4026531840]"). */
  if (!first_line(root, "/proc/sys/kernel/random/boot_id", &boot)) {
    free(name);
    return NULL;
  }
  char link[PATH_MAX], ns[128];
  ssize_t n = -1;
  if (boot && snprintf(link, sizeof link, "%s/proc/self/ns/net", root) < (int)sizeof link)
    n = readlink(link, ns, sizeof ns - 1);
  if (n > 0) {
    ns[n] = '\0';
    if (asprintf(&id, "%s/%s", boot, ns) < 0) {
      free(boot);
      free(name);
      return NULL;
    }
    if (!hdal__host_id_valid(id, strlen(id))) free(id), id = NULL;
  }
  free(boot);
  return hdal__host_new(name, id);
}

bool hdal__host_same(const hdal__machine *h, const char *name, const char *id) {
  if (!id || !h->id || strcmp(h->id, id)) return false; /* a host without an id is its process's alone */
  return (!name && !h->name) || (name && h->name && !strcmp(name, h->name));
}

/* ---- the hosts of a context's devices: ctx->hosts, by the lowest process on each ---- */

/* Where a host whose lowest process is p goes in ctx->hosts (among those listed but h). */
static size_t host_slot(const hdal_context *ctx, int p) {
  size_t lo = 0, hi = ctx->nhosts;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ctx->hosts[mid]->first_process < p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void hdal__hosts_place(hdal_context *ctx, hdal__machine *h, int p) {
  size_t from = ctx->nhosts;
  if (h->index >= 0) {
    if (p >= h->first_process) return; /* already there, and still in its place */
    from = (size_t)h->index;
    memmove(ctx->hosts + from, ctx->hosts + from + 1, (ctx->nhosts - from - 1) * sizeof *ctx->hosts);
    ctx->nhosts--;
  }
  h->first_process = p;
  size_t at = host_slot(ctx, p);
  memmove(ctx->hosts + at + 1, ctx->hosts + at, (ctx->nhosts - at) * sizeof *ctx->hosts);
  ctx->hosts[at] = h;
  ctx->nhosts++;
  size_t last = from < ctx->nhosts ? from : ctx->nhosts - 1;
  for (size_t i = at; i <= last; i++) ctx->hosts[i]->index = (int)i;
}

hdal__machine *hdal__hosts_find(const hdal_context *ctx, const char *name, const char *id) {
  /* The latest first: a job's processes come host by host. */
  for (size_t i = ctx->nhosts; i-- > 0;)
    if (hdal__host_same(ctx->hosts[i], name, id)) return ctx->hosts[i];
  if (ctx->own_host && ctx->own_host->index < 0 && hdal__host_same(ctx->own_host, name, id)) return ctx->own_host;
  return NULL;
}

bool hdal__hosts_reserve(hdal_context *ctx, size_t more) {
  if (ctx->nhosts + more <= ctx->hosts_cap) return true;
  size_t want = ctx->hosts_cap * 2 > ctx->nhosts + more ? ctx->hosts_cap * 2 : ctx->nhosts + more;
  hdal__machine **v = realloc(ctx->hosts, want * sizeof *v);
  if (!v) return false;
  ctx->hosts = v;
  ctx->hosts_cap = want;
  return true;
}

void hdal__hosts_free(hdal_context *ctx) {
  for (size_t i = 0; i < ctx->nhosts; i++)
    if (ctx->hosts[i] != ctx->own_host) hdal__host_free(ctx->hosts[i]);
  free(ctx->hosts);
  hdal__host_free(ctx->own_host);
  ctx->hosts = NULL;
  ctx->own_host = NULL;
  ctx->nhosts = ctx->hosts_cap = 0;
}

/* ---- the API ---- */

HDAL_API const char *hdal_device_host(const hdal_device *d) { return d && d->host ? d->host->name : NULL; }

HDAL_API int hdal_device_host_index(const hdal_device *d) { return d && d->host ? d->host->index : -1; }

HDAL_API size_t hdal_context_host_count(const hdal_context *ctx) { return ctx ? ctx->nhosts : 0; }
