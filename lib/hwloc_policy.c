/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal's hwloc policy (hwloc_policy.h; the reasons are in docs/hwloc.md). */
#include "config.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hwloc_policy.h"

extern char **environ;

/* The plugins that would load vendor runtimes (hwloc_levelzero: libze_loader,
 * hwloc_opencl: libOpenCL, ...), X11 (hwloc_gl) or libpciaccess (hwloc_pci)
 * into the process.  hwloc matches each plugin's name as a substring. */
#define PLUGINS "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero,hwloc_pci"
static char blacklist[] = "HWLOC_PLUGINS_BLACKLIST=" PLUGINS;
static char blacklist_tool[] = "HWLOC_PLUGINS_BLACKLIST=" PLUGINS ",hwloc_xml_libxml";
/* A private copy of libhdal (configure --with-soname-tag: the Python wheel)
 * runs on a private hwloc too, to which the system's hwloc plugins do not
 * belong: hwloc_xml_libxml stays out as well (docs/hwloc.md). */
#ifdef HDAL_SONAME_TAG
#define PRIVATE_COPY HDAL__HWLOC_NO_LIBXML
#else
#define PRIVATE_COPY 0
#endif

/* Components that stay off in every topology, whoever loaded their plugins:
 * the same runtimes, and "pci" (it leaks; linux reads PCI from sysfs). */
static const char *const unused_components[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl", "pci"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned holds, settling;
static hwloc_topology_t anchor; /* keeps hwloc's components (and plugins) initialised while holds > 0 */
static char **saved; /* environ as found, while the stand-in is environ */
static bool swapped; /* environ was made the stand-in */

/* environ's stand-in: the program's entries, hdal's entry or NULL, NULL.  It
 * is static and only ever holds valid strings or NULL, with a NULL after
 * them: a getenv in any thread may still walk it after environ moved on, so
 * it is never freed, and allocates nothing (SLOTS - 2 variables at most). */
enum { SLOTS = 4096 };
static char *slots[SLOTS];
static size_t slots_n; /* the program's entries in it */

static size_t count(char **env) {
  size_t n = 0;
  while (env && env[n]) n++;
  return n;
}

/* environ becomes the stand-in for itself, `entry` (or nothing) added; false
 * when the environment is too large for it. */
static bool install(char *entry) {
  char **env = environ;
  size_t n = count(env);
  if (n + 2 > SLOTS) return false;
  if (env != slots) {
    /* The terminator first: a reader of what was there before still ends at a NULL. */
    __atomic_store_n(&slots[n + 1], NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&slots[n], NULL, __ATOMIC_RELEASE);
    for (size_t i = 0; i < n; i++)
      if (slots[i] != env[i]) __atomic_store_n(&slots[i], env[i], __ATOMIC_RELAXED);
  } else __atomic_store_n(&slots[n + 1], NULL, __ATOMIC_RELAXED); /* still environ, changed in place by another */
  __atomic_store_n(&slots[n], entry, __ATOMIC_RELEASE);
  slots_n = n;
  saved = env;
  __atomic_store_n(&environ, slots, __ATOMIC_RELEASE);
  return true;
}

void hdal__hwloc_hold(unsigned flags) {
  flags |= PRIVATE_COPY;
  pthread_mutex_lock(&lock);
  bool first = holds++ == 0;
  /* hwloc reads these when its components are first initialised; the user's win. */
  bool own = first && !getenv("HWLOC_PLUGINS_BLACKLIST") && !getenv("HWLOC_PLUGINS_PATH");
  if (settling++ == 0) swapped = install(own ? (flags & HDAL__HWLOC_NO_LIBXML ? blacklist_tool : blacklist) : NULL);
  if (first && hwloc_topology_init(&anchor) < 0) anchor = NULL;
  if (swapped) __atomic_store_n(&slots[slots_n], NULL, __ATOMIC_RELEASE); /* read by now: the entry goes */
  /* A program thread's setenv in that window (outside what glibc allows) took
   * the entry into its new array: it goes from there too. */
  char *mine = swapped ? strchr(own ? (flags & HDAL__HWLOC_NO_LIBXML ? blacklist_tool : blacklist) : "", '=') : NULL;
  if (mine && environ != slots && getenv("HWLOC_PLUGINS_BLACKLIST") == mine + 1) unsetenv("HWLOC_PLUGINS_BLACKLIST");
  pthread_mutex_unlock(&lock);
}

void hdal__hwloc_settled(void) {
  pthread_mutex_lock(&lock);
  if (settling && --settling == 0) {
    /* Back to the array as found, unless something changed the stand-in or replaced it
     * (then saved is not read: glibc may have freed it). */
    if (swapped && environ == slots && count(saved) == slots_n && !memcmp(slots, saved, slots_n * sizeof *slots))
      __atomic_store_n(&environ, saved, __ATOMIC_RELEASE);
    swapped = false;
    saved = NULL;
  }
  pthread_mutex_unlock(&lock);
}

void hdal__hwloc_release(void) {
  pthread_mutex_lock(&lock);
  if (holds && --holds == 0 && anchor) {
    hwloc_topology_destroy(anchor);
    anchor = NULL;
  }
  pthread_mutex_unlock(&lock);
}

void hdal__topology_apply(hwloc_topology_t t, hdal__topology_use use) {
  for (size_t i = 0; i < sizeof unused_components / sizeof *unused_components; i++)
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, unused_components[i]);
  if (use == HDAL__TOPOLOGY_LSTOPO) {
    /* lstopo's own filters: hwloc drops instruction caches by default, lstopo
     * keeps them; x86 runs, for the caches only CPUID knows (no sysfs cache
     * folders, as in some VMs). */
    hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_type_filter(t, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_ALL);
    return;
  }
  /* x86 moves the calling thread onto every PU in turn to run CPUID, beside
   * the other backends' discovery, for caches no use of these needs (linux
   * reads the CPU model from /proc/cpuinfo).  No caches, distances, memory
   * attributes or CPU kinds either: the flags spare hwloc those sysfs reads,
   * the filters only drop the objects (hwloc 2.9 reads the cache files anyway). */
  hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
#if HWLOC_API_VERSION >= 0x00020800
  /* The PCI topology keeps distances: its GPU fabrics (NVLinkBandwidth...) are links' (links.c). */
  hwloc_topology_set_flags(t, (use == HDAL__TOPOLOGY_PCI ? 0 : HWLOC_TOPOLOGY_FLAG_NO_DISTANCES) |
                                  HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS | HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
#endif
  if (use == HDAL__TOPOLOGY_PCI) hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
}
