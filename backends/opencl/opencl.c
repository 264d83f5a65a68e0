/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal OpenCL backend — discovery through the ICD loader.
 *
 * Every platform the loader lists, in its order, and every device of each
 * (CPU OpenCL devices included); the flat index over that order is the DLPack
 * device_id and the local hardware id.  No platform at all
 * (CL_PLATFORM_NOT_FOUND_KHR) is zero devices, not a failure; a platform that
 * fails its queries is skipped with a diagnostic, so one broken ICD does not
 * hide the others.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "opencl.h"
#include "../process_cpuset.h"

/* ---- small query helpers ---- */

/* A string property, trailing blanks and newlines trimmed; "" when the query
 * fails (a broken or partial driver), NULL only when out of memory. */
static char *info_string(cl_int (*query)(void *, cl_uint, size_t, void *, size_t *), void *obj, cl_uint what) {
  size_t n = 0;
  if (query(obj, what, 0, NULL, &n) != CL_SUCCESS) n = 0;
  char *s = malloc(n + 1);
  if (!s) return NULL;
  if (!n || query(obj, what, n, s, NULL) != CL_SUCCESS) n = 0;
  s[n] = '\0';
  size_t len = strlen(s);
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\n')) s[--len] = '\0';
  return s;
}

static cl_int query_platform(void *p, cl_uint what, size_t size, void *v, size_t *ret) {
  return clGetPlatformInfo(p, what, size, v, ret);
}

static cl_int query_device(void *d, cl_uint what, size_t size, void *v, size_t *ret) {
  return clGetDeviceInfo(d, what, size, v, ret);
}

static char *platform_string(cl_platform_id p, cl_platform_info what) { return info_string(query_platform, p, what); }
static char *device_string(cl_device_id d, cl_device_info what) { return info_string(query_device, d, what); }

/* Fixed-size properties; false when the query fails (a broken or partial driver). */
static bool device_value(cl_device_id d, cl_device_info what, void *v, size_t size) {
  size_t got = 0;
  return clGetDeviceInfo(d, what, size, v, &got) == CL_SUCCESS && got == size;
}

static bool has_extension(const char *extensions, const char *name) {
  size_t n = strlen(name);
  for (const char *p = extensions; (p = strstr(p, name)); p += n)
    if ((p == extensions || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

/* "dddd:bb:dd.f" from the extensions that report it; false when none does. */
static bool pci_bus_id(cl_device_id d, const char *extensions, char *out, size_t size) {
  if (has_extension(extensions, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr info;
    if (device_value(d, CL_DEVICE_PCI_BUS_INFO_KHR, &info, sizeof info)) {
      snprintf(out, size, "%04x:%02x:%02x.%x", info.pci_domain, info.pci_bus, info.pci_device, info.pci_function);
      return true;
    }
  }
  if (has_extension(extensions, "cl_nv_device_attribute_query")) {
    /* cl_nv_device_attribute_query: bus, slot (device << 3 | function), domain. */
    cl_uint bus, slot, domain = 0;
    if (device_value(d, 0x4008 /* CL_DEVICE_PCI_BUS_ID_NV */, &bus, sizeof bus) &&
        device_value(d, 0x4009 /* CL_DEVICE_PCI_SLOT_ID_NV */, &slot, sizeof slot)) {
      if (!device_value(d, 0x400A /* CL_DEVICE_PCI_DOMAIN_ID_NV */, &domain, sizeof domain)) domain = 0;
      snprintf(out, size, "%04x:%02x:%02x.%x", domain, bus, slot >> 3, slot & 7);
      return true;
    }
  }
  if (has_extension(extensions, "cl_amd_device_attribute_query")) {
    cl_device_topology_amd topo;
    if (device_value(d, CL_DEVICE_TOPOLOGY_AMD, &topo, sizeof topo) && topo.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD) {
      snprintf(out, size, "0000:%02x:%02x.%x", (unsigned char)topo.pcie.bus, (unsigned char)topo.pcie.device,
               (unsigned char)topo.pcie.function);
      return true;
    }
  }
  return false;
}

static const char *type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  if (t & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "unknown";
}

static void svm_names(cl_device_svm_capabilities caps, char *out, size_t size) {
  static const struct {
    cl_device_svm_capabilities bit;
    const char *name;
  } names[] = {{CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, "coarse_grain_buffer"},
               {CL_DEVICE_SVM_FINE_GRAIN_BUFFER, "fine_grain_buffer"},
               {CL_DEVICE_SVM_FINE_GRAIN_SYSTEM, "fine_grain_system"},
               {CL_DEVICE_SVM_ATOMICS, "atomics"}};
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (caps & names[i].bit) {
      int n = snprintf(out + len, size - len, "%s%s", len ? "," : "", names[i].name);
      if (n < 0 || (size_t)n >= size - len) break;
      len += (size_t)n;
    }
  if (!len) snprintf(out, size, "none");
}

/* ---- per-device state ---- */

/* Taken around what PoCL 3.1 cannot do concurrently: discovery (below), and
 * making and releasing contexts and queues (rare: once per device and
 * context); process-wide, since the module is loaded once (RTLD_NODELETE).
 * Transfers have a lock of their own (opencl_buffer.c). */
static pthread_mutex_t discovery_lock = PTHREAD_MUTEX_INITIALIZER;

void hdal__ocl_runtime_lock(void) { pthread_mutex_lock(&discovery_lock); }
void hdal__ocl_runtime_unlock(void) { pthread_mutex_unlock(&discovery_lock); }

cl_int hdal__ocl_device_context(hdal__ocl_device *d, cl_context *out) {
  cl_int err = CL_SUCCESS;
  pthread_mutex_lock(&d->lock);
  if (!d->context) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
    hdal__ocl_runtime_lock();
    d->context = clCreateContext(props, 1, &d->id, NULL, NULL, &err);
    hdal__ocl_runtime_unlock();
    if (err != CL_SUCCESS) d->context = NULL;
    else if (!d->context) err = CL_OUT_OF_RESOURCES;
  }
  *out = d->context;
  pthread_mutex_unlock(&d->lock);
  return err;
}

void hdal__ocl_device_free(hdal__ocl_device *d) {
  if (!d) return;
  /* Nothing to release for a device that did no work (discovery's failures,
   * under the lock already). */
  bool objects = d->foreign || d->queue || d->context;
  if (objects) hdal__ocl_runtime_lock();
  for (hdal__ocl_foreign_queue *f = d->foreign, *next; f; f = next) {
    next = f->next;
    clReleaseCommandQueue(f->queue);
    free(f);
  }
  if (d->queue) clReleaseCommandQueue(d->queue);
  if (d->context) clReleaseContext(d->context);
  if (objects) hdal__ocl_runtime_unlock();
  pthread_mutex_destroy(&d->lock);
  free(d);
}

static void ocl_finalize(void *state) {
  hdal__ocl_state *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->ndevices; i++) hdal__ocl_device_free(s->devices[i]);
  free(s->devices);
  free(s);
}

/* ---- discovery ---- */

typedef struct {
  const hdal_backend_host *host;
  hdal_backend_discovery *disc;
  hdal__ocl_state *s;
  int flat; /* next flat index */
} discovery;

static bool add_u64(const hdal_backend_host *host, hdal_device *dev, const char *key, uint64_t v) {
  return host->add_attribute(dev, HDAL_BACKEND_UINT(key, v));
}

static bool add_bool(const hdal_backend_host *host, hdal_device *dev, const char *key, bool v) {
  return host->add_attribute(dev, HDAL_BACKEND_BOOL(key, v));
}

static bool add_string(const hdal_backend_host *host, hdal_device *dev, const char *key, const char *v) {
  return host->add_attribute(dev, HDAL_BACKEND_STRING(key, v));
}

/* The platform's strings, shared by its devices' attributes. */
typedef struct {
  unsigned index;
  char *name, *vendor, *version;
} platform_info;

/* Decides whether hdal can serve buffers on the device; if not, *why says why
 * (NULL when out of memory).  The device's context is not made here: PoCL's first context costs an
 * LLVM set-up (4 ms on a quiet machine, tens under load) that listing devices
 * must not pay; a context that cannot be made is an error of the first
 * operation that needs it. */
static bool classify(cl_device_type type, cl_bool available, char **why) {
  int n = 0;
  *why = NULL;
  if (!available)
    n = asprintf(why, "OpenCL device not available (CL_DEVICE_AVAILABLE is false)");
  else if (!(type & (CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)))
    n = asprintf(why, "custom OpenCL device type (CL_DEVICE_TYPE %#" PRIx64 "): hdal serves no buffers on it",
                 (uint64_t)type);
  else
    return true;
  if (n < 0) *why = NULL;
  return false;
}

/* What discovery reads of one device: its strings (owned) and properties. */
typedef struct {
  char *name, *vendor, *version, *c_version, *driver, *ext;
  cl_device_type type;
  cl_bool available, unified;
  cl_uint units, align_bits, vendor_id;
  bool has_vendor_id;
  cl_ulong global, max_alloc;
  cl_device_svm_capabilities svm;
} device_props;

static void props_free(device_props *p) {
  free(p->name);
  free(p->vendor);
  free(p->version);
  free(p->c_version);
  free(p->driver);
  free(p->ext);
}

/* False when out of memory (the strings read so far are freed by props_free). */
static bool props_read(cl_device_id id, device_props *p) {
  *p = (device_props){0};
  p->name = device_string(id, CL_DEVICE_NAME);
  p->vendor = device_string(id, CL_DEVICE_VENDOR);
  p->version = device_string(id, CL_DEVICE_VERSION);
  p->c_version = device_string(id, CL_DEVICE_OPENCL_C_VERSION);
  p->driver = device_string(id, CL_DRIVER_VERSION);
  p->ext = device_string(id, CL_DEVICE_EXTENSIONS);
  if (!p->name || !p->vendor || !p->version || !p->c_version || !p->driver || !p->ext) return false;
  /* A query that fails leaves its zero: the attribute then says 0 or "no". */
  device_value(id, CL_DEVICE_TYPE, &p->type, sizeof p->type);
  device_value(id, CL_DEVICE_AVAILABLE, &p->available, sizeof p->available);
  p->has_vendor_id = device_value(id, CL_DEVICE_VENDOR_ID, &p->vendor_id, sizeof p->vendor_id);
  device_value(id, CL_DEVICE_MAX_COMPUTE_UNITS, &p->units, sizeof p->units);
  device_value(id, CL_DEVICE_GLOBAL_MEM_SIZE, &p->global, sizeof p->global);
  device_value(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &p->max_alloc, sizeof p->max_alloc);
  device_value(id, CL_DEVICE_HOST_UNIFIED_MEMORY, &p->unified, sizeof p->unified);
  device_value(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, &p->align_bits, sizeof p->align_bits);
  if (!device_value(id, CL_DEVICE_SVM_CAPABILITIES, &p->svm, sizeof p->svm)) p->svm = 0; /* before 2.0: none */
  return true;
}

/* The device's attributes (docs/opencl.md); false when out of memory. */
static bool add_attributes(const hdal_backend_host *host, hdal_device *dev, const platform_info *pi, unsigned index,
                           const device_props *p, const hdal__ocl_device *d, const char *pci) {
  char svm_buf[96];
  svm_names(p->svm, svm_buf, sizeof svm_buf);
  bool ok = add_string(host, dev, "opencl_platform", pi->name);
  ok = ok && add_string(host, dev, "opencl_platform_vendor", pi->vendor);
  ok = ok && add_string(host, dev, "opencl_platform_version", pi->version);
  ok = ok && add_u64(host, dev, "opencl_platform_index", pi->index);
  ok = ok && add_u64(host, dev, "opencl_device_index", index);
  ok = ok && add_string(host, dev, "device_type", type_name(p->type));
  ok = ok && add_string(host, dev, "vendor", p->vendor);
  char vendor_id[16];
  snprintf(vendor_id, sizeof vendor_id, "0x%04x", (unsigned)p->vendor_id);
  ok = ok && (!p->has_vendor_id || add_string(host, dev, "vendor_id", vendor_id));
  ok = ok && add_string(host, dev, "opencl_version", p->version);
  ok = ok && add_string(host, dev, "opencl_c_version", p->c_version);
  ok = ok && add_string(host, dev, "driver_version", p->driver);
  ok = ok && add_bool(host, dev, "available", p->available);
  ok = ok && add_u64(host, dev, "compute_units", p->units);
  ok = ok && host->add_attribute(dev, HDAL_BACKEND_MEMORY_BYTES("global_memory_bytes"));
  ok = ok && add_u64(host, dev, "max_alloc_bytes", p->max_alloc);
  ok = ok && add_bool(host, dev, "host_unified_memory", p->unified);
  ok = ok && add_string(host, dev, "svm_capabilities", svm_buf);
  ok = ok && add_u64(host, dev, "base_address_alignment", d->base_align);
  if (pci) return ok && add_string(host, dev, HDAL_ATTRIBUTE_PCI_BUS_ID, pci);
  if (!ok || !(p->type & CL_DEVICE_TYPE_CPU)) return ok;
  /* A CPU device without a bus id computes on the host's CPUs: hdal-ls pairs it with the CPU devices whose
   * cpusets it meets (docs/opencl.md). */
  char *cpus;
  ok = hdal__process_cpuset(&cpus) &&
       (!cpus || host->add_attribute(dev, &(const hdal_backend_attribute){HDAL_ATTRIBUTE_CPUSET,
                                                                         HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY,
                                                                         {.string = cpus}}));
  free(cpus);
  return ok;
}

/* One device of a platform: read, classified, added with its attributes. */
static hdal_error *add_one(discovery *dc, const platform_info *pi, cl_platform_id platform, unsigned index,
                           cl_device_id id) {
  const hdal_backend_host *host = dc->host;
  device_props p;
  hdal__ocl_device *d = NULL;
  char *why = NULL;
  hdal_error *err = NULL;
  if (!props_read(id, &p) || !(d = calloc(1, sizeof *d))) {
    err = host->error_oom();
    goto out;
  }
  pthread_mutex_init(&d->lock, NULL);
  d->host = host;
  d->platform = platform;
  d->id = id;
  d->flat_index = dc->flat++;
  dc->s->devices[dc->s->ndevices++] = d; /* finalize() frees it from here on */
  d->max_alloc = p.max_alloc;
  d->base_align = p.align_bits >= 8 ? p.align_bits / 8 : 1;
  d->serialise_transfers = !strcmp(pi->name, "Portable Computing Language");

  char pci[32];
  bool has_pci = pci_bus_id(id, p.ext, pci, sizeof pci);
  d->servable = classify(p.type, p.available, &why);
  if (!d->servable && !why) {
    err = host->error_oom(); /* asprintf failed */
    goto out;
  }
  hdal_backend_device_info info = {
      .kind = *p.name ? p.name : "OpenCL device",
      .local_hardware_id = d->flat_index,
      .dlpack_device = {kDLOpenCL, d->flat_index},
      .memory_bytes = p.global,
      .numa_node = has_pci ? host->numa_node_of_pci(dc->disc, pci) : -1,
      .runtime_class = d->servable ? HDAL_RUNTIME_PJRT : HDAL_RUNTIME_IFRT_NATIVE,
      .runtime_class_reason = why,
      .data = d,
  };
  hdal_device *dev = host->add_device(dc->disc, &info);
  if (!dev || !add_attributes(host, dev, pi, index, &p, d, has_pci ? pci : NULL)) err = host->error_oom();
  host->debug(dc->disc, "platform %u device %u: %s (%s)%s%s", pi->index, index, p.name,
              d->servable ? "pjrt" : "ifrt-native", why ? ": " : "", why ? why : "");
out:
  props_free(&p);
  free(why);
  return err;
}

static hdal_error *add_platform(discovery *dc, cl_platform_id p, unsigned index) {
  const hdal_backend_host *host = dc->host;
  cl_uint n = 0;
  cl_int e = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (e == CL_DEVICE_NOT_FOUND || (e == CL_SUCCESS && n == 0)) {
    host->debug(dc->disc, "platform %u: no devices", index);
    return NULL;
  }
  if (e != CL_SUCCESS) {
    host->debug(dc->disc, "platform %u skipped: clGetDeviceIDs: %s (%d)", index, hdal__ocl_error_name(e), (int)e);
    return NULL;
  }
  cl_device_id *ids = calloc(n, sizeof *ids);
  platform_info pi = {index, platform_string(p, CL_PLATFORM_NAME), platform_string(p, CL_PLATFORM_VENDOR),
                      platform_string(p, CL_PLATFORM_VERSION)};
  hdal__ocl_device **v = realloc(dc->s->devices, (dc->s->ndevices + n) * sizeof *v);
  hdal_error *err = NULL;
  if (v) dc->s->devices = v;
  if (!ids || !v || !pi.name || !pi.vendor || !pi.version) err = host->error_oom();
  else if ((e = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids, NULL)) != CL_SUCCESS)
    host->debug(dc->disc, "platform %u skipped: clGetDeviceIDs: %s (%d)", index, hdal__ocl_error_name(e), (int)e);
  else
    for (cl_uint i = 0; i < n && !err; i++) err = add_one(dc, &pi, p, i, ids[i]);
  free(ids);
  free(pi.name);
  free(pi.vendor);
  free(pi.version);
  return err;
}

/* PoCL 3.1 initialises its platform and devices lazily, unguarded: two
 * threads listing them at once (two contexts created together) crash in
 * clGetDeviceInfo or find no platform.  The OpenCL specification allows the
 * calls concurrently, but what the runtimes do is what counts: this module's
 * discoveries run one at a time, process-wide (the module is loaded once, with
 * RTLD_NODELETE, so the lock is the process's), while the other backends of
 * the same context still discover beside it (docs/opencl.md). */

/* A fork() child of a process that started the OpenCL runtime has none (PoCL's
 * worker threads stayed in the parent): the core lists the backend as
 * unavailable in such a child's contexts (lib/fork.c).  The lock is held
 * across fork(), so that the child's copy is not left locked by a thread it
 * does not have. */
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;
static void before_fork(void) { pthread_mutex_lock(&discovery_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&discovery_lock); }
static void forked_child(void) { pthread_mutex_unlock(&discovery_lock); }
static void watch_forks(void) { pthread_atfork(before_fork, after_fork_parent, forked_child); }

static hdal_error *discover_locked(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state);

static hdal_error *ocl_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  pthread_once(&fork_watch, watch_forks);
  pthread_mutex_lock(&discovery_lock);
  hdal_error *err = hdal__ocl_preflight(host, disc);
  if (!err) err = discover_locked(host, disc, state);
  pthread_mutex_unlock(&discovery_lock);
  return err;
}

static hdal_error *discover_locked(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  hdal__ocl_state *s = calloc(1, sizeof *s);
  if (!s) return host->error_oom();
  s->host = host;
  cl_uint n = 0;
  cl_int e = clGetPlatformIDs(0, NULL, &n);
  if (e == CL_PLATFORM_NOT_FOUND_KHR || (e == CL_SUCCESS && n == 0)) {
    host->debug(disc, "the ICD loader lists no platform");
    *state = s;
    return NULL;
  }
  if (e != CL_SUCCESS) {
    ocl_finalize(s);
    return hdal__ocl_error(host, "clGetPlatformIDs", e);
  }
  cl_platform_id *ids = calloc(n, sizeof *ids);
  if (!ids) {
    ocl_finalize(s);
    return host->error_oom();
  }
  hdal_error *err = NULL;
  if ((e = clGetPlatformIDs(n, ids, NULL)) != CL_SUCCESS) err = hdal__ocl_error(host, "clGetPlatformIDs", e);
  discovery dc = {host, disc, s, 0};
  for (cl_uint i = 0; i < n && !err; i++) err = add_platform(&dc, ids[i], i);
  free(ids);
  if (err) {
    ocl_finalize(s);
    return err;
  }
  *state = s;
  return NULL;
}

static const hdal_native_handle opencl_native_handles[] = {HDAL_NATIVE_OPENCL_PLATFORM, HDAL_NATIVE_OPENCL_DEVICE,
                                                           HDAL_NATIVE_OPENCL_CONTEXT, HDAL_NATIVE_OPENCL_QUEUE, 0};

HDAL_BACKEND_DEFINE(opencl) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "opencl",
    .platform = "opencl",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLOpenCL),
    .discover = ocl_discover,
    .finalize = ocl_finalize,
    .buffer_ops = &hdal__ocl_buffer_ops,
    .native_handles = opencl_native_handles,
};
