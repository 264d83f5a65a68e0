/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the backend module loader.
 *
 * Modules are hdal_<name>.so files in the directories of HDAL_BACKEND_PATH, or
 * in the install directory beside libhdal when it is not set
 * (docs/backend-abi.md); the first
 * file found for a name wins.  A module that is not a regular file, cannot be
 * loaded, lacks its descriptor symbol or speaks another ABI leaves its backend
 * "unavailable: <why>" and the context goes on without it.
 */
#include "config.h"
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "../backends/library_file.h"

bool hdal__string_list_has(char *const *list, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i], s)) return true;
  return false;
}

void hdal__string_list_free(char **list, size_t n) {
  for (size_t i = 0; list && i < n; i++) free(list[i]);
  free(list);
}

/* The install directory: HDAL_MODULE_SUBDIR beside the libhdal this code is
 * in ($(libdir)/hdal/backends for $(libdir)/libhdal.so.0), wherever that file
 * is: a prefix moved elsewhere, or the Python wheel, whose libhdal and modules
 * travel together (docs/backend-abi.md, "Loading").  dladdr gives the path the
 * dynamic loader opened, which a privileged process took from its trusted
 * directories only, never from the environment.  Two copies of libhdal in one
 * process (a wheel's and the system's) so find their own modules.  Where the
 * loader gives no absolute path, configure's directory (HDAL_MODULE_DIR).
 * NULL when out of memory. */
static char *install_dir(void) {
  Dl_info info;
  const char *self = dladdr((void *)install_dir, &info) && info.dli_fname ? info.dli_fname : NULL;
  const char *slash = self && *self == '/' ? strrchr(self, '/') : NULL;
  if (!slash) return strdup(HDAL_MODULE_DIR);
  size_t n = (size_t)(slash - self) + 1;
  char *dir = malloc(n + sizeof HDAL_MODULE_SUBDIR);
  if (!dir) return NULL;
  memcpy(dir, self, n);
  memcpy(dir + n, HDAL_MODULE_SUBDIR, sizeof HDAL_MODULE_SUBDIR);
  return dir;
}

/* The user's directories replace the install directory, as HWLOC_PLUGINS_PATH
 * and OCL_ICD_VENDORS replace theirs: a build tree's suite, or a program
 * pointing at its own modules, must not also load an installed hdal's.  A
 * trailing ':' appends the install directory, as in MANPATH.  No user path
 * (NULL or empty): the install directory.  A relative directory would load
 * code from whatever the current directory happens to be (as an empty entry of
 * LD_LIBRARY_PATH does): it is left out, with a diagnostic.  The result may be
 * empty (every directory given was relative). */
char *hdal__module_search_path(const hdal_context *ctx, const char *user_path) {
  if (!user_path || !*user_path) return install_dir();
  size_t n = strlen(user_path);
  char *installed = user_path[n - 1] == ':' ? install_dir() : NULL;
  if (user_path[n - 1] == ':' && !installed) return NULL;
  char *path = malloc(n + (installed ? strlen(installed) : 0) + 2), *w = path;
  if (!path) {
    free(installed);
    return NULL;
  }
  for (const char *p = user_path; *p;) {
    size_t len = strcspn(p, ":");
    if (len && *p == '/') {
      if (w != path) *w++ = ':';
      memcpy(w, p, len);
      w += len;
    } else if (len) {
      hdal__debug(ctx, "modules", "ignoring relative directory '%.*s' in the module path", (int)len, p);
    }
    p += len + (p[len] == ':');
  }
  if (installed) {
    if (w != path) *w++ = ':';
    size_t len = strlen(installed);
    memcpy(w, installed, len);
    w += len;
    free(installed);
  }
  *w = '\0';
  return path;
}

/* "hdal_opencl.so" -> "opencl" in *name; false for anything else.  *name is
 * NULL after true only when out of memory. */
static bool module_name(const char *file, char **name) {
  size_t len = strlen(file);
  *name = NULL;
  if (len <= 8 || strncmp(file, "hdal_", 5) || strcmp(file + len - 3, ".so")) return false;
  for (const char *p = file + 5; p < file + len - 3; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  *name = strndup(file + 5, len - 8);
  return true;
}

/* What a directory visitor tells path_each. */
enum { WALK_ON, WALK_OOM };

/* Calls fn(dir) for each non-empty directory of a ':'-separated path until fn
 * answers WALK_OOM, and returns WALK_OOM then, WALK_ON otherwise. */
static int path_each(const char *path, int (*fn)(const char *dir, void *arg), void *arg) {
  for (const char *p = path; *p;) {
    size_t len = strcspn(p, ":");
    if (len) {
      char *dir = strndup(p, len);
      if (!dir) return WALK_OOM;
      int r = fn(dir, arg);
      free(dir);
      if (r != WALK_ON) return r;
    }
    p += len + (p[len] == ':');
  }
  return WALK_ON;
}

typedef struct {
  char **names, **files; /* files[i]: where names[i] was found first */
  size_t n, cap;
} module_list;

static int scan_dir(const char *dir, void *arg) {
  module_list *l = arg;
  DIR *d = opendir(dir);
  if (!d) return WALK_ON; /* a missing directory is no error: it holds no module */
  int r = WALK_ON;
  for (struct dirent *e; r == WALK_ON && (e = readdir(d));) {
    char *name, *file = NULL;
    if (!module_name(e->d_name, &name)) continue;
    if (name && hdal__string_list_has(l->names, l->n, name)) { /* an earlier directory's wins */
      free(name);
      continue;
    }
    if (!name || !(file = hdal__strdup_printf("%s/%s", dir, e->d_name))) r = WALK_OOM;
    else if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 8;
      char **v = realloc(l->names, cap * sizeof *v), **f = v ? realloc(l->files, cap * sizeof *f) : NULL;
      if (v) l->names = v;
      if (f) l->files = f, l->cap = cap;
      else r = WALK_OOM;
    }
    if (r == WALK_ON) {
      l->names[l->n] = name;
      l->files[l->n++] = file;
    } else {
      free(name);
      free(file);
    }
  }
  closedir(d);
  return r;
}

/* The path is read once per context: every module's name and file. */
hdal_error *hdal__module_scan(const char *search_path, char ***names, char ***files, size_t *count) {
  module_list l = {0};
  if (path_each(search_path, scan_dir, &l) == WALK_OOM) {
    hdal__string_list_free(l.names, l.n);
    hdal__string_list_free(l.files, l.n);
    return hdal__error_oom();
  }
  *names = l.names;
  *files = l.files;
  *count = l.n;
  return NULL;
}

bool hdal__module_load(hdal__backend *b, const char *search_path, char **why_not) {
  const char *file = b->file; /* found by hdal__module_scan */
  *why_not = NULL;
  if (!file) {
    *why_not = *search_path ? hdal__strdup_printf("module hdal_%s.so not found (searched %s)", b->name, search_path)
                            : hdal__strdup_printf("module hdal_%s.so not found (no absolute "
                                                  "directory in the module path)", b->name);
    hdal__debug(b->ctx, b->name, "unavailable: %s", *why_not ? *why_not : "out of memory");
    return false;
  }
  hdal__debug(b->ctx, b->name, "loading %s", file);
  /* RTLD_NODELETE (hdal__library_open): a module's dependencies (ICD loaders,
   * drivers) often register exit handlers that must not outlive their code. */
  char why[HDAL__LIBRARY_WHY_MAX];
  void *h = hdal__library_open(file, why);
  if (!h) {
    *why_not = strdup(why);
    return false;
  }
  char *sym = hdal__strdup_printf("hdal_%s_backend", b->name);
  const hdal_backend *desc = sym ? dlsym(h, sym) : NULL;
  if (!desc)
    *why_not = hdal__strdup_printf("%s: missing symbol %s", file, sym ? sym : "");
  else if (desc->abi_version != HDAL_BACKEND_ABI_VERSION)
    *why_not = hdal__strdup_printf("%s: module ABI version %u, this hdal needs %u", file, desc->abi_version,
                                   HDAL_BACKEND_ABI_VERSION);
  else if (!desc->name || strcmp(desc->name, b->name) || !desc->discover)
    *why_not = hdal__strdup_printf("%s: malformed descriptor %s", file, sym);
  else {
    b->desc = desc;
    b->module = h;
  }
  if (!b->desc) {
    hdal__debug(b->ctx, b->name, "unavailable: %s", *why_not ? *why_not : "out of memory");
    dlclose(h);
  }
  free(sym);
  return b->desc != NULL;
}

void hdal__module_unload(hdal__backend *b) {
  if (b->module) dlclose(b->module);
  b->module = NULL;
}
