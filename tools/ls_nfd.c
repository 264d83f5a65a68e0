/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --of nfd: a Node Feature Discovery local feature file (hdal-ls(1)):
 * for each platform with devices in this process, in the table's order,
 *   hdal-<platform>.present=true
 *   hdal-<platform>.count=<devices>
 *   hdal-<platform>.memory-mib=<their memory, MiB, rounded down>
 *   hdal-<platform>.model.<model>=<devices of that model>
 *   hdal-<platform>.pcie-root.<root>=<devices under that PCIe root>
 * the roots as Kubernetes' DRA attribute resource.kubernetes.io/pcieRoot
 * spells them (hdal_device_locality(): "pci0000:00"), made one word as a
 * model is ("pci0000_00": a label holds no ':'), in the order first met;
 * a device whose root is not known is counted under none.
 * NFD makes each line a node label (feature.node.kubernetes.io/<name>), so a
 * name is at most 63 characters of [a-z0-9._-] beginning and ending with a
 * letter or digit: platforms and models become one lower-case word
 * (ls_model_word), a model cut short to fit, and no value holds anything else. */
#include "config.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"

enum { LABEL_MAX = 63 };

typedef struct {
  char word[LABEL_MAX + 1];
  size_t count;
} model; /* a model, or a PCIe root */

/* Counts `word` in list[0 .. *n). */
static void count_word(model *list, size_t *n, const char *word) {
  size_t m = 0;
  while (m < *n && strcmp(list[m].word, word)) m++;
  if (m == *n) {
    list[m].count = 0;
    snprintf(list[(*n)++].word, sizeof list->word, "%s", word);
  }
  list[m].count++;
}

/* "hdal-<platform>." as a label prefix, or false when the platform leaves no room. */
static bool prefix_of(const char *platform, char *out, size_t size) {
  char word[LABEL_MAX + 1];
  ls_model_word(platform, word, sizeof word);
  return snprintf(out, size, "hdal-%s.", word) < (int)size && strlen(out) + sizeof "model.x" <= LABEL_MAX;
}

int ls_print_nfd(const ls_view *v) {
  size_t n = hdal_context_device_count(v->ctx);
  bool *done = calloc(n ? n : 1, sizeof *done);
  model *models = calloc(n ? n : 1, sizeof *models), *roots = calloc(n ? n : 1, sizeof *roots);
  if (!done || !models || !roots) {
    free(done), free(models), free(roots);
    return -1;
  }
  printf("# Node Feature Discovery features of this node, written by hdal-ls (hdal %s)\n", hdal_version_string());
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (done[i] || !ls_selected(v, d) || !hdal_device_is_addressable(d)) continue;
    const char *platform = hdal_device_platform(d);
    char prefix[LABEL_MAX + 1];
    bool fits = prefix_of(platform, prefix, sizeof prefix);
    size_t room = fits ? LABEL_MAX - strlen(prefix) - strlen("model.") : 0; /* for the model word */
    size_t count = 0, nmodels = 0, nroots = 0;
    uint64_t memory = 0;
    for (size_t j = i; j < n; j++) {
      const hdal_device *e = hdal_context_device(v->ctx, j);
      if (done[j] || strcmp(hdal_device_platform(e), platform) || !ls_selected(v, e) || !hdal_device_is_addressable(e))
        continue;
      done[j] = true;
      count++;
      uint64_t bytes = hdal_device_memory_bytes(e);
      memory = memory > UINT64_MAX - bytes ? UINT64_MAX : memory + bytes; /* saturates */
      char word[LABEL_MAX + 1];
      ls_model_word(hdal_device_kind(e), word, room + 1); /* cut to fit: models cut alike count as one */
      count_word(models, &nmodels, word);
      hdal_locality loc;
      hdal_error *err = hdal_device_locality(e, &loc);
      if (!err && loc.pcie_root) {
        ls_model_word(loc.pcie_root, word, sizeof word); /* "pci0000_00": at most 14 characters */
        count_word(roots, &nroots, word);
      }
      hdal_error_destroy(err);
    }
    if (!fits) {
      fprintf(stderr, "%s: the platform of device %d is too long a name for a feature: left out\n", v->program,
              hdal_device_id(d));
      continue;
    }
    printf("%spresent=true\n%scount=%zu\n%smemory-mib=%llu\n", prefix, prefix, count, prefix,
           (unsigned long long)(memory >> 20));
    for (size_t m = 0; m < nmodels; m++) printf("%smodel.%s=%zu\n", prefix, models[m].word, models[m].count);
    for (size_t r = 0; r < nroots; r++) {
      if (strlen(prefix) + strlen("pcie-root.") + strlen(roots[r].word) > LABEL_MAX)
        fprintf(stderr, "%s: the platform of device %d is too long a name for its PCIe root's feature: left out\n",
                v->program, hdal_device_id(d));
      else printf("%spcie-root.%s=%zu\n", prefix, roots[r].word, roots[r].count);
    }
  }
  free(done), free(models), free(roots);
  return ferror(stdout) ? -1 : 0;
}
