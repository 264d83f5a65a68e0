/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walks over the Level Zero backend (hdal_levelzero.so) on the
 * suite's fake driver (tests/fakeze/), loaded by the system's real loader
 * (libze_loader.so.1) through ZE_ENABLE_ALT_DRIVERS: context creation, DLPack
 * import (a view of device USM, copies of host memory onto a GPU, of a device
 * tensor onto the CPU and between the two GPUs), export, copy_to_device
 * between the GPUs and to the CPU, and the device memory pool (hdal's own:
 * Level Zero has no stream-ordered pool; docs/memory.md), whose releases
 * record event fences that reuse queries and the trim waits for.  For every
 * failure injected (an allocation of hdal's, a dlopen/dlsym, or a driver call
 * hdal makes through the loader, which the loader tail-calls so that the fake
 * sees hdal as its caller): an error with a sensible code or the backend
 * "unavailable: ...", *out left NULL, the capsule untouched (a second import
 * of it succeeds), and after cleanup nothing hdal took is left.  The fake's
 * device memory faults on host access, so a path that reads it from the host
 * crashes the walk.  Skipped (77) without the loader (Debian's libze1). */
#include "config.h"
#include <check.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "walk.h"
#include "fakeze/testze.h"

static int deleted;
static float data[6] = {0, 1, 2, 3, 4, 5};
static int64_t shape[2] = {2, 3};
static DLManagedTensor legacy;

#define ONEAPI(id) ((DLDevice){(DLDeviceType)kDLOneAPI, (id)})

static void deleter(DLManagedTensor *t) {
  (void)t;
  deleted++;
}

static hdal_capsule *make_capsule(DLDevice dev, void *where) {
  legacy = (DLManagedTensor){
      .dl_tensor = {.data = where, .device = dev, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = shape},
      .deleter = deleter};
  return hdal_capsule_wrap(&legacy);
}

/* Points the loader at the fake driver (an absolute path: the loader wants
 * one; never an empty value, on which it crashes); false, and the walk
 * failed, when the fake is not built (a walk of nothing would pass). */
static bool use_fake(walk_result *r) {
  char lib[4096], abs[PATH_MAX];
  snprintf(lib, sizeof lib, "%s/fakeze.so", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".libs");
  if (access(lib, R_OK) != 0 || !realpath(lib, abs)) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "no fake Level Zero driver at %.900s (make -C tests check builds fakeze.la)", lib);
    return false;
  }
  setenv("ZE_ENABLE_ALT_DRIVERS", abs, 1);
  unsetenv("HDAL_LEVELZERO_LIBRARY");
  unsetenv("ZE_ENABLE_VALIDATION_LAYER");
  setenv("FAKEZE_DEVICES", "2", 1);
  return true;
}

/* The test's own calls through the loader: not hdal's, so never injected. */
static test_ze ze;
static bool ze_ready;

static bool ze_open(void) {
  if (!ze_ready) ze_ready = test_ze_open(&ze) && test_ze_init(&ze) == ZE_RESULT_SUCCESS && ze.ndevices >= 2;
  return ze_ready;
}

/* Device USM of GPU `ordinal`, in the test's own context, holding `data`. */
static void *gpu_copy_of_data(int ordinal) {
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  if (!ze_open() || ze.zeMemAllocDevice(ze.context, &d, sizeof data, 0, ze.devices[ordinal], &p) ||
      test_ze_copy(&ze, p, data, sizeof data))
    return NULL;
  return p;
}

static bool values_ok(const hdal_buffer *b) {
  float got[6];
  hdal_error *err = hdal_buffer_copy_to_host(b, got, sizeof got);
  bool ok = err == NULL && !memcmp(got, data, sizeof got);
  hdal_error_destroy(err);
  return ok;
}

static hdal_device *device_of(hdal_context *ctx, const char *platform, int nth) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && !nth--) return d;
  }
  return NULL;
}

static const char *levelzero_status(hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    if (!strcmp(hdal_context_backend_name(ctx, i), "levelzero")) return hdal_context_backend_status(ctx, i);
  return "(no levelzero backend)";
}

static hdal_context *context(walk_result *r) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,levelzero"};
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_context_create(&o, &ctx);
  if (err) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "no context: %s", hdal_error_message(err));
    hdal_error_destroy(err);
  }
  return ctx;
}

/* What the interposer says of the injected call, before walk_leaks fills r->rep. */
static void fi_report(hdalfi_report *rep) {
  hdalfi_get_report_fn *get = (hdalfi_get_report_fn *)dlsym(RTLD_DEFAULT, "hdalfi_get_report");
  if (get) get(rep);
}

/* ---- context creation, GPUs placed by PCI bus id in an XML topology ---- */

static void context_fakeze(walk_result *r, long n, const char *baseline) {
  if (!use_fake(r)) return;
  char xml[4096];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  setenv("FAKEZE_DEVICES", "3", 1);
  setenv("FAKEZE_PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0000:5e:00.0", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,levelzero"};
  hdal_context *ctx = (hdal_context *)&o;
  walk_arm(n);
  hdal_error *err = hdal_context_create(&o, &ctx);
  walk_disarm();
  if (err) {
    bool fine = walk_error_acceptable(r, err);
    hdal_error_destroy(err);
    if (!fine) {
      r->ok = 0;
      return;
    }
    WALK_CHECK(r, ctx == NULL, "failed hdal_context_create left *out = %p", (void *)ctx);
  } else if (!baseline[0]) {
    walk_describe_context(ctx, r->text, sizeof r->text);
    WALK_CHECK(r, !strcmp(levelzero_status(ctx), "ok: 3 devices"), "levelzero %s without injection",
               levelzero_status(ctx));
  } else {
    walk_compare_context(r, ctx, baseline);
  }
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- import ---- */

typedef struct {
  bool on_gpu;        /* the tensor is device USM of GPU 0 (kDLOneAPI), else host memory (kDLCPU) */
  const char *target; /* platform of the device the import targets */
  int ordinal;        /* which of its devices */
  hdal_copy_mode copy;
  bool view;          /* expected result */
} import_case;

static void import_walk(walk_result *r, long n, const import_case *ic) {
  if (!use_fake(r)) return;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *dev = device_of(ctx, ic->target, ic->ordinal);
  WALK_CHECK(r, dev, "no %s device %d: levelzero %s", ic->target, ic->ordinal, levelzero_status(ctx));
  void *where = data, *gpu = NULL;
  if (ic->on_gpu) {
    WALK_CHECK(r, (gpu = gpu_copy_of_data(0)), "could not place the tensor on the fake GPU");
    where = gpu;
  }
  hdal_capsule *cap = make_capsule(ic->on_gpu ? ONEAPI(0) : (DLDevice){kDLCPU, 0}, where);
  hdal_import_options o = {.struct_size = sizeof o, .copy = ic->copy};
  hdal_buffer *buf = (hdal_buffer *)&o;

  walk_arm(n);
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, dev, &o, &buf);
  walk_disarm();
  if (err) {
    bool fine = walk_error_acceptable(r, err);
    hdal_error_destroy(err);
    if (!fine) {
      r->ok = 0;
      return;
    }
    WALK_CHECK(r, buf == NULL, "failed import left *out = %p", (void *)buf);
    WALK_CHECK(r, !strcmp(hdal_capsule_name(cap), "dltensor"), "failed import renamed the capsule \"%s\"",
               hdal_capsule_name(cap));
    WALK_CHECK(r, deleted == 0, "failed import ran the deleter %d time(s)", deleted);
    err = hdal_buffer_from_dlpack(ctx, cap, dev, &o, &buf);
    WALK_CHECK(r, err == NULL, "the capsule could not be imported after the failure: %s", hdal_error_message(err));
  }
  bool view = hdal_buffer_is_view(buf);
  hdalfi_report rep;
  fi_report(&rep);
  if (view != ic->view && ic->view && rep.injected_at && !strcmp(rep.function, "zeMemGetAllocProperties"))
    /* The driver could not say where the memory is: hdal copies rather than
     * alias what it cannot vouch for, as the ROCm walk accepts of HIP. */
    snprintf(r->outcome, sizeof r->outcome, "degraded (copied: the driver could not place the memory)");
  else
    WALK_CHECK(r, view == ic->view, "is_view %d", view);
  WALK_CHECK(r, hdal_buffer_device(buf) == dev, "the buffer is on another device");
  if (view) WALK_CHECK(r, hdal_buffer_data(buf) == where, "a view that does not alias the tensor");
  WALK_CHECK(r, values_ok(buf), "the buffer's values differ from the tensor's");
  WALK_CHECK(r, deleted == (view ? 0 : 1), "%d deleter call(s) after a %s import", deleted,
             view ? "zero-copy" : "copying");
  hdal_buffer_release(buf);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) after the buffer's release", deleted);
  hdal_capsule_destroy(cap);
  hdal_context_destroy(ctx);
  if (gpu) ze.zeMemFree(ze.context, gpu);
  walk_leaks(r);
}

#define IMPORT(fn, ...)                                            \
  static void fn(walk_result *r, long n, const char *baseline) {  \
    (void)baseline;                                                \
    static const import_case ic = {__VA_ARGS__};                   \
    import_walk(r, n, &ic);                                        \
  }

IMPORT(import_copy_to_levelzero, .target = "levelzero", .ordinal = 0)
IMPORT(import_view_on_levelzero, .on_gpu = true, .target = "levelzero", .ordinal = 0, .view = true)
IMPORT(import_copy_on_levelzero, .on_gpu = true, .target = "levelzero", .ordinal = 0, .copy = HDAL_COPY_ALWAYS)
IMPORT(import_copy_between_gpus, .on_gpu = true, .target = "levelzero", .ordinal = 1)
IMPORT(import_copy_to_cpu, .on_gpu = true, .target = "cpu", .ordinal = 0)

/* ---- export ---- */

static void export_levelzero(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  if (!use_fake(r)) return;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *dev = device_of(ctx, "levelzero", 0);
  WALK_CHECK(r, dev, "no Level Zero device: %s", levelzero_status(ctx));
  hdal_capsule *cap = make_capsule((DLDevice){kDLCPU, 0}, data);
  hdal_buffer *buf = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, dev, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 1}};
  hdal_capsule *out = (hdal_capsule *)&o;
  walk_arm(n);
  err = hdal_buffer_to_dlpack(buf, &o, &out);
  walk_disarm();
  if (err) {
    bool fine = walk_error_acceptable(r, err);
    hdal_error_destroy(err);
    if (!fine) {
      r->ok = 0;
      return;
    }
    WALK_CHECK(r, out == NULL, "failed export left *out = %p", (void *)out);
    WALK_CHECK(r, values_ok(buf), "the buffer changed after a failed export");
  } else {
    WALK_CHECK(r, !strcmp(hdal_capsule_name(out), "dltensor_versioned"), "exported capsule named \"%s\"",
               hdal_capsule_name(out));
    DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
    WALK_CHECK(r, v->dl_tensor.device.device_type == (DLDeviceType)kDLOneAPI && v->dl_tensor.device.device_id == 0,
               "exported on device (%d, %d)", v->dl_tensor.device.device_type, v->dl_tensor.device.device_id);
    WALK_CHECK(r, v->dl_tensor.data == hdal_buffer_data(buf), "the export does not alias the buffer");
    hdal_capsule_destroy(out);
  }
  hdal_buffer_release(buf);
  hdal_capsule_destroy(cap);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s)", deleted);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- a buffer to the other GPU, and to the CPU ---- */

static void copy_walk(walk_result *r, long n, const char *platform, int ordinal) {
  if (!use_fake(r)) return;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *src = device_of(ctx, "levelzero", 0), *dst = device_of(ctx, platform, ordinal);
  WALK_CHECK(r, src && dst, "no Level Zero device 0 or %s device %d: levelzero %s", platform, ordinal,
             levelzero_status(ctx));
  hdal_capsule *cap = make_capsule((DLDevice){kDLCPU, 0}, data);
  hdal_buffer *buf = NULL, *out = (hdal_buffer *)&dst;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, src, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));
  walk_arm(n);
  err = hdal_buffer_copy_to_device(buf, dst, &out);
  walk_disarm();
  if (err) {
    bool fine = walk_error_acceptable(r, err);
    hdal_error_destroy(err);
    if (!fine) {
      r->ok = 0;
      return;
    }
    WALK_CHECK(r, out == NULL, "failed copy left *out = %p", (void *)out);
  } else {
    WALK_CHECK(r, hdal_buffer_device(out) == dst, "copy on the wrong device");
    WALK_CHECK(r, !hdal_buffer_is_view(out), "copy_to_device gave a view");
    WALK_CHECK(r, values_ok(out), "copied values differ");
    hdal_buffer_release(out);
  }
  WALK_CHECK(r, values_ok(buf), "the source changed");
  hdal_buffer_release(buf);
  hdal_capsule_destroy(cap);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s)", deleted);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

static void copy_to_other_gpu(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  copy_walk(r, n, "levelzero", 1);
}

static void copy_to_cpu(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  copy_walk(r, n, "cpu", 0);
}

/* ---- the device memory pool: reuse, a fresh block, releases and a trim ---- */

static DLManagedTensor pool_tensors[3];
static int64_t pool_shapes[3][1];
static float pool_data[256];

static void no_deleter(DLManagedTensor *t) { (void)t; }

/* A copy of the first n floats onto dev; NULL on an error (r->ok cleared unless acceptable). */
static hdal_buffer *copy_onto(walk_result *r, hdal_context *ctx, hdal_device *dev, int which, int64_t n) {
  pool_shapes[which][0] = n;
  pool_tensors[which] = (DLManagedTensor){.dl_tensor = {.data = pool_data,
                                                        .device = {kDLCPU, 0},
                                                        .ndim = 1,
                                                        .dtype = {kDLFloat, 32, 1},
                                                        .shape = pool_shapes[which]},
                                          .deleter = no_deleter};
  hdal_capsule *c = hdal_capsule_wrap(&pool_tensors[which]);
  if (!c) return NULL;
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS};
  hdal_buffer *b = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, c, dev, &o, &b);
  hdal_capsule_destroy(c);
  if (err) {
    if (!walk_error_acceptable(r, err)) r->ok = 0;
    hdal_error_destroy(err);
    return NULL;
  }
  float back[256];
  hdal_error *e2 = hdal_buffer_copy_to_host(b, back, (size_t)n * sizeof(float));
  if (e2) {
    if (!walk_error_acceptable(r, e2)) r->ok = 0;
    hdal_error_destroy(e2);
  } else if (memcmp(back, pool_data, (size_t)n * sizeof(float))) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "the copy's values differ from the tensor's");
  }
  return b;
}

static void pool_hdal_pool(walk_result *r, long n, const char *baseline) {
  (void)baseline;
  if (!use_fake(r)) return;
  for (int i = 0; i < 256; i++) pool_data[i] = (float)i;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *dev = device_of(ctx, "levelzero", 0);
  WALK_CHECK(r, dev, "no Level Zero device: %s", levelzero_status(ctx));
  hdal_buffer *a = copy_onto(r, ctx, dev, 0, 256); /* a cached block before the walk */
  WALK_CHECK(r, a != NULL, "the setup's import failed");
  hdal_buffer_release(a);

  walk_arm(n);
  hdal_buffer *b = copy_onto(r, ctx, dev, 1, 256); /* from the cache, once its fence is done */
  hdal_buffer *c = copy_onto(r, ctx, dev, 2, 100); /* afresh */
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  hdal_error *err = hdal_device_trim(dev);
  walk_disarm();
  WALK_CHECK(r, err == NULL, "hdal_device_trim: %s", hdal_error_message(err));
  if (!r->ok) return;
  hdal_memory_stats s = {.struct_size = sizeof s};
  WALK_CHECK(r, hdal_device_memory_stats(dev, &s) == NULL, "no statistics");
  WALK_CHECK(r, s.bytes_in_use == 0, "%llu bytes in use after every release", (unsigned long long)s.bytes_in_use);
  WALK_CHECK(r, s.bytes_reserved == 0, "%llu bytes reserved after trim", (unsigned long long)s.bytes_reserved);
  WALK_CHECK(r, s.num_pool_hits <= 1, "%llu pool hits", (unsigned long long)s.num_pool_hits);
  snprintf(r->text, sizeof r->text, "pool on hdal's pool\n");
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

#define WALK_TEST(fn) \
  START_TEST(walk_##fn) { walk_run(#fn, fn); } \
  END_TEST

WALK_TEST(context_fakeze)
WALK_TEST(import_copy_to_levelzero)
WALK_TEST(import_view_on_levelzero)
WALK_TEST(import_copy_on_levelzero)
WALK_TEST(import_copy_between_gpus)
WALK_TEST(import_copy_to_cpu)
WALK_TEST(export_levelzero)
WALK_TEST(copy_to_other_gpu)
WALK_TEST(copy_to_cpu)
WALK_TEST(pool_hdal_pool)

int main(int argc, char **argv) {
  (void)argc;
  walk_bootstrap(argv);
  /* Asked in a child: this process never loads the loader, so that each
   * walk's child initialises Level Zero afresh. */
  if (!test_ze_have_loader()) {
    printf("SKIP: no Level Zero loader (%s; Debian's libze1)\n", TEST_ZE_LOADER);
    return 77;
  }
  Suite *s = suite_create("faultinject-levelzero");
  TCase *tc = tcase_create("levelzero");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, walk_context_fakeze);
  tcase_add_test(tc, walk_import_copy_to_levelzero);
  tcase_add_test(tc, walk_import_view_on_levelzero);
  tcase_add_test(tc, walk_import_copy_on_levelzero);
  tcase_add_test(tc, walk_import_copy_between_gpus);
  tcase_add_test(tc, walk_import_copy_to_cpu);
  tcase_add_test(tc, walk_export_levelzero);
  tcase_add_test(tc, walk_copy_to_other_gpu);
  tcase_add_test(tc, walk_copy_to_cpu);
  tcase_add_test(tc, walk_pool_hdal_pool);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
