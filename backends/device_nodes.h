/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — whether a GPU driver has a device node here, or the user chose the
 * drivers, for the modules whose runtime costs more to start than to skip
 * where no GPU can be (docs/vulkan.md, docs/levelzero.md).  Header-only: each module compiles it in, since a module
 * calls nothing of the core's by name (docs/backend-abi.md).  Under
 * HDAL_FSROOT, the root tests give (read as every HDAL_ variable is). */
#ifndef HDAL_DEVICE_NODES_H
#define HDAL_DEVICE_NODES_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether one of `nodes` exists under the root: a path, or "DIR/PREFIX*" for
 * any entry of DIR whose name starts with PREFIX ("/dev/dri/renderD*"). */
static inline bool hdal__device_node_present(const char *const *nodes, size_t n) {
  const char *root = secure_getenv("HDAL_FSROOT");
  if (!root) root = "";
  char path[4096];
  for (size_t i = 0; i < n; i++) {
    const char *star = strchr(nodes[i], '*'), *slash = strrchr(nodes[i], '/');
    if (!star) {
      struct stat st;
      snprintf(path, sizeof path, "%s%s", root, nodes[i]);
      if (stat(path, &st) == 0) return true;
      continue;
    }
    snprintf(path, sizeof path, "%s%.*s", root, (int)(slash - nodes[i]), nodes[i]);
    const char *prefix = slash + 1;
    size_t len = (size_t)(star - prefix);
    DIR *dir = opendir(path);
    if (!dir) continue;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(dir));) found = !strncmp(e->d_name, prefix, len);
    closedir(dir);
    if (found) return true;
  }
  return false;
}

/* The first of `names` set to a non-empty value, NULL if none: the variables
 * with which a user chooses a runtime's drivers, which start it wherever no
 * node is found.  secure_getenv, as the loaders read them: in a setuid
 * program they choose nothing. */
static inline const char *hdal__env_chosen(const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *v = secure_getenv(names[i]);
    if (v && *v) return names[i];
  }
  return NULL;
}

#endif
