/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — one GPU, several faces (faces.h): hiding the faces of GPUs a
 * narrowed runtime does not show, and binding GPUs to local ranks
 * (docs/reference.md, "The scheduler's GPUs on every backend" and "GPUs per
 * local rank").  Two devices are one GPU when they share a UUID or a PCI bus
 * id, compared without case, or are joined by a chain of such, as hdal-ls
 * links them (identity.h; docs/reference.md, "Device attributes"). */
#include "config.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "faces.h"
#include "identity.h"
#include "selector.h"

/* ---- hiding (docs/reference.md, "The scheduler's GPUs on every backend") ---- */

/* The runtimes' facts are their modules' (hdal_backend::pci_vendor, ::visibility): nothing here names a
 * runtime or a variable. */

/* The PCI vendor of a device's GPU: its vendor_id attribute (Vulkan, Level Zero, OpenCL), else the one
 * vendor its backend's runtime drives; 0 when unknown. */
static unsigned vendor_of(const hdal__backend *b, const hdal_device *d) {
  const char *v = hdal__device_identity(d, "vendor_id");
  if (v) {
    char *end;
    unsigned long u = strtoul(v, &end, 16);
    return *end || u > UINT_MAX ? 0 : (unsigned)u;
  }
  return b->desc ? b->desc->pci_vendor : 0;
}

/* Whether a variable's first entry names no device in the CUDA, HIP and ROCr grammar (ordinals, "GPU-"
 * and "MIG-" UUIDs): "", "-1", "NoDevFiles" leave the runtime without a GPU, whatever it has. */
static bool names_nothing(const char *value) {
  const char *b = value, *e = value + strcspn(value, ",");
  while (b < e && (*b == ' ' || *b == '\t')) b++;
  while (e > b && (e[-1] == ' ' || e[-1] == '\t')) e--;
  if (b == e) return true;
  if (e - b > 4 && (!strncasecmp(b, "GPU-", 4) || !strncasecmp(b, "MIG-", 4))) return false;
  for (const char *p = b; p < e; p++)
    if (*p < '0' || *p > '9') return true;
  return false;
}

/* The narrowing's variables that are set, "A, B" into buf; false when none is. */
static bool set_variables(const hdal_backend_visibility *vars, char *buf, size_t len, bool *nothing) {
  bool any = false;
  buf[0] = '\0';
  *nothing = false;
  for (size_t i = 0; vars[i].name; i++) {
    const char *v = getenv(vars[i].name);
    if (!v || (!*v && (vars[i].flags & HDAL_BACKEND_VISIBILITY_EMPTY_IS_ALL))) continue;
    if ((vars[i].flags & HDAL_BACKEND_VISIBILITY_FALLBACK) && i > 0 && getenv(vars[i - 1].name)) continue;
    *nothing |= (vars[i].flags & HDAL_BACKEND_VISIBILITY_ORDINALS) && names_nothing(v);
    size_t at = strlen(buf);
    snprintf(buf + at, len - at, "%s%s", any ? ", " : "", vars[i].name);
    any = true;
  }
  return any;
}

/* Whether device d of another backend is a face of one of the runtime's devices. */
static bool shown_by(const hdal__backend *r, const hdal_device *d) {
  for (size_t i = 0; r && i < r->ndevices; i++)
    if (hdal__same_gpu(r->devices[i], d)) return true;
  return false;
}

void hdal__faces_hide(hdal_context *ctx) {
  size_t n = 0;
  for (size_t k = 0; k < ctx->nbackends; k++) {
    hdal__backend *r = &ctx->backends[k];
    if (!r->desc || !r->desc->visibility || !r->desc->pci_vendor) continue; /* no vendor: no GPUs to tell */
    if (n == HDAL__NARROWINGS) {
      hdal__debug(ctx, "faces", "backend %s: more than %d runtimes narrow their GPUs: its variables are not read",
                  r->name, HDAL__NARROWINGS);
      continue;
    }
    char *who = ctx->narrowed_by[n];
    bool nothing;
    if (!set_variables(r->desc->visibility, who, sizeof ctx->narrowed_by[n], &nothing)) continue;
    ctx->narrower[n] = r;
    unsigned vendor = r->desc->pci_vendor;
    bool ran = r->kind == HDAL_BACKEND_OK;
    if (!ran && !nothing) {
      /* Said only where it matters: some backend lists a GPU of that vendor. */
      bool any = false;
      for (size_t i = 0; i < ctx->nbackends && !any; i++)
        for (size_t j = 0; ctx->backends[i].kind == HDAL_BACKEND_OK && j < ctx->backends[i].ndevices && !any; j++)
          any = vendor_of(&ctx->backends[i], ctx->backends[i].devices[j]) == vendor;
      if (any)
        hdal__debug(ctx, "faces",
                    "%s set, but backend %s did not run (%s): other backends' GPUs of vendor 0x%04x are not narrowed",
                    who, r->name, r->status ? r->status : r->enabled ? "unavailable" : "disabled", vendor);
      n++;
      continue;
    }
    for (size_t i = 0; i < ctx->nbackends; i++) {
      hdal__backend *b = &ctx->backends[i];
      if (b == r || b->kind != HDAL_BACKEND_OK) continue;
      size_t kept = 0;
      for (size_t j = 0; j < b->ndevices; j++) {
        hdal_device *d = b->devices[j];
        const char *uuid = hdal__device_identity(d, HDAL_ATTRIBUTE_UUID);
        const char *pci = hdal__device_identity(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
        if (vendor_of(b, d) != vendor || (!uuid && !pci) || (ran && shown_by(r, d))) {
          b->devices[kept++] = d;
          continue;
        }
        hdal__debug(ctx, b->name,
                    "device %d (%s; uuid %s, PCI %s) hidden: backend %s does not show this GPU (%s); "
                    "HDAL_HIDE_FACES=0 keeps it",
                    d->local_hardware_id, d->kind, uuid ? uuid : "none", pci ? pci : "none", r->name, who);
        hdal__device_free(d);
        b->hidden[n]++;
        b->nhidden++;
      }
      b->ndevices = kept;
    }
    n++;
  }
}

void hdal__faces_hidden_text(const hdal__backend *b, char *buf, size_t len) {
  buf[0] = '\0';
  if (!b->nhidden) return;
  size_t kinds = 0, at = (size_t)snprintf(buf, len, "; %zu hidden: ", b->nhidden);
  for (size_t n = 0; n < HDAL__NARROWINGS; n++) kinds += b->hidden[n] != 0;
  for (size_t n = 0, done = 0; n < HDAL__NARROWINGS && at < len; n++) {
    if (!b->hidden[n]) continue;
    char count[32] = "";
    if (kinds > 1) snprintf(count, sizeof count, "%zu ", b->hidden[n]); /* "2 not shown by cuda (...), 1 ..." */
    at += (size_t)snprintf(buf + at, len - at, "%s%snot shown by %s (%s)", done++ ? ", " : "", count,
                           b->ctx->narrower[n]->name, b->ctx->narrowed_by[n]);
  }
}

/* ---- binding (docs/reference.md, "GPUs per local rank") ---- */

/* A launcher's number: digits only, below INT_MAX. */
static bool read_int(const char *s, int *out) {
  if (!s || !*s) return false;
  long v = 0;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9' || (v = v * 10 + (*p - '0')) >= INT_MAX) return false;
  *out = (int)v;
  return true;
}

/* Slurm's tasks per node, "2(x3),1", for node `node` of the step: the count; 0 when malformed or shorter. */
static int slurm_tasks_on(const char *list, int node) {
  for (const char *p = list; p && *p;) {
    char *end;
    long n = strtol(p, &end, 10), times = 1;
    if (end == p || n <= 0 || n >= INT_MAX) return 0;
    p = end;
    if (!strncmp(p, "(x", 2)) {
      times = strtol(p + 2, &end, 10);
      if (end == p + 2 || *end != ')' || times <= 0) return 0;
      p = end + 1;
    }
    if (node < times) return (int)n;
    node -= (int)times;
    if (*p == ',') p++;
    else if (*p) return 0;
  }
  return 0;
}

/* This process's local rank and the count of ranks on its host, as the launcher says them: Open MPI's
 * mpirun, MPICH's hydra, then Slurm's srun (in that order: mpirun inside an allocation inherits
 * SLURM_LOCALID of the batch step).  False when none says, or says it wrongly. */
static bool launcher_local_rank(int *rank, int *size, const char **source) {
  static const char *const pairs[][2] = {{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                                         {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    if (read_int(getenv(pairs[i][0]), rank) && read_int(getenv(pairs[i][1]), size) && *rank < *size) {
      *source = pairs[i][0];
      return true;
    }
  int node = 0;
  const char *tasks = getenv("SLURM_STEP_TASKS_PER_NODE");
  if (!tasks) tasks = getenv("SLURM_TASKS_PER_NODE");
  if (getenv("SLURM_NODEID") && !read_int(getenv("SLURM_NODEID"), &node)) return false;
  if (read_int(getenv("SLURM_LOCALID"), rank) && (*size = slurm_tasks_on(tasks, node)) > *rank) {
    *source = "SLURM_LOCALID";
    return true;
  }
  return false;
}

hdal_error *hdal__binding_parse(const char *spec, const char *who, int local_rank, int local_size,
                                hdal__binding *out) {
  *out = (hdal__binding){HDAL__BINDING_NONE, 0, 1, who, "none"};
  if (!spec || !*spec || !strcmp(spec, "none")) return NULL;
  if (strcmp(spec, "local-rank")) {
    int shown = strlen(spec) > 64 ? 64 : (int)strlen(spec);
    return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: unknown GPU binding '%.*s%s'; known: none, local-rank", who,
                           shown, spec, shown < (int)strlen(spec) ? "..." : "");
  }
  out->mode = HDAL__BINDING_LOCAL_RANK;
  if (local_size > 0) {
    out->local_rank = local_rank, out->local_size = local_size;
    out->source = "hdal_context_options: local_rank";
  } else if (!launcher_local_rank(&out->local_rank, &out->local_size, &out->source)) {
    out->local_rank = 0, out->local_size = 1, out->source = "none";
  }
  return NULL;
}

/* One GPU face taking part in the binding, and the GPU it belongs to. */
typedef struct {
  hdal__backend *b;
  size_t index; /* in b->devices */
  size_t rank;  /* its GPU's place in the order */
} face;

/* A GPU's sort key: its smallest PCI bus id, else its smallest UUID, else its first face's place. */
typedef struct {
  const char *pci, *uuid;
  size_t backend, local;
  size_t root;
} gpu_key;

static const char *smaller(const char *a, const char *b) { return !a || (b && strcasecmp(b, a) < 0) ? b : a; }

static int cmp_gpu(const void *pa, const void *pb) {
  const gpu_key *a = pa, *b = pb;
  if (!a->pci != !b->pci) return a->pci ? -1 : 1;
  int c = a->pci ? strcasecmp(a->pci, b->pci) : 0;
  if (c) return c;
  if (!a->uuid != !b->uuid) return a->uuid ? -1 : 1;
  if ((c = a->uuid ? strcasecmp(a->uuid, b->uuid) : 0)) return c;
  if (a->backend != b->backend) return a->backend < b->backend ? -1 : 1;
  return (a->local > b->local) - (a->local < b->local);
}

/* Whether GPU g of G falls to local rank r of L: blocks as even as can be (the first G % L ranks one
 * more) when there are at least as many GPUs as ranks, else GPU r % G, shared round-robin. */
static bool falls_to(size_t g, size_t G, size_t r, size_t L) {
  if (G < L) return g == r % G;
  size_t q = G / L, m = G % L, start = r * q + (r < m ? r : m);
  return g >= start && g < start + q + (r < m);
}

static bool binds(const hdal_device *d) {
  const char *k = hdal__selector_kind_of(d);
  return k && (!strcasecmp(k, "gpu") || !strcasecmp(k, "accelerator"));
}

hdal_error *hdal__binding_apply(hdal_context *ctx) {
  const hdal__binding *bd = &ctx->binding;
  if (bd->mode != HDAL__BINDING_LOCAL_RANK) return NULL;
  if (bd->local_size <= 1) {
    hdal__debug(ctx, "binding", "local rank %d of %d (%s): this process keeps every GPU", bd->local_rank,
                bd->local_size, bd->source);
    return NULL;
  }
  size_t n = 0;
  for (size_t i = 0; i < ctx->nbackends; i++)
    for (size_t j = 0; ctx->backends[i].kind == HDAL_BACKEND_OK && j < ctx->backends[i].ndevices; j++)
      n += binds(ctx->backends[i].devices[j]);
  if (!n) return NULL;
  face *f = calloc(n, sizeof *f);
  gpu_key *keys = calloc(n, sizeof *keys);
  size_t *parent = malloc(n * sizeof *parent); /* union-find over faces */
  if (!f || !keys || !parent) {
    free(f);
    free(keys);
    free(parent);
    return hdal__error_oom();
  }
  size_t k = 0;
  for (size_t i = 0; i < ctx->nbackends; i++)
    for (size_t j = 0; ctx->backends[i].kind == HDAL_BACKEND_OK && j < ctx->backends[i].ndevices; j++)
      if (binds(ctx->backends[i].devices[j])) parent[k] = k, f[k++] = (face){&ctx->backends[i], j, 0};
  /* GPUs: faces joined by a UUID or a PCI bus id (a handful per host: pairs are cheap). */
  for (size_t a = 0; a < n; a++)
    for (size_t b = a + 1; b < n; b++)
      if (hdal__same_gpu(f[a].b->devices[f[a].index], f[b].b->devices[f[b].index])) hdal__uf_unite(parent, a, b);
  size_t G = 0;
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = f[i].b->devices[f[i].index];
    size_t r = hdal__uf_find(parent, i), g;
    for (g = 0; g < G && keys[g].root != r; g++) {}
    if (g == G) keys[G++] = (gpu_key){NULL, NULL, (size_t)(f[i].b - ctx->backends), (size_t)d->local_hardware_id, r};
    keys[g].pci = smaller(keys[g].pci, hdal__device_identity(d, HDAL_ATTRIBUTE_PCI_BUS_ID));
    keys[g].uuid = smaller(keys[g].uuid, hdal__device_identity(d, HDAL_ATTRIBUTE_UUID));
  }
  qsort(keys, G, sizeof *keys, cmp_gpu);
  for (size_t g = 0; g < G; g++)
    for (size_t i = 0; i < n; i++)
      if (hdal__uf_find(parent, i) == keys[g].root) f[i].rank = g;
  size_t R = (size_t)bd->local_rank, L = (size_t)bd->local_size, owned = 0;
  for (size_t g = 0; g < G; g++) owned += falls_to(g, G, R, L);
  hdal__debug(ctx, "binding", "local rank %d of %d (%s): %zu of the %zu GPUs in PCI bus id order fall to it",
              bd->local_rank, bd->local_size, bd->source, owned, G);
  for (size_t i = 0; i < n; i++) {
    if (falls_to(f[i].rank, G, R, L)) continue;
    hdal_device **slot = &f[i].b->devices[f[i].index];
    hdal__debug(ctx, f[i].b->name, "device %d (%s): GPU %zu of %zu, another local rank's", (*slot)->local_hardware_id,
                (*slot)->kind, f[i].rank, G);
    hdal__device_free(*slot);
    *slot = NULL;
    f[i].b->nowned_elsewhere++;
  }
  for (size_t i = 0; i < ctx->nbackends; i++) {
    hdal__backend *b = &ctx->backends[i];
    size_t kept = 0;
    for (size_t j = 0; j < b->ndevices; j++)
      if (b->devices[j]) b->devices[kept++] = b->devices[j];
    b->ndevices = kept;
  }
  free(f);
  free(keys);
  free(parent);
  return NULL;
}
