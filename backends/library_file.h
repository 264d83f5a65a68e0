/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — the check before dlopen of a file a user names (a module of
 * HDAL_BACKEND_PATH, HDAL_CUDA_LIBRARY, HDAL_ROCM_LIBRARY).  Header-only: the
 * core's module loader and the GPU modules each compile it in, since a module
 * calls nothing of the core's by name (docs/backend-abi.md). */
#ifndef HDAL_LIBRARY_FILE_H
#define HDAL_LIBRARY_FILE_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Room for a path and the loader's reason. */
#define HDAL__LIBRARY_WHY_MAX (PATH_MAX + 256)

/* dlopen of a file a user names; RTLD_NODELETE because runtimes register exit
 * handlers that must not outlive their code.  NULL with the reason in
 * why[HDAL__LIBRARY_WHY_MAX], for a status: the loader's own, or "<path>: not
 * a regular file", checked first.  dlopen open()s what it is given and blocks
 * there for ever on a FIFO without a writer, and reads a device or a
 * directory only to fail; so anything that is not a regular file once
 * symlinks are followed is refused before dlopen (docs/hardening.md).  A name
 * without '/' is a soname the loader searches for: not a file, not checked.
 * A path that stat cannot follow (missing, a symlink loop, no permission) is
 * left to dlopen, whose reason names it.
 *
 * stat then dlopen races: the file may be swapped for a FIFO in between.
 * Opening with O_NONBLOCK and handing dlopen /proc/self/fd/N would close the
 * race, but the loader would then know the object by that name (in dlerror,
 * dl_iterate_phdr and HDAL_DEBUG), resolve its $ORIGIN there, and need /proc.
 * The race is left: only someone who can write where the user points hdal
 * can win it, and the user already runs that person's code by pointing there;
 * the variables are ignored in setuid and setgid programs (secure_getenv). */
static inline void *hdal__library_open(const char *path, char *why) {
  struct stat st;
  if (strchr(path, '/') && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    snprintf(why, HDAL__LIBRARY_WHY_MAX, "%s: not a regular file", path);
    return NULL;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, HDAL__LIBRARY_WHY_MAX, "%s", e ? e : path);
  }
  return h;
}

#endif
