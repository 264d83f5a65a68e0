/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module: three backends (probea, probeb, probec) in one file, linked
 * under three names.  Each discovery stays 50 ms in flight and lists one device
 * whose attributes say which thread discovered it and how many discoveries of
 * the three were in flight at most, so the suite sees how the core schedules
 * discovery. */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <hdal/backend.h>

static int in_flight, most_in_flight;

static hdal_error *probe_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, const char *kind) {
  int now = __atomic_add_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
  for (int seen = __atomic_load_n(&most_in_flight, __ATOMIC_SEQ_CST); now > seen;)
    if (__atomic_compare_exchange_n(&most_in_flight, &seen, now, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
  nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  char tid[24], most[24];
  snprintf(tid, sizeof tid, "%ld", (long)gettid());
  snprintf(most, sizeof most, "%d", __atomic_load_n(&most_in_flight, __ATOMIC_SEQ_CST));
  __atomic_sub_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
  hdal_backend_device_info info = {
      .kind = kind,
      .dlpack_device = {kDLExtDev, 0},
      .numa_node = -1,
      .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
      .runtime_class_reason = "test module",
  };
  hdal_device *d = host->add_device(disc, &info);
  if (!d || !host->add_attribute(d, HDAL_BACKEND_STRING("discovery_thread", tid)) || !host->add_attribute(d, HDAL_BACKEND_STRING("most_in_flight", most)))
    return host->error_oom();
  return NULL;
}

/* A context's discoveries are over when it finalizes its backends: the next
 * context (the suite may run its tests in one process) starts from zero. */
static void probe_finalize(void *state) {
  (void)state;
  __atomic_store_n(&most_in_flight, 0, __ATOMIC_SEQ_CST);
}

#define PROBE(NAME)                                                                                         \
  static hdal_error *NAME##_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **s) { \
    *s = NULL;                                                                                              \
    return probe_discover(host, disc, #NAME);                                                               \
  }                                                                                                         \
  HDAL_BACKEND_DEFINE(NAME) = {                                                                             \
      .abi_version = HDAL_BACKEND_ABI_VERSION,                                                              \
      .name = #NAME,                                                                                        \
      .platform = #NAME,                                                                                    \
      .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,                                                            \
      .discover = NAME##_discover,                                                                          \
      .finalize = probe_finalize,                                                                           \
  };

PROBE(probea)
PROBE(probeb)
PROBE(probec)
