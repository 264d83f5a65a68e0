/* SPDX-License-Identifier: BSD-3-Clause */
/* The Level Zero backend's discovery (docs/levelzero.md), through the
 * system's real loader (Debian's libze1) and the fake driver of
 * tests/fakes/ze/, which the loader loads through ZE_ENABLE_ALT_DRIVERS: the
 * checks of the GPU discovery suite (tests/gpusuite/discovery.c) with Level
 * Zero's values, and what only Level Zero has (drivers, sub-devices, device
 * nodes).  Skipped (77) where the loader is not installed. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gpusuite/gpusuite.h"
#include "fakes/ze/testze.h"

static hdal_device *ze_device(hdal_context *ctx, int i) { return test_platform_device(ctx, "levelzero", i); }

/* Two GPUs under the two NUMA nodes of an XML topology, found by PCI bus id. */
START_TEST(two_devices_on_two_numa_nodes) {
  gpu_use_fake();
  char xml[4200];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir"));
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  setenv("FAKEZE_DEVICES", "3", 1);
  setenv("FAKEZE_NAMES", "Intel(R) Data Center GPU Max 1550,Intel(R) Arc(TM) A770 Graphics,Intel(R) UHD Graphics", 1);
  setenv("FAKEZE_PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0001:5e:1f.0", 1);
  setenv("FAKEZE_MEMORY", "68719476736", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,levelzero", &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"), "ok: 3 devices");
  const char *names[] = {"Intel(R) Data Center GPU Max 1550", "Intel(R) Arc(TM) A770 Graphics", "Intel(R) UHD Graphics"};
  const char *pci[] = {"0000:af:00.0", "0000:3b:00.0", "0001:5e:1f.0"};
  const char *uuid[] = {"8680d50b-0000-0000-0000-000000000000", "8680d50b-0000-0000-0000-000000000001",
                        "8680d50b-0000-0000-0000-000000000002"};
  const int numa[] = {1, 0, -1}; /* the third is not in the topology */
  for (int i = 0; i < 3; i++) {
    hdal_device *d = ze_device(ctx, i);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(hdal_device_platform(d), "levelzero");
    ck_assert_str_eq(hdal_device_kind(d), names[i]);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLOneAPI);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(68719476736));
    ck_assert_int_eq(hdal_device_numa_node(d), numa[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "name"), names[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "uuid"), uuid[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), pci[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "vendor_id"), "0x8086");
    ck_assert_str_eq(hdal_device_attribute_get(d, "device_id"), "0x0bd5");
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_version"), "16842752");
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "68719476736");
    ck_assert_str_eq(hdal_device_attribute_get(d, "compute_units"), "256"); /* 2 slices x 16 subslices x 8 EUs */
    ck_assert_str_eq(hdal_device_attribute_get(d, "sub_devices"), "0");
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* The machine's own drivers (tests/gpu/, HDAL_TEST_REAL_LEVELZERO): every
 * device they and the probe count, with a name, a UUID and memory, printed. */
START_TEST(real_devices_listed) {
  static const char *const patterns[][2] = {{"uuid", "^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$"}, {NULL, NULL}};
  gpu_assert_real_devices(patterns);
}
END_TEST

/* Two drivers: the same library listed twice turns on the loader's handle
 * translation (its intercept mode), which hdal must not notice: one device per
 * driver, in driver order, both serving copies. */
START_TEST(two_drivers_through_the_loaders_handle_translation) {
  gpu_use_fake();
  char two[8500];
  const char *one = getenv("ZE_ENABLE_ALT_DRIVERS");
  snprintf(two, sizeof two, "%s,%s", one, one);
  setenv("ZE_ENABLE_ALT_DRIVERS", two, 1);
  setenv("FAKEZE_DEVICES", "1", 1);
  hdal_context *ctx = test_context_with("cpu,levelzero");
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"), "ok: 2 devices");
  hdal_device *cpu = test_platform_device(ctx, "cpu", 0);
  for (int i = 0; i < 2; i++) {
    hdal_device *d = ze_device(ctx, i);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    float in[4] = {1, 2, 3, (float)i}, out[4] = {0};
    hdal_capsule *c = test_wrap((DLDevice){kDLCPU, 0}, in, 4, 0, NULL);
    hdal_buffer *g = test_import(ctx, c, d, HDAL_COPY_IF_NEEDED), *h;
    ck_assert(!hdal_buffer_is_view(g));
    ck_assert_ok(hdal_buffer_copy_to_device(g, cpu, &h));
    ck_assert_ok(hdal_buffer_copy_to_host(h, out, sizeof out));
    ck_assert_mem_eq(out, in, sizeof in);
    hdal_buffer_release(h);
    hdal_buffer_release(g);
    hdal_capsule_destroy(c);
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* Sub-devices (tiles) are attributes of their root device, whose memory is theirs summed. */
START_TEST(sub_devices_are_attributes) {
  gpu_use_fake();
  setenv("FAKEZE_DEVICES", "2", 1);
  setenv("FAKEZE_SUBDEVICES", "2", 1);
  setenv("FAKEZE_MEMORY", "137438953472", 1);
  hdal_context *ctx = test_context_with("cpu,levelzero");
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"), "ok: 2 devices");
  ck_assert_uint_eq(test_platform_device_count(ctx, "levelzero"), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_str_eq(hdal_device_attribute_get(ze_device(ctx, i), "sub_devices"), "2");
    ck_assert_uint_eq(hdal_device_memory_bytes(ze_device(ctx, i)), UINT64_C(137438953472));
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* The real loader without a driver: "no driver", quietly and quickly. */
START_TEST(loader_without_a_driver) {
  gpu_use_fake();
  unsetenv("ZE_ENABLE_ALT_DRIVERS"); /* never set empty: the loader crashes on an empty entry */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  gpu_assert_status_quietly("cpu,levelzero", "unavailable: no Level Zero driver (zeInit: ZE_RESULT_ERROR_UNINITIALIZED)");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  ck_assert_msg(s < 2.0, "context creation took %.3f s", s);
}
END_TEST

/* The status hdal gives when the loader's zeInit, asked again in the same
 * process (it initialises once), answers r: where zeInit succeeds, `ok`. */
static const char *ze_status_for(ze_result_t r, const char *ok, char *buf, size_t size) {
  static const struct {
    ze_result_t r;
    const char *name;
  } names[] = {{ZE_RESULT_ERROR_UNINITIALIZED, "ZE_RESULT_ERROR_UNINITIALIZED"},
               {ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "ZE_RESULT_ERROR_INVALID_NULL_HANDLE"},
               {ZE_RESULT_ERROR_INVALID_NULL_POINTER, "ZE_RESULT_ERROR_INVALID_NULL_POINTER"},
               {ZE_RESULT_ERROR_INVALID_SIZE, "ZE_RESULT_ERROR_INVALID_SIZE"},
               {ZE_RESULT_ERROR_UNKNOWN, "ZE_RESULT_ERROR_UNKNOWN"}};
  if (r == ZE_RESULT_SUCCESS) return ok;
  if (r == ZE_RESULT_ERROR_UNINITIALIZED) return "unavailable: no Level Zero driver (zeInit: ZE_RESULT_ERROR_UNINITIALIZED)";
  const char *name = "(a result this test does not name)";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].r == r) name = names[i].name;
  snprintf(buf, size, "unavailable: zeInit: %s (0x%x)", name, (unsigned)r);
  return buf;
}

START_TEST(driver_statuses) {
  gpu_use_fake();
  static const struct {
    const char *devices, *init, *count, *status;
    bool loader; /* the loader decides: `status` where its zeInit succeeds, its error otherwise */
  } cases[] = {
      /* Intel's driver without a GPU fails its own zeInit: the loader then has no driver. */
      {"0", NULL, NULL, "unavailable: no Level Zero driver (zeInit: ZE_RESULT_ERROR_UNINITIALIZED)", false},
      /* A driver with no device, or with absurdly many: the loader 1.8 (Debian 12)
       * keeps it and hdal finds it out; 1.20 (Debian 13) asks for the devices in
       * its own zeInit, then drops the driver (UNINITIALIZED) or fails. */
      {"0", "0", NULL, "unavailable: no Level Zero device (1 driver, no device)", true},
      {"1", "2147483646", NULL, "unavailable: zeInit: ZE_RESULT_ERROR_UNKNOWN (0x7ffffffe)", false},
      {"1", NULL, "100000", "unavailable: zeDeviceGet (driver 0): 100000 root devices, more than 1024: a broken driver", true},
      {"1", NULL, NULL, "ok: 1 device", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pid_t pid = fork(); /* the loader initialises once per process */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      setenv("FAKEZE_DEVICES", cases[i].devices, 1);
      if (cases[i].init) setenv("FAKEZE_INIT", cases[i].init, 1);
      if (cases[i].count) setenv("FAKEZE_DEVICE_COUNT", cases[i].count, 1);
      hdal_context *ctx;
      const char *err = test_stderr_of_create("cpu,levelzero", &ctx);
      const char *st = test_backend_status(ctx, "levelzero"), *want = cases[i].status;
      char buf[160];
      if (cases[i].loader) {
        test_ze z;
        want = test_ze_open(&z) ? ze_status_for(z.zeInit(ZE_INIT_FLAG_GPU_ONLY), want, buf, sizeof buf)
                                : "(the loader did not open)";
      }
      bool ok = !strcmp(st, want) && !*err && ctx;
      if (!ok) fprintf(stderr, "case %zu: '%s', expected '%s', stderr '%s'\n", i, st, want, err);
      hdal_context_destroy(ctx);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %zu: %s%s", i, cases[i].status,
                  cases[i].loader ? ", or the loader's zeInit error" : "");
  }
}
END_TEST

START_TEST(no_loader_is_unavailable_quietly) {
  setenv("HDAL_LEVELZERO_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
  gpu_assert_status_quietly(
      "cpu,levelzero",
      "unavailable: /nonexistent/libze_loader.so.1: cannot open shared object file: No such file or directory");
}
END_TEST

/* Files that are not the loader: dlopen's reason, hdal's for what is not a
 * regular file (a FIFO would block dlopen for ever), or an entry point missing. */
START_TEST(garbage_library_files_refused) {
  char dir[] = "/tmp/hdal-ze-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char empty[4200], text[4200], fifo[4200];
  snprintf(empty, sizeof empty, "%s/empty.so", dir);
  snprintf(text, sizeof text, "%s/text.so", dir);
  snprintf(fifo, sizeof fifo, "%s/fifo.so", dir);
  FILE *f = fopen(empty, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  f = fopen(text, "w");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 64; i++) fputs("not a library, a text longer than an ELF header\n", f);
  fclose(f);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  char want[4][4300];
  snprintf(want[0], sizeof want[0], "unavailable: %s: file too short", empty);
  snprintf(want[1], sizeof want[1], "unavailable: %s: invalid ELF header", text);
  snprintf(want[2], sizeof want[2], "unavailable: %s: not a regular file", fifo);
  snprintf(want[3], sizeof want[3], "unavailable: %s: not a regular file", dir);
  const char *libs[] = {empty, text, fifo, dir, "libc.so.6"};
  for (int i = 0; i < 5; i++) {
    setenv("HDAL_LEVELZERO_LIBRARY", libs[i], 1);
    gpu_assert_status_quietly("cpu,levelzero", i < 4 ? want[i] : "unavailable: libc.so.6: the loader has no entry point zeInit");
  }
  unlink(empty);
  unlink(text);
  unlink(fifo);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(debug_says_why_on_stderr) {
  gpu_use_fake();
  setenv("FAKEZE_DEVICES", "1", 1);
  const char *const lines[] = {"hdal: levelzero: libze_loader.so.1: 1 driver(s), 1 root device(s)\n",
                               "hdal: levelzero: device 0: Fake Intel GPU 0, 0000:3a:00.0, 17179869184 bytes, 0 sub-devices",
                               NULL};
  gpu_assert_debug("levelzero", lines);
}
END_TEST

/* A context that does not ask for Level Zero never loads the loader. */
START_TEST(loader_untouched_unless_asked_for) {
  gpu_use_fake();
  /* hdal's OpenCL backend runs, with no ICD: an OpenCL driver may itself open
   * the Level Zero loader (PoCL's level0 driver, where a PoCL build has one),
   * which is not hdal's backend opening it. */
  char empty[4096];
  snprintf(empty, sizeof empty, "%s/empty", getenv("HDAL_TEST_ICD") ? getenv("HDAL_TEST_ICD") : "/nonexistent");
  setenv("OCL_ICD_VENDORS", empty, 1);
  gpu_assert_not_loaded_unless_asked(TEST_ZE_LOADER);
  hdal_context *ctx = test_context_with("levelzero");
  ck_assert_ptr_nonnull(dlopen(TEST_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD));
  test_ze z;
  ck_assert(test_ze_open(&z));
  test_ze_hooks(&z);
  ck_assert_ptr_nonnull(z.fakeze_calls);
  ck_assert_uint_eq(z.fakeze_calls("zeMemAllocDevice"), 0);
  ck_assert_uint_eq(z.fakeze_calls("zeCommandListCreateImmediate"), 0); /* made at the first buffer operation */
  hdal_context_destroy(ctx);
  ck_assert_int_eq(z.fakeze_live("context"), 0);
}
END_TEST

/* By default, without a GPU or NPU node and with no driver chosen, the loader
 * is not even opened; a render node, the backend's name or a chosen driver starts it. */
START_TEST(loader_not_started_without_a_device_node) {
  gpu_use_fake();
  unsetenv("ZE_ENABLE_ALT_DRIVERS");
  char root[] = "/tmp/hdal-ze-XXXXXX", path[64];
  ck_assert_ptr_nonnull(mkdtemp(root));
  setenv("HDAL_FSROOT", root, 1);
  hdal_context *ctx = test_context_with("-cuda,-opencl,-rocm,-vulkan"); /* levelzero not named */
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"),
                   "unavailable: no Level Zero device node (/dev/dri/renderD*, /dev/accel/accel*, /dev/dxg)");
  ck_assert_ptr_null(dlopen(TEST_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  /* An NPU's node: the loader is asked (and finds no driver here). */
  snprintf(path, sizeof path, "%s/dev", root);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/dev/accel", root);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/dev/accel/accel0", root);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ctx = test_context_with("-cuda,-opencl,-rocm,-vulkan");
  ck_assert_ptr_nonnull(dlopen(TEST_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD));
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"),
                   "unavailable: no Level Zero driver (zeInit: ZE_RESULT_ERROR_UNINITIALIZED)");
  hdal_context_destroy(ctx);
  unlink(path);
  snprintf(path, sizeof path, "%s/dev/accel", root);
  rmdir(path);
  snprintf(path, sizeof path, "%s/dev", root);
  rmdir(path);
  rmdir(root);
}
END_TEST

/* No device node, Level Zero not named: a loader named by HDAL_LEVELZERO_LIBRARY
 * is still opened (its failure is the status), and so is the default one when
 * the user chose the loader's null driver. */
START_TEST(loader_started_without_a_node_when_chosen) {
  gpu_use_fake();
  unsetenv("ZE_ENABLE_ALT_DRIVERS");
  char root[] = "/tmp/hdal-ze-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  setenv("HDAL_FSROOT", root, 1);
  setenv("HDAL_LEVELZERO_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
  hdal_context *ctx = test_context_with("-cuda,-opencl,-rocm,-vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"),
                   "unavailable: /nonexistent/libze_loader.so.1: cannot open shared object file: No such file or directory");
  hdal_context_destroy(ctx);
  unsetenv("HDAL_LEVELZERO_LIBRARY");
  setenv("ZE_ENABLE_NULL_DRIVER", "1", 1);
  ctx = test_context_with("-cuda,-opencl,-rocm,-vulkan");
  ck_assert_ptr_nonnull(dlopen(TEST_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  unsetenv("ZE_ENABLE_NULL_DRIVER");
  rmdir(root);
}
END_TEST

/* A known backend, in backends/registry's place: other modules follow it by name. */
/* ---- peer access and given UUIDs (hdal_device_link; tests/fakes/fakegpu.c's PEER and UUIDS) ---- */

static bool peer(hdal_context *ctx, int a, int b) { return test_peer_access(ze_device(ctx, a), ze_device(ctx, b)); }

/* The fake's count of `entry`: the fake at `path`, which hdal's context had the loader load. */
static unsigned fake_calls(const char *path, const char *entry) {
  void *fake = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(fake);
  unsigned (*calls)(const char *);
  *(void **)&calls = dlsym(fake, "fakeze_calls");
  ck_assert_ptr_nonnull(calls);
  unsigned n = calls(entry);
  dlclose(fake);
  return n;
}

/* By the machine's GPUs: ZE_AFFINITY_MASK=0,1,3 leaves machine devices 0, 1 and 3 as 0, 1 and 2. */
START_TEST(peer_access_by_the_machines_groups) {
  gpu_use_fake();
  setenv("FAKEZE_DEVICES", "4", 1);
  setenv("FAKEZE_PEER", "0-3,1-2", 1);
  setenv("ZE_AFFINITY_MASK", "0,1,3", 1);
  hdal_context *ctx = test_context_with("levelzero");
  ck_assert_str_eq(test_backend_status(ctx, "levelzero"), "ok: 3 devices");
  ck_assert(peer(ctx, 0, 2));
  ck_assert(peer(ctx, 2, 0));
  ck_assert(!peer(ctx, 0, 1));
  ck_assert(!peer(ctx, 1, 2));
  ck_assert_uint_eq(fake_calls(getenv("ZE_ENABLE_ALT_DRIVERS"), "zeDeviceCanAccessPeer"), 6);
  hdal_context_destroy(ctx);
}
END_TEST

/* The driver's query failing: no peer access, and HDAL_DEBUG names the call, the devices and the result. */
START_TEST(peer_query_failing_is_no_peer_access) {
  gpu_use_fake();
  setenv("FAKEZE_DEVICES", "2", 1);
  setenv("FAKEZE_PEER", "fail", 1);
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx = test_context_with("levelzero");
  test_stderr t = test_stderr_begin();
  bool any = peer(ctx, 0, 1);
  char err[8192];
  test_stderr_end(t, err, sizeof err);
  ck_assert(!any);
  ck_assert_msg(strstr(err, "zeDeviceCanAccessPeer from Level Zero device 0 to Level Zero device 1: "
                            "ZE_RESULT_ERROR_UNKNOWN (0x7ffffffe)"),
                "%s", err);
  hdal_context_destroy(ctx);
}
END_TEST

/* FAKEZE_UUIDS: the uuid attribute is the one given (Intel's spelling, lower case). */
START_TEST(given_uuids_are_the_devices) {
  gpu_use_fake();
  setenv("FAKEZE_DEVICES", "2", 1);
  setenv("FAKEZE_UUIDS", "0123ABCD-0000-4000-8000-00000000beef,", 1);
  hdal_context *ctx = test_context_with("levelzero");
  ck_assert_str_eq(hdal_device_attribute_get(ze_device(ctx, 0), "uuid"), "0123abcd-0000-4000-8000-00000000beef");
  ck_assert_str_eq(hdal_device_attribute_get(ze_device(ctx, 1), "uuid"), "8680d50b-0000-0000-0000-000000000001");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(listed_in_the_registrys_place) {
  gpu_use_fake();
  hdal_context *ctx = test_context_with("cpu,levelzero");
  size_t at = test_known_index("levelzero");
  ck_assert_uint_lt(at, TEST_NKNOWN);
  ck_assert_uint_ge(hdal_context_backend_count(ctx), TEST_NKNOWN + 1); /* the suite's path has ifrttest */
  ck_assert_str_eq(hdal_context_backend_name(ctx, at), "levelzero");
  ck_assert_str_eq(hdal_context_backend_name(ctx, TEST_NKNOWN), "ifrttest");
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  if (!test_library_loads(TEST_ZE_LOADER)) {
    printf("SKIP: no Level Zero loader (%s; Debian's libze1)\n", TEST_ZE_LOADER);
    return 77;
  }
  Suite *s = suite_create("levelzero");
  TCase *tc = tcase_create("levelzero");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HDAL_LEVELZERO_LIBRARY");
  gpu_init(&gpu_face_ze);
  static const char *const foreign[] = {"ze_", "level", NULL};
  gpu_discovery_add(tc, foreign);
  if (gpu_real) {
    tcase_add_test(tc, real_devices_listed);
  } else {
    tcase_add_test(tc, two_devices_on_two_numa_nodes);
    tcase_add_test(tc, sub_devices_are_attributes);
    tcase_add_test(tc, two_drivers_through_the_loaders_handle_translation);
    tcase_add_test(tc, loader_without_a_driver);
    tcase_add_test(tc, driver_statuses);
    tcase_add_test(tc, no_loader_is_unavailable_quietly);
    tcase_add_test(tc, garbage_library_files_refused);
    tcase_add_test(tc, debug_says_why_on_stderr);
    tcase_add_test(tc, loader_untouched_unless_asked_for);
    tcase_add_test(tc, loader_not_started_without_a_device_node);
    tcase_add_test(tc, loader_started_without_a_node_when_chosen);
    tcase_add_test(tc, listed_in_the_registrys_place);
    tcase_add_test(tc, peer_access_by_the_machines_groups);
    tcase_add_test(tc, peer_query_failing_is_no_peer_access);
    tcase_add_test(tc, given_uuids_are_the_devices);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
