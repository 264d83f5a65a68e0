/* SPDX-License-Identifier: BSD-3-Clause */
/* The fake drivers' per-device settings: the i-th item of a comma list
 * ("Fake GPU 0,Fake GPU 1"), shared by the fake GPU core (tests/fakes/fakegpu.c)
 * and the fake Vulkan driver (tests/fakes/vk/). */
#ifndef HDAL_FAKE_LIST_H
#define HDAL_FAKE_LIST_H

#include <stdio.h>
#include <string.h>

/* Item i of `list` into buf[len]; NULL when list is NULL or has fewer items. */
static inline const char *fake_list_item(const char *list, int i, char *buf, size_t len) {
  if (!list) return NULL;
  for (const char *p = list;; p++) {
    size_t n = strcspn(p, ",");
    if (i-- == 0) {
      snprintf(buf, len, "%.*s", (int)n, p);
      return buf;
    }
    p += n;
    if (!*p) return NULL;
  }
}

#endif
