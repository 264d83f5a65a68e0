/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's discovery (docs/reference.md, "Contexts, backends and devices"), against the fake driver
 * (tests/fakes/cuda/) or, with HDAL_TEST_REAL_CUDA set (tests/gpu/), the real one: the checks of the GPU
 * discovery suite (tests/gpusuite/discovery.c) with CUDA's values, and what only CUDA has (a stub
 * driver, cuGetProcAddress). */
#include "gpusuite/gpusuite.h"
#include "fakes/cuda/testcuda.h"

/* ---- fake driver ---- */

START_TEST(two_devices_enumerated) {
  gpu_use_fake();
  setenv("FAKECUDA_COMPUTE_CAPABILITY", "9.0", 1);
  setenv("FAKECUDA_DRIVER_VERSION", "12040", 1);
  const char *names[] = {"NVIDIA H200", "NVIDIA H100 80GB HBM3"};
  const char *pci[] = {"0000:3b:00.0", "0001:af:1f.0"};
  const gpu_attribute attrs[] = {
      {"uuid", {"GPU-facec0da-0001-4000-8000-000000000000", "GPU-facec0da-0001-4000-8000-000000000001"}},
      {"compute_capability", {"9.0", "9.0"}},
      {"driver_version", {"12.4", "12.4"}},
      {NULL, {NULL, NULL}},
  };
  gpu_assert_two_devices(names, pci, "150754820096", attrs);
}
END_TEST

START_TEST(one_device_enumerated) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "1", 1);
  setenv("FAKECUDA_COMPUTE_CAPABILITY", "8.6", 1);
  setenv("FAKECUDA_DRIVER_VERSION", "11080", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_device *d = hdal_context_device(ctx, 0);
  ck_assert_int_eq(hdal_device_id(d), 0);
  ck_assert_str_eq(hdal_device_kind(d), "Fake GPU 0");
  ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), "0000:10:00.0");
  ck_assert_str_eq(hdal_device_attribute_get(d, "compute_capability"), "8.6");
  ck_assert_str_eq(hdal_device_attribute_get(d, "driver_version"), "11.8");
  hdal_context_destroy(ctx);
}
END_TEST

/* A driver that initialises but has no device: nothing to list, nothing wrong. */
START_TEST(zero_devices_after_successful_init) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "0", 1);
  setenv("FAKECUDA_INIT", "0", 1);
  gpu_assert_status_quietly("cpu,cuda", "ok: 0 devices");
}
END_TEST

/* What a real driver does with no GPU (or CUDA_VISIBLE_DEVICES=""): cuInit says 100. */
START_TEST(no_device_is_unavailable_quietly) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "0", 1);
  gpu_assert_status_quietly("cpu,cuda", "unavailable: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
}
END_TEST

START_TEST(no_driver_is_unavailable_quietly) {
  gpu_use_fake();
  setenv("HDAL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  gpu_assert_status_quietly(
      "cpu,cuda", "unavailable: /nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory");
}
END_TEST

START_TEST(stub_driver_is_unavailable_quietly) {
  gpu_use_fake();
  setenv("FAKECUDA_INIT", "34", 1); /* every call of a stub answers CUDA_ERROR_STUB_LIBRARY */
  char expected[4200];
  snprintf(expected, sizeof expected,
           "unavailable: %s is a stub library, not the CUDA driver (cuInit: CUDA_ERROR_STUB_LIBRARY)", getenv("HDAL_CUDA_LIBRARY"));
  gpu_assert_status_quietly("cpu,cuda", expected);
}
END_TEST

START_TEST(other_init_failure_named_by_the_driver) {
  gpu_use_fake();
  setenv("FAKECUDA_INIT", "999", 1);
  gpu_assert_status_quietly("cpu,cuda", "unavailable: cuInit: CUDA_ERROR_UNKNOWN (999): unknown error");
}
END_TEST

START_TEST(debug_says_why_on_stderr) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "0", 1);
  const char *const lines[] = {"hdal: cuda: unavailable: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)\n",
                               "resolving entry points through cuGetProcAddress", NULL};
  gpu_assert_debug("cuda", lines);
}
END_TEST

/* The versioned names, never the legacy ones, with or without cuGetProcAddress. */
START_TEST(entry_points_through_cuGetProcAddress) {
  gpu_use_fake();
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  ck_assert(test_cuda_open(&cu));
  ck_assert_uint_ge(cu.fakecuda_calls("cuGetProcAddress"), 20);
  ck_assert_uint_eq(cu.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(driver_without_cuGetProcAddress) {
  gpu_fake = "fakecuda_legacy";
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "2", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 2 devices");
  ck_assert_uint_eq(hdal_device_memory_bytes(hdal_context_device(ctx, 1)), UINT64_C(16) << 30);
  ck_assert(test_cuda_open(&cu));
  ck_assert_ptr_null(dlsym(cu.lib, "cuGetProcAddress"));
  ck_assert_uint_eq(cu.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(cuGetProcAddress_failing_falls_back_to_versioned_names) {
  gpu_use_fake();
  setenv("FAKECUDA_GETPROCADDRESS", "fail", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  ck_assert(test_cuda_open(&cu));
  ck_assert_uint_gt(cu.fakecuda_calls("cuGetProcAddress"), 0);
  ck_assert_uint_eq(cu.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* A context that does not ask for CUDA never loads the driver. */
START_TEST(driver_untouched_unless_asked_for) {
  gpu_use_fake();
  gpu_assert_not_loaded_unless_asked(getenv("HDAL_CUDA_LIBRARY"));
  hdal_context *ctx = test_context_with("cuda");
  ck_assert(test_cuda_open(&cu));
  ck_assert_uint_eq(cu.fakecuda_calls("cuInit"), 1);
  /* Discovery retains no context: that costs GPU memory, and waits for the first buffer. */
  ck_assert_uint_eq(cu.fakecuda_calls("cuDevicePrimaryCtxRetain"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- peer access and given UUIDs (hdal_device_link; tests/fakes/fakegpu.c's PEER and UUIDS) ---- */

/* Whether hdal_device_link() says CUDA devices a and b (ordinals) have peer access both ways. */
static bool peer(hdal_context *ctx, int a, int b) { return test_peer_access(gpu_device(ctx, a), gpu_device(ctx, b)); }

/* A context of four fake GPUs with FAKECUDA_PEER `groups` (NULL: unset), the fake's hooks opened. */
static hdal_context *peer_context(const char *groups) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "4", 1);
  if (groups) setenv("FAKECUDA_PEER", groups, 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 4 devices");
  ck_assert(test_cuda_open(&cu));
  return ctx;
}

START_TEST(peer_access_within_groups) {
  hdal_context *ctx = peer_context("0-1,2-3");
  ck_assert(peer(ctx, 0, 1));
  ck_assert(peer(ctx, 1, 0));
  ck_assert(peer(ctx, 2, 3));
  ck_assert(!peer(ctx, 0, 2));
  ck_assert(!peer(ctx, 3, 1));
  /* Both ways asked where the first is granted, one where it is not: 2 + 2 + 2 + 1 + 1. */
  ck_assert_uint_eq(cu.fakecuda_calls("cuDeviceCanAccessPeer"), 8);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(peer_access_every_pair_by_default) {
  hdal_context *ctx = peer_context(NULL);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      if (a != b) ck_assert(peer(ctx, a, b));
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(peer_access_none) {
  hdal_context *ctx = peer_context("none");
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      if (a != b) ck_assert(!peer(ctx, a, b));
  hdal_context_destroy(ctx);
}
END_TEST

/* The driver's query failing: no peer access, the link still given, and HDAL_DEBUG says why. */
START_TEST(peer_query_failing_is_no_peer_access) {
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx = peer_context("fail");
  test_stderr t = test_stderr_begin();
  bool any = peer(ctx, 0, 1) || peer(ctx, 2, 3) || peer(ctx, 3, 0);
  char err[8192];
  test_stderr_end(t, err, sizeof err);
  ck_assert(!any);
  ck_assert_msg(strstr(err, "cuDeviceCanAccessPeer from CUDA device 0 to CUDA device 1: CUDA_ERROR_UNKNOWN (999): "
                            "unknown error"),
                "%s", err);
  ck_assert_uint_eq(cu.fakecuda_calls("cuDeviceCanAccessPeer"), 3);
  hdal_context_destroy(ctx);
}
END_TEST

/* The driver answers for the GPUs, not their ordinals: CUDA_VISIBLE_DEVICES=2,0,3,1 renumbers them. */
START_TEST(peer_access_follows_the_machines_devices) {
  setenv("CUDA_VISIBLE_DEVICES", "2,0,3,1", 1);
  hdal_context *ctx = peer_context("0-2,1-3");
  ck_assert(peer(ctx, 0, 1)); /* machine's 2 and 0 */
  ck_assert(peer(ctx, 2, 3)); /* 3 and 1 */
  ck_assert(!peer(ctx, 0, 2)); /* 2 and 3 */
  ck_assert(!peer(ctx, 1, 3)); /* 0 and 1 */
  hdal_context_destroy(ctx);
}
END_TEST

/* FAKECUDA_UUIDS: the uuid attribute is the one given, and CUDA_VISIBLE_DEVICES finds it by prefix. */
#define GIVEN_UUID0 "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"
#define GIVEN_UUID1 "GPU-5aa5b0c1-0000-4000-8000-00000000beef"
START_TEST(given_uuids_are_the_devices) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "3", 1);
  setenv("FAKECUDA_UUIDS", GIVEN_UUID0 "," GIVEN_UUID1 ",not-a-uuid", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 3 devices");
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 0), "uuid"), GIVEN_UUID0);
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 1), "uuid"), GIVEN_UUID1);
  /* An item that is no UUID leaves the fake's own. */
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 2), "uuid"), "GPU-facec0da-0001-4000-8000-000000000002");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(given_uuid_selected_by_prefix) {
  gpu_use_fake();
  setenv("FAKECUDA_DEVICES", "2", 1);
  setenv("FAKECUDA_UUIDS", GIVEN_UUID0 "," GIVEN_UUID1, 1);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-5aa5B0", 1); /* without case, as NVIDIA's driver */
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 0), "uuid"), GIVEN_UUID1);
  ck_assert_str_eq(hdal_device_attribute_get(gpu_device(ctx, 0), "pci_bus_id"), "0000:11:00.0"); /* machine's 1 */
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- NVLink, as NVML says it (backends/cuda/nvml.c; the fake NVML, tests/fakes/nvml/fakenvml.c) ---- */

#define NVLINK_GPUS "0000:34:00.0,0000:35:00.0,0000:b7:00.0,0000:b8:00.0"

/* Four fake GPUs at NVLINK_GPUS on a synthetic machine (no distance matrices, no PCI objects), NVML the
 * fake's with FAKENVML_LINKS `links` and FAKENVML_SWITCH_LINKS `switch_links` (NULL: unset). */
static hdal_context *nvlink_context(const char *links, const char *switch_links) {
  gpu_use_fake();
  char lib[4200], path[4200];
  snprintf(lib, sizeof lib, "%.4000s/fakenvml.so", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".libs");
  ck_assert_msg(realpath(lib, path), "%s is not built", lib);
  setenv("HDAL_NVML_LIBRARY", path, 1);
  setenv("FAKECUDA_DEVICES", "4", 1);
  setenv("FAKECUDA_PCI_BUS_IDS", NVLINK_GPUS, 1);
  setenv("FAKENVML_GPUS", NVLINK_GPUS, 1);
  if (links) setenv("FAKENVML_LINKS", links, 1);
  if (switch_links) setenv("FAKENVML_SWITCH_LINKS", switch_links, 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 4 devices");
  return ctx;
}

/* hdal_device_link() between CUDA devices a and b (ordinals), asked both ways: the same answer. */
static hdal_link link_of(hdal_context *ctx, int a, int b) {
  hdal_link l, back;
  ck_assert_ok(hdal_device_link(gpu_device(ctx, a), gpu_device(ctx, b), &l));
  ck_assert_ok(hdal_device_link(gpu_device(ctx, b), gpu_device(ctx, a), &back));
  ck_assert_int_eq(l.kind, back.kind);
  ck_assert_uint_eq(l.fabric_links, back.fabric_links);
  ck_assert(!l.fabric == !back.fabric);
  return l;
}

static void assert_nvlink(hdal_context *ctx, int a, int b, unsigned links) {
  hdal_link l = link_of(ctx, a, b);
  ck_assert_int_eq(l.kind, HDAL_LINK_FABRIC);
  ck_assert_pstr_eq(l.fabric, "nvlink");
  ck_assert_uint_eq(l.fabric_links, links);
  ck_assert_uint_eq(l.bandwidth_mbps, 0); /* NVML gives none */
}

static void assert_no_fabric(hdal_context *ctx, int a, int b) {
  hdal_link l = link_of(ctx, a, b);
  ck_assert_int_eq(l.kind, HDAL_LINK_SYS);
  ck_assert_ptr_null(l.fabric);
  ck_assert_uint_eq(l.fabric_links, 0);
}

/* The fake NVML's count of calls of `entry`; 0 while it is not loaded. */
static unsigned nvml_calls(const char *entry) {
  void *h = dlopen(getenv("HDAL_NVML_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  unsigned (*calls)(const char *);
  *(void **)&calls = dlsym(h, "fakenvml_calls");
  unsigned n = calls ? calls(entry) : 0;
  dlclose(h);
  return n;
}

/* Direct links (NVLink bridges, DGX-1): the pair's links; NVML loaded on the first query, once. */
START_TEST(nvlink_direct_links) {
  hdal_context *ctx = nvlink_context("0-1:2,2-3:2", NULL);
  ck_assert_uint_eq(nvml_calls("nvmlInit_v2"), 0); /* discovery leaves NVML alone */
  assert_nvlink(ctx, 0, 1, 2);
  assert_nvlink(ctx, 2, 3, 2);
  assert_no_fabric(ctx, 0, 2);
  assert_no_fabric(ctx, 1, 3);
  ck_assert_uint_eq(nvml_calls("nvmlInit_v2"), 1);
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(nvml_calls("nvmlShutdown"), 1);
}
END_TEST

/* NVSwitches (DGX-2, HGX): one fabric; its links, the fewer of the two GPUs'.  A GPU without links has none. */
START_TEST(nvlink_through_switches) {
  hdal_context *ctx = nvlink_context(NULL, "0:6,1:6,2:4");
  assert_nvlink(ctx, 0, 1, 6);
  assert_nvlink(ctx, 0, 2, 4);
  assert_nvlink(ctx, 1, 2, 4);
  assert_no_fabric(ctx, 0, 3);
  assert_no_fabric(ctx, 3, 2);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(nvlink_every_gpu_on_switches) {
  hdal_context *ctx = nvlink_context(NULL, "0:6,1:6,2:6,3:6");
  for (int a = 0; a < 4; a++)
    for (int b = a + 1; b < 4; b++) assert_nvlink(ctx, a, b, 6);
  hdal_context_destroy(ctx);
}
END_TEST

/* An NVML without nvmlDeviceGetNvLinkRemoteDeviceType's answer: a remote end that is no GPU is a switch. */
START_TEST(nvlink_without_remote_device_type) {
  setenv("FAKENVML_DEVICE_TYPE", "unsupported", 1);
  hdal_context *ctx = nvlink_context("2-3:2", "0:6,1:6");
  assert_nvlink(ctx, 0, 1, 6);
  assert_nvlink(ctx, 2, 3, 2);
  assert_no_fabric(ctx, 0, 2);
  hdal_context_destroy(ctx);
}
END_TEST

/* nvmlInit failing: no fabric, asked once. */
START_TEST(nvml_init_failing_is_no_fabric) {
  setenv("FAKENVML_INIT", "fail", 1);
  hdal_context *ctx = nvlink_context("0-1:2,2-3:2", NULL);
  assert_no_fabric(ctx, 0, 1);
  assert_no_fabric(ctx, 2, 3);
  ck_assert_uint_eq(nvml_calls("nvmlInit_v2"), 1);
  hdal_context_destroy(ctx);
  ck_assert_uint_eq(nvml_calls("nvmlShutdown"), 0);
}
END_TEST

START_TEST(nvml_missing_is_no_fabric) {
  /* Read on the first query, not at discovery. */
  hdal_context *ctx = nvlink_context("0-1:2", NULL);
  setenv("HDAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  assert_no_fabric(ctx, 0, 1);
  hdal_context_destroy(ctx);
  /* Not a regular file: refused before dlopen (docs/hardening.md). */
  ctx = nvlink_context("0-1:2", NULL);
  setenv("HDAL_NVML_LIBRARY", "/", 1);
  assert_no_fabric(ctx, 0, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- a real driver (tests/gpu/) ---- */

START_TEST(real_driver_devices) {
  static const char *const patterns[][2] = {
      {"pci_bus_id", "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.0$"},
      {"uuid", "^GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$"},
      {"compute_capability", "^[1-9][0-9]*\\.[0-9]+$"},
      {"driver_version", "^[1-9][0-9]*\\.[0-9]+$"},
      {NULL, NULL},
  };
  gpu_assert_real_devices(patterns);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("cuda");
  gpu_init(&gpu_face_cuda);
  static const char *const foreign[] = {"cuda", "nvidia", NULL};
  gpu_discovery_add(tc, foreign);
  if (gpu_real) {
    tcase_add_test(tc, real_driver_devices);
  } else {
    unsetenv("HWLOC_XMLFILE");
    /* The fake GPUs' links are the fake NVML's where a test names it, never the machine's NVML. */
    setenv("HDAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    tcase_add_test(tc, two_devices_enumerated);
    tcase_add_test(tc, one_device_enumerated);
    tcase_add_test(tc, zero_devices_after_successful_init);
    tcase_add_test(tc, no_device_is_unavailable_quietly);
    tcase_add_test(tc, no_driver_is_unavailable_quietly);
    tcase_add_test(tc, stub_driver_is_unavailable_quietly);
    tcase_add_test(tc, other_init_failure_named_by_the_driver);
    tcase_add_test(tc, debug_says_why_on_stderr);
    tcase_add_test(tc, entry_points_through_cuGetProcAddress);
    tcase_add_test(tc, driver_without_cuGetProcAddress);
    tcase_add_test(tc, cuGetProcAddress_failing_falls_back_to_versioned_names);
    tcase_add_test(tc, driver_untouched_unless_asked_for);
    tcase_add_test(tc, peer_access_within_groups);
    tcase_add_test(tc, peer_access_every_pair_by_default);
    tcase_add_test(tc, peer_access_none);
    tcase_add_test(tc, peer_query_failing_is_no_peer_access);
    tcase_add_test(tc, peer_access_follows_the_machines_devices);
    tcase_add_test(tc, nvlink_direct_links);
    tcase_add_test(tc, nvlink_through_switches);
    tcase_add_test(tc, nvlink_every_gpu_on_switches);
    tcase_add_test(tc, nvlink_without_remote_device_type);
    tcase_add_test(tc, nvml_init_failing_is_no_fabric);
    tcase_add_test(tc, nvml_missing_is_no_fabric);
    tcase_add_test(tc, given_uuids_are_the_devices);
    tcase_add_test(tc, given_uuid_selected_by_prefix);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
