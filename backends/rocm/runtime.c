/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal ROCm backend — loading the HIP runtime at run time and naming its errors.
 *
 * Every entry point is looked up by name when the runtime is opened; one that
 * is missing leaves the backend unavailable, but for the optional ones (the
 * stream-ordered allocator, which ROCm 5.0 lacks, and the event calls of the
 * memory pool's fences).  Then the runtime says its
 * version, which decides how its answers are read (hip_runtime.h): ROCm 5.x
 * or 6.0 and later.
 */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "rocm.h"
#include "../library_file.h"

typedef struct {
  const char *name;
  size_t offset;
  bool optional; /* left NULL when missing: the backend does without */
} entry;

#define ENTRY(fn) {#fn, offsetof(hdal__hip_runtime, fn), false}
#define OPTIONAL(fn) {#fn, offsetof(hdal__hip_runtime, fn), true}
static const entry entries[] = {
    ENTRY(hipInit),
    ENTRY(hipRuntimeGetVersion),
    ENTRY(hipDriverGetVersion),
    ENTRY(hipGetErrorName),
    ENTRY(hipGetErrorString),
    ENTRY(hipGetDeviceCount),
    ENTRY(hipDeviceGet),
    ENTRY(hipDeviceGetName),
    ENTRY(hipDeviceGetUuid),
    ENTRY(hipDeviceGetPCIBusId),
    ENTRY(hipDeviceTotalMem),
    ENTRY(hipGetDevice),
    ENTRY(hipSetDevice),
    ENTRY(hipMalloc),
    ENTRY(hipFree),
    ENTRY(hipMemcpy),
    ENTRY(hipMemcpyAsync),
    ENTRY(hipMemcpyPeer),
    ENTRY(hipMemcpyPeerAsync),
    ENTRY(hipStreamSynchronize),
    ENTRY(hipStreamWaitEvent),
    ENTRY(hipEventCreateWithFlags),
    ENTRY(hipEventRecord),
    ENTRY(hipEventDestroy),
    ENTRY(hipPointerGetAttributes),
    /* The stream-ordered allocator: ROCm 5.1 and later; hdal's pool serves without it. */
    OPTIONAL(hipDeviceGetDefaultMemPool),
    OPTIONAL(hipMemPoolSetAttribute),
    OPTIONAL(hipMemPoolGetAttribute),
    OPTIONAL(hipMemPoolTrimTo),
    OPTIONAL(hipMallocAsync),
    OPTIONAL(hipFreeAsync),
    /* The fences of hdal's pool (rocm_buffer.c).  Every HIP runtime exports
     * both, ROCm 5.0 included; optional as CUDA's cuEventQuery is, since the
     * pool does without them (a freed block goes back to the runtime). */
    OPTIONAL(hipEventQuery),
    OPTIONAL(hipEventSynchronize),
    /* Peer access (hdal_device_link): every HIP runtime has it; optional all the same, since
     * without it only the link's peer_access is unknown (reported false). */
    OPTIONAL(hipDeviceCanAccessPeer),
    OPTIONAL(hipDeviceEnablePeerAccess),
};

/* The two hipDeviceProp_t layouts (offsets of the members read). */
static const hdal__hip_props_layout props_rocm5 = {"hipGetDeviceProperties", 336, 396};
static const hdal__hip_props_layout props_rocm6 = {"hipGetDevicePropertiesR0600", 388, 1160};

/* The runtime's names, newest ABI first; the unversioned one is what a
 * development package or a ROCm install's ldconfig entry provides. */
static const char *const sonames[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};

static bool missing_file(const char *why) { return why && strstr(why, "No such file or directory"); }

/* RTLD_NODELETE: the runtime registers exit handlers that must not outlive its code. */
static void *open_runtime(const hdal_backend_host *host, hdal_backend_discovery *disc, const char **path,
                          hdal_error **err) {
  const char *env = secure_getenv("HDAL_ROCM_LIBRARY");
  if (env && *env) {
    char why[HDAL__LIBRARY_WHY_MAX];
    void *h = hdal__library_open(env, why);
    if (!h) *err = host->error_new(HDAL_UNAVAILABLE, "%s", why);
    *path = env;
    return h;
  }
  /* Without the amdgpu kernel driver's /dev/kfd, AMD's runtime finds no device
   * (hipInit fails); loading it to learn that costs more than the rest of a
   * context (docs/rocm.md).  HDAL_FSROOT, the root under which hdal looks for
   * device nodes, lets a test give the system's runtime a /dev/kfd to find;
   * read as every HDAL_ variable is, though it loads no code. */
  const char *root = secure_getenv("HDAL_FSROOT");
  char kfd[4096];
  struct stat st;
  snprintf(kfd, sizeof kfd, "%s/dev/kfd", root ? root : "");
  if (stat(kfd, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
    host->debug(disc, "%s absent: the HIP runtime is not loaded", kfd);
    *err = host->error_new(HDAL_UNAVAILABLE, "no AMD GPU driver (/dev/kfd absent)");
    return NULL;
  }
  /* Not found anywhere: the last name's reason.  A file that exists but does
   * not load (a missing dependency, another architecture): that reason. */
  char why[512] = "";
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
    void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h) {
      *path = sonames[i];
      return h;
    }
    const char *e = dlerror();
    host->debug(disc, "%s", e ? e : sonames[i]);
    snprintf(why, sizeof why, "%s", e ? e : sonames[i]);
    if (!missing_file(e)) break;
  }
  *err = host->error_new(HDAL_UNAVAILABLE, "%s", why);
  return NULL;
}

bool hdal__rocm_has_mempools(const hdal__hip_runtime *rt) {
  return rt->hipDeviceGetDefaultMemPool && rt->hipMemPoolSetAttribute && rt->hipMemPoolGetAttribute &&
         rt->hipMemPoolTrimTo && rt->hipMallocAsync && rt->hipFreeAsync;
}

hdal_error *hdal__rocm_runtime_open(hdal__rocm_state *s, hdal_backend_discovery *disc, const char **path) {
  const hdal_backend_host *host = s->gpu.host;
  hdal_error *err = NULL;
  void *h = open_runtime(host, disc, path, &err);
  if (!h) return err;
  hdal__hip_runtime *rt = &s->rt;
  memset(rt, 0, sizeof *rt);
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *fn = dlsym(h, entries[i].name);
    if (!fn && entries[i].optional) continue;
    if (!fn) {
      dlclose(h);
      return host->error_new(HDAL_UNAVAILABLE, "%s: the runtime has no entry point %s", *path, entries[i].name);
    }
    memcpy((char *)rt + entries[i].offset, &fn, sizeof fn);
  }
  /* The version decides the ABI; the runtime answers it before hipInit. */
  hipError_t r = rt->hipRuntimeGetVersion(&s->runtime_version);
  if (r != hipSuccess) {
    char desc[512];
    hdal__rocm_describe(rt, r, desc, sizeof desc);
    dlclose(h);
    return host->error_new(HDAL_UNAVAILABLE, "%s: hipRuntimeGetVersion: %s", *path, desc);
  }
  int major = HDAL_HIP_VERSION_MAJOR(s->runtime_version);
  if (major < 5) {
    dlclose(h);
    return host->error_new(HDAL_UNAVAILABLE, "%s: HIP runtime %d.%d is too old (ROCm 5.0 or later is needed)", *path,
                           major, HDAL_HIP_VERSION_MINOR(s->runtime_version));
  }
  s->abi = major >= 6 ? 6 : 5;
  s->props = s->abi == 6 ? &props_rocm6 : &props_rocm5;
  void *fn = dlsym(h, s->props->get_properties);
  if (!fn) {
    dlclose(h);
    return host->error_new(HDAL_UNAVAILABLE, "%s: the runtime (HIP %d.%d) has no entry point %s", *path, major,
                           HDAL_HIP_VERSION_MINOR(s->runtime_version), s->props->get_properties);
  }
  memcpy(&rt->hipGetDeviceProperties, &fn, sizeof fn);
  host->debug(disc, "%s: HIP runtime %d.%d.%d, ROCm %d ABI (%s), %s", *path, major,
              HDAL_HIP_VERSION_MINOR(s->runtime_version), HDAL_HIP_VERSION_PATCH(s->runtime_version), s->abi,
              s->props->get_properties,
              hdal__rocm_has_mempools(rt) ? "stream-ordered allocator" : "no stream-ordered allocator");
  s->lib = h;
  return NULL;
}

void hdal__rocm_describe(const hdal__hip_runtime *rt, hipError_t r, char *buf, size_t len) {
  const char *name = rt->hipGetErrorName ? rt->hipGetErrorName(r) : NULL;
  const char *text = rt->hipGetErrorString ? rt->hipGetErrorString(r) : NULL;
  /* ROCm 5's runtime gives the name for both. */
  if (name && text && strcmp(name, text))
    snprintf(buf, len, "%s (%d): %s", name, r, text);
  else
    snprintf(buf, len, "%s (%d)", name ? name : "hipError_t", r);
}

hdal_code hdal__rocm_code_of(hipError_t r) {
  switch (r) {
  case hipErrorOutOfMemory: return HDAL_RESOURCE_EXHAUSTED;
  case hipErrorInvalidValue:
  case hipErrorInvalidHandle:
  case hipErrorInvalidDevice: return HDAL_INVALID_ARGUMENT;
  case hipErrorNotInitialized:
  case hipErrorDeinitialized:
  case hipErrorInvalidContext: return HDAL_FAILED_PRECONDITION;
  case hipErrorInsufficientDriver:
  case hipErrorNoDevice: return HDAL_UNAVAILABLE;
  case hipErrorNotSupported: return HDAL_UNIMPLEMENTED;
  default: return HDAL_INTERNAL;
  }
}
