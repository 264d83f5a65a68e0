/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend module loader and runtime classes (docs/reference.md, docs/backend-abi.md). */
#include "testutil.h"
#include <hdal/backend.h>
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

static char dir[] = "/tmp/hdal-modules-XXXXXX";

/* Links test module mod_<file>.so into the temporary module directory as hdal_<name>.so. */
static void link_module_as(const char *file, const char *name) {
  char from[4096], to[4096];
  snprintf(from, sizeof from, "%s/mod_%s.so", getenv("HDAL_TEST_MODULES"), file);
  snprintf(to, sizeof to, "%s/hdal_%s.so", dir, name);
  ck_assert_msg(symlink(from, to) == 0, "symlink %s", to);
}

static void link_module(const char *name) { link_module_as(name, name); }

static hdal_context *context_on(const char *backends, const char *path) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends, .backend_path = path};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  return ctx;
}

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

START_TEST(ifrt_test_module_listed_with_reason) {
  hdal_context *ctx = test_context_with("cpu,ifrttest"); /* on the suite's HDAL_BACKEND_PATH */
  ck_assert_str_eq(test_backend_status(ctx, "ifrttest"), "ok: 2 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, (size_t)i)), i);
  for (int i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)(2 + i));
    char kind[32];
    snprintf(kind, sizeof kind, "ifrt-test-device-%d", i);
    ck_assert_str_eq(hdal_device_platform(d), "ifrttest");
    ck_assert_str_eq(hdal_device_kind(d), kind);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
    ck_assert_str_eq(hdal_device_runtime_class_reason(d), "test module: devices listed for IFRT only, no buffer runtime");
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLExtDev);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), (uint64_t)(i + 1) << 30);
    ck_assert_int_eq(hdal_device_numa_node(d), -1);
    ck_assert_str_eq(hdal_device_attribute_get(d, "test_attribute"), i ? "one" : "zero");
  }
  /* CPU devices come first. */
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 0)), "cpu");
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 1)), "cpu");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(module_without_buffer_ops_is_ifrt_native) {
  link_module("pjrtnoops");
  hdal_context *ctx = context_on("pjrtnoops", dir);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_device *d = hdal_context_device(ctx, 0);
  ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
  ck_assert_str_eq(hdal_device_runtime_class_reason(d), "backend 'pjrtnoops' provides no buffer operations");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(wrong_abi_refused) {
  link_module("badabi");
  hdal_context *ctx = context_on(NULL, dir);
  char expected[4200];
  snprintf(expected, sizeof expected, "unavailable: %s/hdal_badabi.so: module ABI version 42, this hdal needs %u", dir,
           HDAL_BACKEND_ABI_VERSION);
  ck_assert_str_eq(test_backend_status(ctx, "badabi"), expected);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices"); /* the context goes on */
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(missing_symbol_refused) {
  link_module("nosym");
  hdal_context *ctx = context_on(NULL, dir);
  char expected[4200];
  snprintf(expected, sizeof expected, "unavailable: %s/hdal_nosym.so: missing symbol hdal_nosym_backend", dir);
  ck_assert_str_eq(test_backend_status(ctx, "nosym"), expected);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(broken_file_refused) {
  char path[4200];
  snprintf(path, sizeof path, "%s/hdal_broken.so", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("this is not an ELF object\n", f);
  fclose(f);
  hdal_context *ctx = context_on(NULL, dir);
  const char *st = test_backend_status(ctx, "broken");
  ck_assert_ptr_nonnull(st);
  ck_assert_msg(!strncmp(st, "unavailable: ", 13) && strstr(st, "hdal_broken.so"), "%s", st);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(failing_discovery_drops_its_devices) {
  link_module("failing");
  hdal_context *ctx = context_on("cpu,failing", dir);
  ck_assert_str_eq(test_backend_status(ctx, "failing"), "unavailable: failing: no hardware of this kind here");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(missing_and_empty_directories_are_harmless) {
  hdal_context *ctx = context_on("cpu", "/nonexistent/hdal/modules::/also/missing:");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

/* A module path replaces the install directory, unless it ends with ':'
 * (docs/backend-abi.md): the suite, or a program with modules of its own,
 * never loads an installed hdal's modules besides.  The status says what was searched. */
START_TEST(module_path_replaces_install_directory) {
  static const char *const paths[][2] = {
      {"/nonexistent/a:/nonexistent/b", "(searched /nonexistent/a:/nonexistent/b)"},
      {"/nonexistent/a::/nonexistent/b", "(searched /nonexistent/a:/nonexistent/b)"},
      {"/nonexistent/a:", "(searched /nonexistent/a:" HDAL_TEST_MODULE_DIR ")"},
      {":", "(searched " HDAL_TEST_MODULE_DIR ")"},
      {"", "(searched " HDAL_TEST_MODULE_DIR ")"},
      {"relative:./dir", "(no absolute directory in the module path)"},
  };
  /* A first-party backend is known without its module, so its status tells
   * where the module was looked for; an installed hdal's Level Zero module
   * would be found in the install directory, and those paths are not tried then. */
  bool installed = access(HDAL_TEST_MODULE_DIR "/hdal_levelzero.so", F_OK) == 0;
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    if (installed && strstr(paths[i][1], HDAL_TEST_MODULE_DIR)) continue;
    hdal_context *ctx = context_on("cpu,levelzero", paths[i][0]);
    char want[4200];
    snprintf(want, sizeof want, "unavailable: module hdal_levelzero.so not found %s", paths[i][1]);
    ck_assert_str_eq(test_backend_status(ctx, "levelzero"), want);
    hdal_context_destroy(ctx);
  }
  /* No path at all: the install directory. */
  unsetenv("HDAL_BACKEND_PATH");
  if (installed) return;
  hdal_context *ctx = context_on("cpu,levelzero", NULL);
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"),
                   "unavailable: module hdal_levelzero.so not found (searched " HDAL_TEST_MODULE_DIR ")");
  hdal_context_destroy(ctx);
}
END_TEST

/* Without a module path, the install directory is the one beside the libhdal
 * in use, found at run time (docs/backend-abi.md): a copy of libhdal elsewhere
 * (a relocated prefix, the Python wheel) loads the modules in its own
 * hdal/backends, and this process's libhdal, loaded beside it, still its own.
 * Two copies in one process, each with its own modules. */
START_TEST(install_directory_beside_libhdal) {
  unsetenv("HDAL_BACKEND_PATH");
  char cmd[8400], copy[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/lib/hdal/backends' && cp '%s' '%s/lib/libhdal.so.0' && ln -s '%s/mod_pjrtnoops.so' "
           "'%s/lib/hdal/backends/hdal_pjrtnoops.so'", dir, HDAL_TEST_LIBHDAL, dir, getenv("HDAL_TEST_MODULES"), dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(copy, sizeof copy, "%s/lib/libhdal.so.0", dir);
  void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h, "dlopen %s: %s", copy, dlerror());
  hdal_error *(*create)(const hdal_context_options *, hdal_context **) = (hdal_error * (*)(const hdal_context_options *, hdal_context **)) dlsym(h, "hdal_context_create");
  const char *(*status)(const hdal_context *, size_t) = (const char *(*)(const hdal_context *, size_t))dlsym(h, "hdal_context_backend_status");
  const char *(*name)(const hdal_context *, size_t) = (const char *(*)(const hdal_context *, size_t))dlsym(h, "hdal_context_backend_name");
  size_t (*count)(const hdal_context *) = (size_t (*)(const hdal_context *))dlsym(h, "hdal_context_backend_count");
  void (*destroy)(hdal_context *) = (void (*)(hdal_context *))dlsym(h, "hdal_context_destroy");
  ck_assert(create && status && name && count && destroy);
  ck_assert_ptr_ne((void *)create, (void *)hdal_context_create); /* a second copy, not this process's libhdal */
  hdal_context *theirs = NULL, *ours = NULL;
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,levelzero"};
  ck_assert_ptr_null(create(NULL, &theirs));
  ck_assert_ok(hdal_context_create(&o, &ours));
  /* The copy: the module beside it; levelzero is looked for there too. */
  const char *st = NULL, *lz = NULL;
  for (size_t i = 0; i < count(theirs); i++) {
    if (!strcmp(name(theirs, i), "pjrtnoops")) st = status(theirs, i);
    if (!strcmp(name(theirs, i), "levelzero")) lz = status(theirs, i);
  }
  ck_assert_msg(st && !strncmp(st, "ok", 2), "the copy's own module: %s", st ? st : "(not listed)");
  char want[8400];
  snprintf(want, sizeof want, "unavailable: module hdal_levelzero.so not found (searched %s/lib/hdal/backends)", dir);
  ck_assert_str_eq(lz, want);
  /* This process's libhdal: beside itself, not beside the copy. */
  ck_assert_str_eq(test_backend_status(ours, "levelzero"),
                   "unavailable: module hdal_levelzero.so not found (searched " HDAL_TEST_MODULE_DIR ")");
  destroy(theirs);
  hdal_context_destroy(ours);
}
END_TEST

/* A relative directory loads from wherever the program stands: it is left out
 * of the module path (docs/design.md), the absolute ones still count. */
START_TEST(relative_directories_ignored) {
  link_module("pjrtnoops");
  ck_assert_int_eq(chdir(dir), 0);
  const char *relative[] = {".", "./", "..", "subdir:.", ":.:"};
  for (size_t i = 0; i < sizeof relative / sizeof *relative; i++) {
    /* The module in the relative directory is not found, so its name is unknown. */
    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,pjrtnoops", .backend_path = relative[i]};
    hdal_context *ctx = NULL;
    hdal_error *e = hdal_context_create(&o, &ctx);
    ck_assert_msg(e != NULL, "HDAL_BACKEND_PATH=%s: pjrtnoops found", relative[i]);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    ck_assert_msg(!strncmp(hdal_error_message(e), "hdal_context_options: backends: unknown backend 'pjrtnoops'; known: cpu, ", 73),
                  "HDAL_BACKEND_PATH=%s: %s", relative[i], hdal_error_message(e));
    hdal_error_destroy(e);
    ck_assert_ptr_null(ctx);
    /* Only ":.:" ends with ':', which adds the install directory. */
    if (i == 4) continue;
    ctx = context_on("cpu,vulkan", relative[i]);
    const char *status = test_backend_status(ctx, "vulkan");
    ck_assert_str_eq(status, "unavailable: module hdal_vulkan.so not found (no absolute directory in the module path)");
    ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
    hdal_context_destroy(ctx);
  }
  char path[4200];
  snprintf(path, sizeof path, ".:%s:relative/dir", dir);
  hdal_context *ctx = context_on("cpu,pjrtnoops", path);
  ck_assert_str_eq(test_backend_status(ctx, "pjrtnoops"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(modules_ordered_by_name_after_known_backends) {
  link_module("pjrtnoops");
  link_module("failing");
  char path[8300];
  snprintf(path, sizeof path, "%s:%s", dir, getenv("HDAL_TEST_MODULES"));
  hdal_context *ctx = context_on("-cuda,-opencl", path);
  /* The known backends (backends/registry) are listed, whether found on this path or not, before the others. */
  const char *modules[] = {"failing", "ifrttest", "pjrtnoops"};
  ck_assert_uint_ge(hdal_context_backend_count(ctx), TEST_NKNOWN + 3);
  for (size_t i = 0; i < TEST_NKNOWN + 3; i++)
    ck_assert_str_eq(hdal_context_backend_name(ctx, i), i < TEST_NKNOWN ? test_known[i] : modules[i - TEST_NKNOWN]);
  /* Devices: 2 cpu, 2 ifrttest, 1 pjrtnoops, ids dense in that order. */
  ck_assert_uint_eq(hdal_context_device_count(ctx), 5);
  const char *platforms[] = {"cpu", "cpu", "ifrttest", "ifrttest", "pjrtnoops"};
  for (size_t i = 0; i < 5; i++) {
    ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, i)), platforms[i]);
    ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, i)), (int)i);
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* The path is scanned once: a module in two directories is the first one's,
 * whichever order the path gives. */
START_TEST(first_directory_wins) {
  char other[] = "/tmp/hdal-modules-XXXXXX", from[4096], to[4096], path[8300], expected[4200];
  ck_assert_ptr_nonnull(mkdtemp(other));
  link_module("badabi"); /* dir/hdal_badabi.so: ABI 42 */
  snprintf(from, sizeof from, "%s/mod_nosym.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_badabi.so", other); /* other/hdal_badabi.so: no hdal_badabi_backend */
  ck_assert_int_eq(symlink(from, to), 0);

  snprintf(path, sizeof path, "%s:%s", dir, other);
  hdal_context *ctx = context_on("cpu,badabi", path);
  snprintf(expected, sizeof expected, "unavailable: %s/hdal_badabi.so: module ABI version 42, this hdal needs %u", dir,
           HDAL_BACKEND_ABI_VERSION);
  ck_assert_str_eq(test_backend_status(ctx, "badabi"), expected);
  hdal_context_destroy(ctx);

  snprintf(path, sizeof path, "%s:%s", other, dir);
  ctx = context_on("cpu,badabi", path);
  snprintf(expected, sizeof expected, "unavailable: %s/hdal_badabi.so: missing symbol hdal_badabi_backend", other);
  ck_assert_str_eq(test_backend_status(ctx, "badabi"), expected);
  hdal_context_destroy(ctx);
  unlink(to);
  rmdir(other);
}
END_TEST

/* Discovery scheduling (docs/design.md): the calling thread discovers the first
 * enabled module; helper threads, as many as the other usable CPUs (at least
 * one) and no more than the other backends, take the rest, and the calling
 * thread joins them once done.  Each probe stays 50 ms in discovery, so every
 * thread that runs is in flight at once. */
static void check_probe_schedule(int cpus) {
  link_module_as("threadprobe", "probea");
  link_module_as("threadprobe", "probeb");
  link_module_as("threadprobe", "probec");
  hdal_context *ctx = context_on("probea,probeb,probec", dir);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  long tid[3];
  int most = 0;
  for (size_t i = 0; i < 3; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    char platform[8];
    snprintf(platform, sizeof platform, "probe%c", (int)('a' + i));
    ck_assert_str_eq(hdal_device_platform(d), platform);
    tid[i] = atol(hdal_device_attribute_get(d, "discovery_thread"));
    int m = atoi(hdal_device_attribute_get(d, "most_in_flight"));
    if (m > most) most = m;
  }
  hdal_context_destroy(ctx);
  int helpers = cpus - 1 < 1 ? 1 : cpus - 1 > 2 ? 2 : cpus - 1;
  ck_assert_int_eq(tid[0], (long)getpid()); /* the first, in the calling thread (the test's main thread) */
  ck_assert_int_eq(most, 1 + helpers);
  if (helpers == 2) /* one helper each */
    ck_assert(tid[0] != tid[1] && tid[0] != tid[2] && tid[1] != tid[2]);
  else /* one helper for both, or the calling thread once done with its own */
    ck_assert(tid[0] == tid[1] || tid[0] == tid[2] || tid[1] == tid[2]);
}

START_TEST(discovery_threads_bounded_by_cpus) {
  cpu_set_t all;
  ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
  check_probe_schedule(CPU_COUNT(&all));
}
END_TEST

START_TEST(one_cpu_still_gets_a_discovery_helper) {
  cpu_set_t all, one;
  ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
  check_probe_schedule(1);
  ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0); /* CK_FORK=no runs the next test here */
}
END_TEST

/* Process `index` of two, with the modules of directory `path`. */
static hdal_context *process_of_two(int index, const char *backends, const char *path) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends, .backend_path = path,
                            .process_index = index, .process_count = 2};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  return ctx;
}

static void add_table(hdal_context *to, const hdal_context *from, int index) {
  void *blob = NULL;
  size_t len = 0;
  ck_assert_ok(hdal_context_export_devices(from, &blob, &len));
  ck_assert_ok(hdal_context_add_process(to, index, blob, len));
  free(blob);
}

/* A GPU node and a CPU node of one job: process 0 has modules probea and
 * probec, process 1 only probec.  Both must number every device alike. */
START_TEST(processes_with_different_modules_agree_on_global_ids) {
  char other[] = "/tmp/hdal-modules-other-XXXXXX", to[4200], from[4200];
  ck_assert_ptr_nonnull(mkdtemp(other));
  link_module_as("threadprobe", "probea");
  link_module_as("threadprobe", "probec");
  snprintf(from, sizeof from, "%s/mod_threadprobe.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_probec.so", other);
  ck_assert_int_eq(symlink(from, to), 0);
  hdal_context *p0 = process_of_two(0, "cpu,probea,probec", dir), *p1 = process_of_two(1, "cpu,probec", other);
  add_table(p0, p1, 1);
  add_table(p1, p0, 0);
  size_t n = hdal_context_device_count(p0);
  ck_assert_uint_eq(n, 2 + 1 + 1 + 2 + 1); /* process 0: 2 CPU, probea, probec; process 1: 2 CPU, probec */
  ck_assert_uint_eq(hdal_context_device_count(p1), n);
  static const char *const expect[] = {"cpu", "cpu", "probea", "probec", "cpu", "cpu", "probec"};
  for (size_t i = 0; i < n; i++) {
    hdal_device *a = hdal_context_device(p0, i), *b = hdal_context_device(p1, i);
    ck_assert_int_eq(hdal_device_id(a), (int)i);
    ck_assert_int_eq(hdal_device_id(b), (int)i);
    ck_assert_str_eq(hdal_device_platform(a), expect[i]);
    ck_assert_str_eq(hdal_device_platform(b), expect[i]);
    ck_assert_int_eq(hdal_device_process_index(a), hdal_device_process_index(b));
    ck_assert_int_eq(hdal_device_local_hardware_id(a), hdal_device_local_hardware_id(b));
    ck_assert_str_eq(hdal_device_kind(a), hdal_device_kind(b));
  }
  hdal_context_destroy(p0);
  hdal_context_destroy(p1);
  unlink(to);
  rmdir(other);
}
END_TEST

int main(void) {

  Suite *s = suite_create("modules");
  TCase *tc = tcase_create("modules");
  unsetenv("HDAL_BACKENDS");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, ifrt_test_module_listed_with_reason);
  tcase_add_test(tc, module_without_buffer_ops_is_ifrt_native);
  tcase_add_test(tc, wrong_abi_refused);
  tcase_add_test(tc, missing_symbol_refused);
  tcase_add_test(tc, broken_file_refused);
  tcase_add_test(tc, failing_discovery_drops_its_devices);
  tcase_add_test(tc, missing_and_empty_directories_are_harmless);
  tcase_add_test(tc, module_path_replaces_install_directory);
  tcase_add_test(tc, relative_directories_ignored);
  tcase_add_test(tc, install_directory_beside_libhdal);
  tcase_add_test(tc, modules_ordered_by_name_after_known_backends);
  tcase_add_test(tc, first_directory_wins);
  tcase_add_test(tc, discovery_threads_bounded_by_cpus);
  tcase_add_test(tc, one_cpu_still_gets_a_discovery_helper);
  tcase_add_test(tc, processes_with_different_modules_agree_on_global_ids);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
