/* SPDX-License-Identifier: BSD-3-Clause */
/* The ROCm backend's discovery (docs/rocm.md), against the fake HIP runtimes
 * of both ABIs (tests/fakes/hip/) or, with HDAL_TEST_REAL_ROCM set (tests/gpu/),
 * the real one: the checks of the GPU discovery suite
 * (tests/gpusuite/discovery.c) with ROCm's values, and what only ROCm has
 * (two ABIs, /dev/kfd, the runtime's version). */
#include <errno.h>
#include "gpusuite/gpusuite.h"
#include "fakes/hip/testhip.h"

static void use_fake(const char *lib) {
  gpu_fake = lib;
  gpu_use_fake();
}

/* ---- fake runtimes ---- */

/* Both ABIs list the same devices: each is read the way it writes. */
static void two_devices(const char *lib, const char *version) {
  use_fake(lib);
  setenv("FAKEHIP_ARCH", "gfx942:sramecc+:xnack-", 1);
  const char *names[] = {"AMD Instinct MI300X", "AMD Instinct MI210"};
  const char *pci[] = {"0000:c1:00.0", "0001:0a:1f.0"};
  const char *units = !strcmp(lib, "fakehip5") ? "104" : "110";
  const gpu_attribute attrs[] = {
      {"uuid", {"GPU-fa7eb1d0c0de0000", "GPU-fa7eb1d0c0de0001"}},
      {"architecture", {"gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-"}},
      {"driver_version", {version, version}},
      {"runtime_version", {version, version}},
      {"compute_units", {units, units}},
      {NULL, {NULL, NULL}},
  };
  gpu_assert_two_devices(names, pci, "206141652992", attrs);
}

START_TEST(two_devices_rocm6) {
  two_devices("fakehip6", "6.0.32830");
  ck_assert(test_hip_open(&hip));
  ck_assert_uint_eq(hip.fakehip_calls("hipGetDevicePropertiesR0600"), 2);
  ck_assert_uint_eq(hip.fakehip_calls("hipGetDeviceProperties"), 0);
}
END_TEST

START_TEST(two_devices_rocm5) {
  two_devices("fakehip5", "5.2.21153");
  ck_assert(test_hip_open(&hip));
  ck_assert_uint_eq(hip.fakehip_calls("hipGetDeviceProperties"), 2);
  ck_assert_ptr_null(dlsym(hip.lib, "hipGetDevicePropertiesR0600"));
}
END_TEST

/* A runtime whose version names an ABI whose entry point it lacks is refused,
 * not read with the wrong declarations. */
START_TEST(version_without_its_entry_point_unavailable) {
  use_fake("fakehip5");
  setenv("FAKEHIP_RUNTIME_VERSION", "60100000", 1);
  char expected[4300];
  snprintf(expected, sizeof expected,
           "unavailable: %s: the runtime (HIP 6.1) has no entry point hipGetDevicePropertiesR0600", getenv("HDAL_ROCM_LIBRARY"));
  gpu_assert_status_quietly("cpu,rocm", expected);
}
END_TEST

START_TEST(runtime_too_old_unavailable) {
  use_fake("fakehip5");
  setenv("FAKEHIP_RUNTIME_VERSION", "40500000", 1);
  char expected[4300];
  snprintf(expected, sizeof expected, "unavailable: %s: HIP runtime 4.5 is too old (ROCm 5.0 or later is needed)",
           getenv("HDAL_ROCM_LIBRARY"));
  gpu_assert_status_quietly("rocm", expected);
}
END_TEST

/* ROCm 5 without a GPU: hipInit says hipErrorInvalidDevice (the Debian runtime
 * on these machines; tests/rocm/test_rocm_system.sh checks the real one). */
START_TEST(no_device_is_unavailable_quietly) {
  const char *libs[] = {"fakehip5", "fakehip6"};
  for (int i = 0; i < 2; i++) {
    use_fake(libs[i]);
    setenv("FAKEHIP_DEVICES", "0", 1);
    gpu_assert_status_quietly("cpu,rocm", "unavailable: no ROCm device (hipInit: hipErrorInvalidDevice)");
  }
}
END_TEST

START_TEST(no_device_after_init_is_unavailable) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "0", 1);
  setenv("FAKEHIP_INIT", "0", 1);
  gpu_assert_status_quietly("cpu,rocm", "unavailable: no ROCm device (hipGetDeviceCount: hipErrorNoDevice)");
}
END_TEST

/* Without the amdgpu driver's /dev/kfd (here under HDAL_FSROOT) there is no
 * ROCm device: the status says so and the system's runtime is not even opened
 * (docs/rocm.md).  A runtime named by HDAL_ROCM_LIBRARY is opened all the same. */
START_TEST(no_amd_gpu_driver_runtime_not_loaded) {
  char root[] = "/tmp/hdal-fsroot-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  setenv("HDAL_FSROOT", root, 1);
  unsetenv("HDAL_ROCM_LIBRARY");
  gpu_assert_status_quietly("cpu,rocm", "unavailable: no AMD GPU driver (/dev/kfd absent)");
  const char *sonames[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  for (size_t i = 0; i < 3; i++) ck_assert_ptr_null(dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD));
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "1", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 1 device");
  hdal_context_destroy(ctx);
  ck_assert_int_eq(rmdir(root), 0);
}
END_TEST

START_TEST(no_runtime_is_unavailable_quietly) {
  use_fake("fakehip6");
  setenv("HDAL_ROCM_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  gpu_assert_status_quietly(
      "cpu,rocm", "unavailable: /nonexistent/libamdhip64.so: cannot open shared object file: No such file or directory");
}
END_TEST

/* Files that are not the HIP runtime: dlopen's reason, hdal's for what is not a
 * regular file (docs/hardening.md), or the first entry point missing. */
START_TEST(not_a_runtime_is_unavailable) {
  use_fake("fakehip6");
  const char *libs[] = {"/etc/passwd", "/", "libc.so.6"};
  const char *expected[] = {"unavailable: /etc/passwd: invalid ELF header",
                            "unavailable: /: not a regular file",
                            "unavailable: libc.so.6: the runtime has no entry point hipInit"};
  for (int i = 0; i < 3; i++) {
    setenv("HDAL_ROCM_LIBRARY", libs[i], 1);
    gpu_assert_status_quietly("cpu,rocm", expected[i]);
  }
}
END_TEST

START_TEST(other_init_failure_named_by_the_runtime) {
  use_fake("fakehip6");
  setenv("FAKEHIP_INIT", "999", 1);
  gpu_assert_status_quietly("cpu,rocm", "unavailable: hipInit: hipErrorUnknown (999): unknown error");
  use_fake("fakehip5"); /* ROCm 5's strings are the names again */
  gpu_assert_status_quietly("cpu,rocm", "unavailable: hipInit: hipErrorUnknown (999)");
}
END_TEST

START_TEST(debug_says_why_on_stderr) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "0", 1);
  const char *const lines[] = {"hdal: rocm: unavailable: no ROCm device (hipInit: hipErrorInvalidDevice)\n",
                               "HIP runtime 6.0.32830, ROCm 6 ABI (hipGetDevicePropertiesR0600)", NULL};
  gpu_assert_debug("rocm", lines);
}
END_TEST

/* A context that does not ask for ROCm never loads the runtime. */
START_TEST(runtime_untouched_unless_asked_for) {
  use_fake("fakehip6");
  gpu_assert_not_loaded_unless_asked(getenv("HDAL_ROCM_LIBRARY"));
  hdal_context *ctx = test_context_with("rocm");
  ck_assert(test_hip_open(&hip));
  ck_assert_uint_eq(hip.fakehip_calls("hipInit"), 1);
  ck_assert_uint_eq(hip.fakehip_calls("hipMalloc"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* A known backend, in backends/registry's place: other modules follow the known
 * ones by name, whatever their names (docs/reference.md). */
/* ---- peer access and given UUIDs (hdal_device_link; tests/fakes/fakegpu.c's PEER and UUIDS) ---- */

static bool peer(hdal_context *ctx, int a, int b) { return test_peer_access(gpu_device(ctx, a), gpu_device(ctx, b)); }

/* By the machine's GPUs: HIP_VISIBLE_DEVICES=3,1,0,2 renumbers them, groups 0-1 and 2-3 stay. */
START_TEST(peer_access_by_the_machines_groups) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "4", 1);
  setenv("FAKEHIP_PEER", "0-1,2-3", 1);
  setenv("HIP_VISIBLE_DEVICES", "3,1,0,2", 1);
  hdal_context *ctx = test_context_with("rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 4 devices");
  ck_assert(peer(ctx, 0, 3));  /* machine's 3 and 2 */
  ck_assert(peer(ctx, 1, 2));  /* 1 and 0 */
  ck_assert(!peer(ctx, 0, 1)); /* 3 and 1 */
  ck_assert(test_hip_open(&hip));
  ck_assert_uint_eq(hip.fakehip_calls("hipDeviceCanAccessPeer"), 5);
  hdal_context_destroy(ctx);
}
END_TEST

/* The runtime's query failing: no peer access, and HDAL_DEBUG names the call, the devices and the error. */
START_TEST(peer_query_failing_is_no_peer_access) {
  use_fake("fakehip5");
  setenv("FAKEHIP_DEVICES", "2", 1);
  setenv("FAKEHIP_PEER", "fail", 1);
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx = test_context_with("rocm");
  test_stderr t = test_stderr_begin();
  bool any = peer(ctx, 1, 0);
  char err[8192];
  test_stderr_end(t, err, sizeof err);
  ck_assert(!any);
  ck_assert_msg(strstr(err, "hipDeviceCanAccessPeer from ROCm device 1 to ROCm device 0: hipErrorUnknown (999)"), "%s",
                err);
  hdal_context_destroy(ctx);
}
END_TEST

/* `text` into root/path, its directories made. */
static void put(const char *root, const char *path, const char *text) {
  char full[4200];
  snprintf(full, sizeof full, "%s/%s", root, path);
  for (char *p = full + strlen(root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    ck_assert(mkdir(full, 0700) == 0 || errno == EEXIST);
    *p = '/';
  }
  FILE *f = fopen(full, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* The amdgpu kernel driver's XGMI links (its KFD topology, here under HDAL_FSROOT) join GPUs 0 and 1: a
 * fabric, "xgmi", with the link's bandwidth, where hwloc (a synthetic machine here) knows no PCI object;
 * GPU 2 has only PCIe links: nothing nearer than sys.  KFD's location_id is (bus << 8) | (slot << 3) | fn. */
START_TEST(xgmi_links_from_the_kernel_driver) {
  char root[] = "/tmp/hdal-kfd-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  const char *nodes = "sys/class/kfd/kfd/topology/nodes";
  char path[256], text[256];
  put(root, "sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 2\nlocation_id 0\ndomain 0\n");
  for (int n = 1; n <= 3; n++) {
    snprintf(path, sizeof path, "%s/%d/properties", nodes, n);
    snprintf(text, sizeof text, "cpu_cores_count 0\nsimd_count 304\nlocation_id %d\ndomain 0\n", (0xc0 + n) << 8 | 1 << 3);
    put(root, path, text);
    snprintf(path, sizeof path, "%s/%d/io_links/0/properties", nodes, n);
    put(root, path, "type 2\nnode_from 1\nnode_to 0\nmax_bandwidth 32000\n");
  }
  put(root, "sys/class/kfd/kfd/topology/nodes/1/io_links/1/properties",
      "type 11\nversion_major 0\nnode_from 1\nnode_to 2\nweight 15\nmin_bandwidth 312\nmax_bandwidth 64000\n");
  put(root, "sys/class/kfd/kfd/topology/nodes/2/io_links/1/properties",
      "type 11\nnode_from 2\nnode_to 1\nweight 15\nmax_bandwidth 64000\n");
  setenv("HDAL_FSROOT", root, 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 core:2 pu:1", 1);
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "3", 1);
  setenv("FAKEHIP_PCI_BUS_IDS", "0000:c1:01.0,0000:c2:01.0,0000:c3:01.0", 1);
  hdal_context *ctx = test_context_with("rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 3 devices");
  hdal_link l;
  for (int way = 0; way < 2; way++) {
    ck_assert_ok(hdal_device_link(gpu_device(ctx, way), gpu_device(ctx, 1 - way), &l));
    ck_assert_int_eq(l.kind, HDAL_LINK_FABRIC);
    ck_assert_str_eq(l.fabric, "xgmi");
    ck_assert_uint_eq(l.bandwidth_mbps, 64000);
    ck_assert_uint_eq(l.fabric_links, 0);
  }
  ck_assert_ok(hdal_device_link(gpu_device(ctx, 0), gpu_device(ctx, 2), &l));
  ck_assert_int_eq(l.kind, HDAL_LINK_SYS);
  ck_assert_ptr_null(l.fabric);
  hdal_context_destroy(ctx);
  unsetenv("HDAL_FSROOT");
  unsetenv("HWLOC_SYNTHETIC");
  test_remove_tree(root);
}
END_TEST

/* FAKEHIP_UUIDS: the uuid attribute is the one given, and ROCR_VISIBLE_DEVICES finds it. */
START_TEST(given_uuids_are_the_devices) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "2", 1);
  setenv("FAKEHIP_UUIDS", "GPU-4f2a9c31b7d00e15,GPU-6b1e0d77a2c45f90", 1);
  setenv("ROCR_VISIBLE_DEVICES", "GPU-6b1e0d77a2c45f90", 1);
  hdal_context *ctx = test_context_with("rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 1 device");
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 0), "uuid"), "GPU-6b1e0d77a2c45f90");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(listed_in_the_registrys_place) {
  use_fake("fakehip6");
  hdal_context *ctx = test_context_with("cpu,rocm");
  size_t n = hdal_context_backend_count(ctx);
  ck_assert_uint_lt(test_known_index("rocm"), TEST_NKNOWN);
  ck_assert_uint_ge(n, TEST_NKNOWN + 1); /* the suite's path has the test module ifrttest */
  for (size_t i = 0; i < TEST_NKNOWN; i++) ck_assert_str_eq(hdal_context_backend_name(ctx, i), test_known[i]);
  ck_assert_str_eq(hdal_context_backend_name(ctx, TEST_NKNOWN), "ifrttest"); /* before "rocm" by name, after it here */
  for (size_t i = TEST_NKNOWN + 1; i < n; i++)
    ck_assert_int_lt(strcmp(hdal_context_backend_name(ctx, i - 1), hdal_context_backend_name(ctx, i)), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- a real runtime and GPU (tests/gpu/) ---- */

START_TEST(real_runtime_devices) {
  static const char *const patterns[][2] = {
      {"pci_bus_id", "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$"},
      {"uuid", "^GPU-"},
      {"architecture", "^gfx[0-9a-f]+"},
      {"runtime_version", "^[5-9]\\.[0-9]+\\.[0-9]+$"},
      {NULL, NULL},
  };
  gpu_assert_real_devices(patterns);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rocm");
  TCase *tc = tcase_create("rocm");
  gpu_init(&gpu_face_hip);
  static const char *const foreign[] = {"hip", "hsa", "amd", NULL};
  gpu_discovery_add(tc, foreign);
  if (gpu_real) {
    tcase_add_test(tc, real_runtime_devices);
  } else {
    unsetenv("HWLOC_XMLFILE");
    tcase_add_test(tc, two_devices_rocm6);
    tcase_add_test(tc, two_devices_rocm5);
    tcase_add_test(tc, version_without_its_entry_point_unavailable);
    tcase_add_test(tc, runtime_too_old_unavailable);
    tcase_add_test(tc, no_device_is_unavailable_quietly);
    tcase_add_test(tc, no_device_after_init_is_unavailable);
    tcase_add_test(tc, no_amd_gpu_driver_runtime_not_loaded);
    tcase_add_test(tc, no_runtime_is_unavailable_quietly);
    tcase_add_test(tc, not_a_runtime_is_unavailable);
    tcase_add_test(tc, other_init_failure_named_by_the_runtime);
    tcase_add_test(tc, debug_says_why_on_stderr);
    tcase_add_test(tc, runtime_untouched_unless_asked_for);
    tcase_add_test(tc, listed_in_the_registrys_place);
    tcase_add_test(tc, peer_access_by_the_machines_groups);
    tcase_add_test(tc, peer_query_failing_is_no_peer_access);
    tcase_add_test(tc, xgmi_links_from_the_kernel_driver);
    tcase_add_test(tc, given_uuids_are_the_devices);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
