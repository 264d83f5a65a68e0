/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — which backends a context has (backend_list.h): the backend
 * selection (HDAL_BACKENDS), the list of hdal's backends and the modules on
 * the path, and the check of a name against that list. */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend_list.h"
#include "device_table.h"

void hdal__backend_selection_free(hdal__backend_selection *s) {
  hdal__string_list_free(s->names, s->n);
  free(s->exclude);
  memset(s, 0, sizeof *s);
}

/* "cpu,opencl" keeps only those; "-cuda" drops one; both may mix ("cpu,-cpu" keeps nothing). */
hdal_error *hdal__backend_selection_parse(const char *spec, hdal__backend_selection *s) {
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
        hdal__backend_selection_free(s);
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
  hdal__backend_selection_free(s);
  return hdal__error_oom();
}

static bool selection_enables(const hdal__backend_selection *s, const char *name) {
  bool listed = false;
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->names[i], name)) {
      if (s->exclude[i]) return false;
      listed = true;
    }
  return listed || !s->any_include;
}

/* Whether `name` is asked for by name (and not dropped): "vulkan", not "-cuda" or everything by default. */
static bool selection_names(const hdal__backend_selection *s, const char *name) {
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
hdal_error *hdal__backends_list(hdal_context *ctx, const hdal__backend_selection *sel, const char *path,
                                const char *who) {
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
