/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault-injection walks (tests/faultinject/walk.h) over a GPU backend on its
 * API's fake, for every face (gpusuite.h): context creation with GPUs placed
 * by PCI bus id in an XML topology, DLPack import (a copy of host memory onto
 * GPU 0, a view of device memory, copies of it on GPU 0, onto GPU 1 and onto
 * the CPU), export, copy_to_device to the other GPU and to the CPU, and the
 * device memory pool (the device's default pool where the fake has one, and
 * hdal's own, whose releases record event fences that the reuse queries and
 * the trim waits for).  For every failure injected (an allocation of hdal's,
 * a dlopen/dlsym, or a runtime call hdal makes): an error with a sensible
 * code or the backend "unavailable: ...", *out left NULL, the capsule
 * untouched (its name kept, its deleter not run, a second import of it
 * succeeding), the source intact, and after cleanup nothing hdal took is
 * left.  The test's own calls of the API are not hdal's: never injected.
 * Where the fake's device memory faults on host access (ROCm, Level Zero), a
 * path that reads it from the host crashes the walk. */
#include <limits.h>
#include "gpusuite.h"
#include "walk.h"

static const gpu_walks *spec;
static int deleted;
static float data[6] = {0, 1, 2, 3, 4, 5};
static int64_t shape[2] = {2, 3};
static DLManagedTensor legacy;

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

/* Points hdal at the fake of the moment with two GPUs; false, and the walk
 * failed, when the fake is not built (a walk of nothing would pass). */
static bool use_fake(walk_result *r) {
  char path[PATH_MAX];
  if (!gpu_fake_path(path, sizeof path)) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "no %s in HDAL_TEST_MODULES (make -C tests check builds it)", gpu_fake);
    return false;
  }
  gpu->name_fake(path);
  gpu_set("DEVICES", "2");
  return true;
}

/* Device memory of GPU `ordinal` holding `data`, made by the test; NULL if it cannot. */
static void *gpu_copy_of_data(int ordinal) {
  static bool opened;
  void *p = NULL;
  if (!opened) opened = gpu->open(&gpu_hook);
  return opened && gpu->alloc(ordinal, data, sizeof data, &p) == 0 ? p : NULL;
}

static bool values_ok(const hdal_buffer *b) {
  float got[6];
  hdal_error *err = hdal_buffer_copy_to_host(b, got, sizeof got);
  bool ok = err == NULL && !memcmp(got, data, sizeof got);
  hdal_error_destroy(err);
  return ok;
}

static const char *status(const hdal_context *ctx) {
  const char *s = test_backend_status(ctx, gpu->platform);
  return s ? s : "(not listed)";
}

/* "cpu,<the face's backend>" */
static hdal_context_options options(void) {
  return (hdal_context_options){.struct_size = sizeof(hdal_context_options), .backends = gpu_backends(true)};
}

/* The fake chosen (use_fake) and a context on it; NULL (r says why) if not. */
static hdal_context *context(walk_result *r) {
  if (!use_fake(r)) return NULL;
  hdal_context_options o = options();
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_context_create(&o, &ctx);
  if (err) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "no context: %s", hdal_error_message(err));
    hdal_error_destroy(err);
  }
  return ctx;
}


/* Whether the failure injected left hdal unable to say where memory is: it
 * then copies rather than alias what it cannot vouch for (docs/cuda.md). */
static bool could_not_place(void) {
  hdalfi_report rep;
  if (!walk_injected_report(&rep)) return false;
  if (!spec->placing) return rep.kind == HDALFI_DRIVER;
  return !strcmp(rep.function, spec->placing);
}

/* ---- context creation, GPUs placed by PCI bus id in an XML topology ---- */

static void context_walk(walk_result *r, long n, const char *baseline, const void *arg) {
  if (!use_fake(r)) return;
  char xml[4096];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  gpu_set("DEVICES", "3");
  gpu_set("PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0000:5e:00.0");
  hdal_context_options o = options();
  hdal_context *ctx;
  walk_create_context(r, n, baseline, &o, &ctx);
  if (!r->ok) return;
  if (ctx && !baseline[0])
    WALK_CHECK(r, !strcmp(status(ctx), "ok: 3 devices"), "%s %s without injection", gpu->platform, status(ctx));
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- import ---- */

typedef struct {
  bool on_gpu;          /* the tensor is device memory of GPU 0, else host memory (kDLCPU) */
  const char *platform; /* of the device the import targets; NULL: the face's */
  int ordinal;          /* which of its devices */
  hdal_copy_mode copy;
  bool view;            /* expected result */
} import_case;

static void import_walk(walk_result *r, long n, const char *baseline, const void *arg) {
  const import_case *ic = arg;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  const char *platform = ic->platform ? ic->platform : gpu->platform;
  hdal_device *dev = test_platform_device(ctx, platform, ic->ordinal);
  WALK_CHECK(r, dev, "no %s device %d: %s %s", platform, ic->ordinal, gpu->platform, status(ctx));
  void *where = data, *on_gpu = NULL;
  if (ic->on_gpu) {
    WALK_CHECK(r, (on_gpu = gpu_copy_of_data(0)), "could not place the tensor on the fake GPU");
    where = on_gpu;
  }
  hdal_capsule *cap = make_capsule(ic->on_gpu ? (DLDevice){gpu->memory, 0} : (DLDevice){kDLCPU, 0}, where);
  hdal_import_options o = {.struct_size = sizeof o, .copy = ic->copy};
  hdal_buffer *buf;
  walk_import(r, n, ctx, cap, dev, &o, "dltensor", &deleted, &buf);
  if (!r->ok) return;
  WALK_CHECK(r, !strcmp(hdal_capsule_name(cap), "used_dltensor"), "capsule named \"%s\" after import",
             hdal_capsule_name(cap));
  bool view = hdal_buffer_is_view(buf);
  if (view != ic->view && ic->view && could_not_place())
    snprintf(r->outcome, sizeof r->outcome, "degraded (copied: the runtime could not place the memory)");
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
  WALK_CHECK(r, deleted == 1, "%d deleter call(s) after destroying the consumed capsule", deleted);
  hdal_context_destroy(ctx);
  if (on_gpu) gpu->free(0, on_gpu);
  walk_leaks(r);
}

static const import_case copy_to = {.ordinal = 0};
static const import_case view_on = {.on_gpu = true, .ordinal = 0, .view = true};
static const import_case copy_on = {.on_gpu = true, .ordinal = 0, .copy = HDAL_COPY_ALWAYS};
static const import_case between_gpus = {.on_gpu = true, .ordinal = 1};
static const import_case to_cpu = {.on_gpu = true, .platform = "cpu", .ordinal = 0};

/* ---- export ---- */

static void export_walk(walk_result *r, long n, const char *baseline, const void *arg) {
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *dev = test_platform_device(ctx, gpu->platform, 0);
  WALK_CHECK(r, dev, "no %s device: %s", gpu->platform, status(ctx));
  hdal_capsule *cap = make_capsule((DLDevice){kDLCPU, 0}, data);
  hdal_buffer *buf = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, dev, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));
  int before = deleted;
  hdal_export_options o = {.struct_size = sizeof o, .max_version = {1, 1}};
  hdal_capsule *out = (hdal_capsule *)&o;
  walk_arm(n);
  err = hdal_buffer_to_dlpack(buf, &o, &out);
  walk_disarm();
  if (err) {
    if (!walk_accept(r, err)) return;
    WALK_CHECK(r, out == NULL, "failed export left *out = %p", (void *)out);
    WALK_CHECK(r, deleted == before, "failed export ran a deleter");
    WALK_CHECK(r, values_ok(buf), "the buffer changed after a failed export");
  } else {
    WALK_CHECK(r, !strcmp(hdal_capsule_name(out), "dltensor_versioned"), "exported capsule named \"%s\"",
               hdal_capsule_name(out));
    DLManagedTensorVersioned *v = hdal_capsule_pointer(out);
    WALK_CHECK(r, v->dl_tensor.device.device_type == gpu->memory && v->dl_tensor.device.device_id == 0,
               "exported on device (%d, %d)", v->dl_tensor.device.device_type, v->dl_tensor.device.device_id);
    WALK_CHECK(r, v->dl_tensor.data == hdal_buffer_data(buf), "the export does not alias the buffer");
    hdal_capsule_destroy(out); /* runs the exported tensor's deleter: drops its reference */
  }
  hdal_buffer_release(buf);
  hdal_capsule_destroy(cap);
  WALK_CHECK(r, deleted == 1, "%d deleter call(s)", deleted);
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- a buffer to the other GPU, and to the CPU ---- */

typedef struct {
  const char *platform; /* NULL: the face's */
  int ordinal;
} copy_case;

static void copy_walk(walk_result *r, long n, const char *baseline, const void *arg) {
  const copy_case *cc = arg;
  hdal_context *ctx = context(r);
  if (!ctx) return;
  const char *platform = cc->platform ? cc->platform : gpu->platform;
  hdal_device *src = test_platform_device(ctx, gpu->platform, 0), *dst = test_platform_device(ctx, platform, cc->ordinal);
  WALK_CHECK(r, src && dst, "no %s device 0 or %s device %d: %s", gpu->platform, platform, cc->ordinal, status(ctx));
  hdal_capsule *cap = make_capsule((DLDevice){kDLCPU, 0}, data);
  hdal_buffer *buf = NULL, *out;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, src, NULL, &buf);
  WALK_CHECK(r, err == NULL, "import: %s", hdal_error_message(err));
  walk_copy_to(r, n, buf, dst, &out);
  if (!r->ok) return;
  if (out) {
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

static const copy_case other_gpu = {.ordinal = 1};
static const copy_case cpu = {.platform = "cpu", .ordinal = 0};

/* ---- the device memory pool: reuse, a fresh block, releases and a trim ---- */

static const bool default_pool_walk = true, hdal_pool_walk = false;

/* `arg`: whether it walks the device's default pool (else hdal's). */
static void pool_walk(walk_result *r, long n, const char *baseline, const void *arg) {
  bool default_pool = *(const bool *)arg;
  if (gpu->mempools) gpu_set("MEMPOOLS", default_pool ? "1" : "0");
  hdal_context *ctx = context(r);
  if (!ctx) return;
  hdal_device *dev = test_platform_device(ctx, gpu->platform, 0);
  WALK_CHECK(r, dev, "no %s device: %s", gpu->platform, status(ctx));
  walk_pool_round(r, n, ctx, dev, default_pool ? "the runtime" : NULL);
  if (!r->ok) return;
  snprintf(r->text, sizeof r->text, "pool on %s\n", default_pool ? "the runtime's pool" : "hdal's pool");
  hdal_context_destroy(ctx);
  walk_leaks(r);
}

/* ---- the walks, named after their platform as before they were shared ---- */

typedef struct {
  const char *format; /* of the name, with the platform (or the fake's family) for %s */
  void (*fn)(walk_result *r, long n, const char *baseline, const void *arg);
  const void *arg;
  bool default_pool; /* only where the fake has the device's default pool */
} walk_entry;

static const walk_entry walks[] = {
    {"context_%s", context_walk, NULL, false},
    {"import_copy_to_%s", import_walk, &copy_to, false},
    {"import_view_on_%s", import_walk, &view_on, false},
    {"import_copy_on_%s", import_walk, &copy_on, false},
    {"import_copy_between_gpus", import_walk, &between_gpus, false},
    {"import_copy_to_cpu", import_walk, &to_cpu, false},
    {"export_%s", export_walk, NULL, false},
    {"copy_to_other_gpu", copy_walk, &other_gpu, false},
    {"copy_to_cpu", copy_walk, &cpu, false},
    {"pool_runtime_pool", pool_walk, &default_pool_walk, true},
    {"pool_hdal_pool", pool_walk, &hdal_pool_walk, false},
};
enum { NWALKS = sizeof walks / sizeof walks[0] };

static char names[NWALKS][64]; /* the tests' names: walk_<the walk's> */
static const walk_entry *current;

static void run_current(walk_result *r, long n, const char *baseline) { current->fn(r, n, baseline, current->arg); }

/* Check's loop index is the walk's. */
START_TEST(walk_gpu) {
  current = &walks[_i];
  walk_run(names[_i] + strlen("walk_"), run_current);
}
END_TEST

void gpu_walks_add(TCase *tc, const gpu_walks *s) {
  /* Each walk a test of its own name: the same for every tcase of a program (one face). */
  static TTest tests[NWALKS];
  spec = s;
  char family[32]; /* the fake's: fakehip for fakehip6 */
  snprintf(family, sizeof family, "%s", gpu->fake);
  for (size_t k = strlen(family); k > 0 && family[k - 1] >= '0' && family[k - 1] <= '9'; k--) family[k - 1] = '\0';
  for (int i = 0; i < NWALKS; i++) {
    if (walks[i].default_pool && !gpu->mempools) continue;
    char format[64];
    snprintf(format, sizeof format, "walk_%s", walks[i].format);
    snprintf(names[i], sizeof names[i], format, walks[i].fn == context_walk ? family : gpu->platform);
    tests[i] = *walk_gpu;
    tests[i].name = names[i];
    tcase_add_loop_test(tc, &tests[i], i, i + 1);
  }
}
