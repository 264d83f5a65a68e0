/* SPDX-License-Identifier: BSD-3-Clause */
/* Context, device model and the CPU backend on hwloc (docs/reference.md). */
#include <pthread.h>
#include <unistd.h>
#include "testutil.h"

#define SYNTH_4NODES "pack:2 numa:2 core:4 pu:2"

static hdal_context *cpu_only(const char *synthetic) {
  if (synthetic) setenv("HWLOC_SYNTHETIC", synthetic, 1);
  return test_context_with("cpu");
}

START_TEST(create_and_destroy) {
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(NULL, &ctx));
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  ck_assert_uint_ge(hdal_context_device_count(ctx), 1); /* this machine's NUMA node(s) at least */
  ck_assert_ptr_null(hdal_context_device(ctx, hdal_context_device_count(ctx)));
  ck_assert_str_eq(hdal_context_backend_name(ctx, 0), "cpu");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 1), "cuda");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 2), "opencl");
  ck_assert_ptr_null(hdal_context_backend_name(ctx, hdal_context_backend_count(ctx)));
  ck_assert_ptr_null(hdal_context_backend_status(ctx, hdal_context_backend_count(ctx)));
  ck_assert_int_eq(strncmp(test_backend_status(ctx, "cpu"), "ok: ", 4), 0);
  hdal_context_destroy(ctx);
  hdal_context_destroy(NULL);
}
END_TEST

START_TEST(synthetic_numa_nodes_are_cpu_devices) {
  hdal_context *ctx = cpu_only(SYNTH_4NODES);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 4 devices");
  static const char *const cpusets[] = {"0-7", "8-15", "16-23", "24-31"};
  for (size_t i = 0; i < 4; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), 0);
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_str_eq(hdal_device_platform(d), "cpu");
    ck_assert_str_eq(hdal_device_kind(d), "cpu");
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert_int_eq(hdal_device_numa_node(d), (int)i);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLCPU);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, 0);
    ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "4");
    ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "8");
    ck_assert_str_eq(hdal_device_attribute_get(d, "cpuset"), cpusets[i]);
    ck_assert_ptr_null(hdal_device_attribute_get(d, "no_such_key"));
    const char *k, *v;
    size_t n = hdal_device_attribute_count(d);
    ck_assert_uint_ge(n, 3);
    ck_assert(hdal_device_attribute(d, 0, &k, &v));
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(v);
    ck_assert(!hdal_device_attribute(d, n, &k, &v));
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(synthetic_memory_per_node) {
  hdal_context *ctx = cpu_only("pack:1 numa:2(memory=1073741824) core:2 pu:1");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  for (size_t i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(1073741824));
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "1073741824");
    ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "2");
    ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "2");
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(no_numa_information_gives_one_device) {
  hdal_context *ctx = cpu_only("pack:2 core:3 pu:2");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_device *d = hdal_context_device(ctx, 0);
  ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), "6");
  ck_assert_str_eq(hdal_device_attribute_get(d, "pus"), "12");
  ck_assert_str_eq(hdal_device_attribute_get(d, "cpuset"), "0-11");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(xml_topology) {
  char path[4096];
  snprintf(path, sizeof path, "%s/topologies/two-numa.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  setenv("HWLOC_XMLFILE", path, 1);
  unsetenv("HWLOC_SYNTHETIC");
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  hdal_device *d0 = hdal_context_device(ctx, 0), *d1 = hdal_context_device(ctx, 1);
  ck_assert_str_eq(hdal_device_kind(d0), "Test CPU Model 9000");
  ck_assert_uint_eq(hdal_device_memory_bytes(d0), UINT64_C(17179869184));
  ck_assert_uint_eq(hdal_device_memory_bytes(d1), UINT64_C(34359738368));
  ck_assert_str_eq(hdal_device_attribute_get(d0, "cpuset"), "0-3");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "cpuset"), "4-7");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "cores"), "2");
  ck_assert_str_eq(hdal_device_attribute_get(d1, "pus"), "4");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(unreadable_xml_makes_cpu_unavailable_not_a_failure) {
  setenv("HWLOC_XMLFILE", "/nonexistent/topology.xml", 1);
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"),
                   "unavailable: hwloc could not use HWLOC_XMLFILE=/nonexistent/topology.xml (unreadable or malformed)");
  hdal_context_destroy(ctx);
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "bogus:3", 1);
  ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"),
                   "unavailable: hwloc could not use HWLOC_SYNTHETIC=bogus:3 (unreadable or malformed)");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(backends_selection) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "disabled");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "disabled");
  ck_assert_str_eq(test_backend_status(ctx, "ifrttest"), "disabled");
  hdal_context_destroy(ctx);

  ctx = test_context_with("-cpu,-cuda,-opencl,-ifrttest");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "disabled");
  hdal_context_destroy(ctx);

  /* The environment variable is read when the options leave it open. */
  setenv("HDAL_BACKENDS", "-cpu", 1);
  hdal_context *c2 = NULL;
  ck_assert_ok(hdal_context_create(NULL, &c2));
  ck_assert_str_eq(test_backend_status(c2, "cpu"), "disabled");
  hdal_context_destroy(c2);
  /* ... and the options win over it. */
  ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  hdal_context_destroy(ctx);
}
END_TEST

/* A name that is neither a first-party backend nor a module on the path is
 * refused where it is given, to keep or to leave out, with the known names;
 * names are case-sensitive, and a name that differs from one only in case,
 * '-' or '_' gets it suggested (docs/reference.md, "Backend names").  The
 * refusal makes no context: *out stays NULL. */
START_TEST(unknown_backend_refused) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  /* Each refusal ends with the known names: backends/registry's (test_known_list). */
  static const char *const cases[][2] = {
      {"cpu,openCL", "hdal_context_options: backends: unknown backend 'openCL' (did you mean 'opencl'?); "},
      {"cpu,-openCL", "hdal_context_options: backends: unknown backend 'openCL' (did you mean 'opencl'?); "},
      {"CPU", "hdal_context_options: backends: unknown backend 'CPU' (did you mean 'cpu'?); "},
      {"cpu,level_zero", "hdal_context_options: backends: unknown backend 'level_zero' (did you mean 'levelzero'?); "},
      {"cpu,Level-Zero", "hdal_context_options: backends: unknown backend 'Level-Zero' (did you mean 'levelzero'?); "},
      {"cpu,nosuchbackend", "hdal_context_options: backends: unknown backend 'nosuchbackend'; "},
      {"cpu opencl x y", "hdal_context_options: backends: unknown backend 'x'; "},
      {"cpu,ifrttest", "hdal_context_options: backends: unknown backend 'ifrttest'; "},
      {"cpu,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
       "hdal_context_options: backends: unknown backend "
       "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'; "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    /* No module on this path: the known names are the first-party ones. */
    hdal_context_options o = {.struct_size = sizeof o, .backends = cases[i][0], .backend_path = "/nonexistent"};
    hdal_context *ctx = (hdal_context *)&o; /* set to NULL by the refusal */
    char want[512];
    snprintf(want, sizeof want, "%sknown: %s", cases[i][1], test_known_list());
    ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT, want);
    ck_assert_ptr_null(ctx);
  }
  /* The variable, named as such; the suite's module path adds its modules to the list. */
  setenv("HDAL_BACKENDS", "cpu,OpenCL", 1);
  hdal_context *ctx = NULL;
  char want[512];
  snprintf(want, sizeof want, "HDAL_BACKENDS: unknown backend 'OpenCL' (did you mean 'opencl'?); known: %s, ifrttest",
           test_known_list());
  ck_assert_error(hdal_context_create(NULL, &ctx), HDAL_INVALID_ARGUMENT, want);
  ck_assert_ptr_null(ctx);
  unsetenv("HDAL_BACKENDS");
  /* A first-party name is known without its module: its status says it is not there. */
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,levelzero", .backend_path = "/nonexistent"};
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"),
                   "unavailable: module hdal_levelzero.so not found (searched /nonexistent)");
  ck_assert_ptr_null(test_backend_status(ctx, "nosuchbackend"));
  hdal_context_destroy(ctx);
  /* A module found on the path is known by its name. */
  ctx = test_context_with("cpu,ifrttest");
  ck_assert_str_eq(test_backend_status(ctx, "ifrttest"), "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(bad_backend_lists_refused) {
  static const char *const bad[] = {"cpu;opencl", "cpu,-", "c/pu", "cpu\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = bad[i]};
    hdal_context *ctx = NULL;
    hdal_error *e = hdal_context_create(&o, &ctx);
    ck_assert_msg(e != NULL, "'%s' accepted", bad[i]);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    ck_assert_ptr_null(ctx);
    hdal_error_destroy(e);
  }
  /* Empty entries and spaces are fine; spaces separate like commas. */
  hdal_context *ctx = test_context_with(" cpu, ,");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "disabled");
  hdal_context_destroy(ctx);
  ctx = test_context_with("cpu opencl cuda ifrttest  -opencl");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "disabled");
  ck_assert_str_eq(test_backend_status(ctx, "ifrttest"), "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

static void *create_destroy_many(void *arg) {
  for (int i = 0; i < 8; i++) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
    hdal_context *ctx;
    hdal_error *e = hdal_context_create(&o, &ctx);
    if (e) {
      hdal_error_destroy(e);
      return (void *)1;
    }
    if (hdal_context_device_count(ctx) != 4) return (void *)2;
    hdal_context_destroy(ctx);
  }
  return NULL;
}

START_TEST(contexts_created_concurrently) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, create_destroy_many, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    ck_assert_ptr_null(r);
  }
}
END_TEST

START_TEST(process_place_from_options) {
  setenv("HWLOC_SYNTHETIC", SYNTH_4NODES, 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 2, .process_count = 3};
  hdal_context *ctx;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_int_eq(hdal_context_process_index(ctx), 2);
  ck_assert_int_eq(hdal_context_process_count(ctx), 3);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    ck_assert_int_eq(hdal_device_process_index(hdal_context_device(ctx, i)), 2);
    ck_assert(hdal_device_is_addressable(hdal_context_device(ctx, i)));
    ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, i)), (int)i);
  }
  hdal_context_destroy(ctx);
  o.process_index = 3;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: process_index 3 is not in [0, process_count 3)");
  o.process_index = -1;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: process_index -1 is not in [0, process_count 3)");
}
END_TEST

extern char **environ;

/* The environment as a program sees it: the array and every string in it. */
typedef struct {
  char **array;
  size_t n;
  char *text; /* the strings one after another, each with its NUL */
  size_t size;
} env_snapshot;

static env_snapshot env_take(void) {
  env_snapshot e = {.array = environ};
  for (; environ[e.n]; e.n++) e.size += strlen(environ[e.n]) + 1;
  e.text = malloc(e.size ? e.size : 1);
  ck_assert_ptr_nonnull(e.text);
  size_t at = 0;
  for (size_t i = 0; i < e.n; i++) {
    size_t len = strlen(environ[i]) + 1;
    memcpy(e.text + at, environ[i], len);
    at += len;
  }
  return e;
}

static void env_assert_unchanged(const env_snapshot *before, const char *when) {
  env_snapshot now = env_take();
  ck_assert_msg(now.array == before->array, "%s: environ is another array", when);
  ck_assert_msg(now.n == before->n && now.size == before->size && !memcmp(now.text, before->text, now.size),
                "%s: the environment changed", when);
  free(now.text);
}

/* The hwloc plugins and vendor libraries mapped into this process, ", "-separated ("" when none). */
static void vendor_mappings(char *out, size_t size) {
  static const char *const names[] = {"hwloc_opencl.so", "hwloc_levelzero.so", "hwloc_cuda.so", "hwloc_nvml.so",
                                      "hwloc_rsmi.so",   "hwloc_gl.so",        "hwloc_pci.so",  "libze_loader",
                                      "libOpenCL",       "libpciaccess"};
  out[0] = '\0';
  FILE *maps = fopen("/proc/self/maps", "re");
  ck_assert_ptr_nonnull(maps);
  char line[4096];
  while (fgets(line, sizeof line, maps))
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      if (strstr(line, names[i]) && !strstr(out, names[i]))
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "", names[i]);
  fclose(maps);
}

/* hdal keeps hwloc from loading its vendor plugins (and through them
 * libOpenCL, libze_loader, ...) without changing the environment: after
 * hdal_context_create and after hdal_context_destroy, environ is the same
 * array holding the same bytes; with concurrent discovery too (docs/hwloc.md). */
START_TEST(hwloc_vendor_plugins_not_loaded_environment_unchanged) {
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_PLUGINS_BLACKLIST");
  unsetenv("HWLOC_PLUGINS_PATH");
  static const char *const lists[] = {"cpu", "cpu,ifrttest"};
  for (size_t i = 0; i < 2; i++) {
    env_snapshot before = env_take();
    hdal_context *ctx = test_context_with(lists[i]);
    ck_assert_int_eq(strncmp(test_backend_status(ctx, "cpu"), "ok: ", 4), 0);
    env_assert_unchanged(&before, "after hdal_context_create");
    char loaded[512];
    vendor_mappings(loaded, sizeof loaded);
    ck_assert_msg(!loaded[0], "backends %s: loaded %s", lists[i], loaded);
    hdal_context_destroy(ctx);
    env_assert_unchanged(&before, "after hdal_context_destroy");
    free(before.text);
  }
}
END_TEST

/* A user's HWLOC_PLUGINS_BLACKLIST wins: hwloc loads every plugin it lists
 * not (where hwloc's OpenCL plugin is installed, it is loaded), which also
 * shows that the check above sees a plugin loaded. */
START_TEST(users_hwloc_plugin_setting_wins) {
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_PLUGINS_PATH");
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_none", 1);
  env_snapshot before = env_take();
  hdal_context *ctx = test_context_with("cpu");
  env_assert_unchanged(&before, "after hdal_context_create");
  if (access(HDAL_HWLOC_PLUGINS_DIR "/hwloc_opencl.so", R_OK) == 0) {
    char loaded[512];
    vendor_mappings(loaded, sizeof loaded);
    ck_assert_msg(strstr(loaded, "hwloc_opencl.so"), "HWLOC_PLUGINS_BLACKLIST=hwloc_none: loaded '%s'", loaded);
  }
  hdal_context_destroy(ctx);
  ck_assert_pstr_eq(getenv("HWLOC_PLUGINS_BLACKLIST"), "hwloc_none");
  free(before.text);
}
END_TEST

int main(void) {
  Suite *s = suite_create("context");
  TCase *tc = tcase_create("context");
  unsetenv("HDAL_BACKENDS");
  tcase_add_test(tc, create_and_destroy);
  tcase_add_test(tc, synthetic_numa_nodes_are_cpu_devices);
  tcase_add_test(tc, synthetic_memory_per_node);
  tcase_add_test(tc, no_numa_information_gives_one_device);
  tcase_add_test(tc, xml_topology);
  tcase_add_test(tc, unreadable_xml_makes_cpu_unavailable_not_a_failure);
  tcase_add_test(tc, backends_selection);
  tcase_add_test(tc, unknown_backend_refused);
  tcase_add_test(tc, bad_backend_lists_refused);
  tcase_add_test(tc, contexts_created_concurrently);
  tcase_add_test(tc, process_place_from_options);
  tcase_add_test(tc, hwloc_vendor_plugins_not_loaded_environment_unchanged);
  tcase_add_test(tc, users_hwloc_plugin_setting_wins);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
