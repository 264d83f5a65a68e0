/* SPDX-License-Identifier: BSD-3-Clause */
/* OpenCL backend on real PoCL: enumeration, attributes, classification and
 * statuses (docs/reference.md).  Expected values come from OpenCL
 * itself, queried in the same process. */
#include <inttypes.h>
#include <stdint.h>
#include "test_opencl.h"

static const char *attr(const hdal_device *d, const char *key) {
  const char *v = hdal_device_attribute_get(d, key);
  ck_assert_msg(v != NULL, "device %d has no attribute %s", hdal_device_id(d), key);
  return v;
}

static void assert_attr_u64(const hdal_device *d, const char *key, uint64_t expected) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64, expected);
  ck_assert_str_eq(attr(d, key), buf);
}

START_TEST(pocl_devices_listed_with_attributes) {
  hdal_context *ctx = test_context_with("opencl");
  size_t n = pocl_device_count();
  char status[32];
  snprintf(status, sizeof status, "ok: %zu devices", n);
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), status);
  ck_assert_uint_eq(hdal_context_device_count(ctx), n);

  cl_device_id ids[16];
  ck_assert_uint_eq(cl_all_devices(ids, 16), n);
  cl_platform_id platform;
  ck_assert_cl(clGetDeviceInfo(ids[0], CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL));
  char pname[256];
  ck_assert_cl(clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL));
  int major = pocl_major_version(platform);
  char cpu[256] = "";
  for (size_t i = 0; i < n; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    char driver[64], want[512];
    /* PoCL names its devices "<driver's device name>-<LLVM CPU>-<CPU model>",
     * in POCL_DEVICES order, the same CPU for all. */
    const char *name = pocl_device_name(pocl_driver(i, driver, sizeof driver), major);
    const char *kind = hdal_device_kind(d);
    size_t len = strlen(name);
    const char *dash = !strncmp(kind, name, len) && kind[len] == '-' ? strchr(kind + len + 1, '-') : NULL;
    ck_assert_msg(dash && dash > kind + len + 1 && dash[1],
                  "device %zu (driver %s, PoCL %d): %s is not %s-<LLVM CPU>-<CPU model>", i, driver, major, kind, name);
    if (i == 0) snprintf(cpu, sizeof cpu, "%s", kind + len + 1);
    snprintf(want, sizeof want, "%s-%s", name, cpu);
    ck_assert_str_eq(kind, want);
    ck_assert_str_eq(kind, cl_device_str(ids[i], CL_DEVICE_NAME));
    ck_assert_str_eq(hdal_device_platform(d), "opencl");
    ck_assert_uint_eq(hdal_device_runtime_vendor(d), 0); /* OpenCL: devices of any vendor */
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), (int)i);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLOpenCL);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, (int)i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_uint_eq(hdal_device_memory_bytes(d), cl_device_ulong(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE));
    ck_assert_int_eq(hdal_device_numa_node(d), -1); /* a CPU device has no PCI bus id to place it */
    ck_assert_ptr_null(hdal_device_attribute_get(d, "pci_bus_id"));

    ck_assert_str_eq(attr(d, "opencl_platform"), pname);
    ck_assert_str_eq(attr(d, "opencl_platform_vendor"), "The pocl project");
    ck_assert_msg(!strncmp(attr(d, "opencl_platform_version"), "OpenCL ", 7), "%s", attr(d, "opencl_platform_version"));
    assert_attr_u64(d, "opencl_platform_index", 0);
    assert_attr_u64(d, "opencl_device_index", i);
    ck_assert_str_eq(attr(d, "device_type"), "cpu");
    ck_assert_str_eq(attr(d, "opencl_version"), cl_device_str(ids[i], CL_DEVICE_VERSION));
    ck_assert_str_eq(attr(d, "opencl_c_version"), cl_device_str(ids[i], CL_DEVICE_OPENCL_C_VERSION));
    ck_assert_str_eq(attr(d, "driver_version"), cl_device_str(ids[i], CL_DRIVER_VERSION));
    ck_assert_str_eq(attr(d, "vendor"), cl_device_str(ids[i], CL_DEVICE_VENDOR));
    char vendor_id[16];
    snprintf(vendor_id, sizeof vendor_id, "0x%04x", (unsigned)cl_device_uint(ids[i], CL_DEVICE_VENDOR_ID));
    ck_assert_str_eq(attr(d, "vendor_id"), vendor_id);
    ck_assert_str_eq(attr(d, "available"), "yes");
    assert_attr_u64(d, "compute_units", cl_device_uint(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS));
    assert_attr_u64(d, "global_memory_bytes", cl_device_ulong(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE));
    assert_attr_u64(d, "max_alloc_bytes", cl_device_ulong(ids[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    assert_attr_u64(d, "base_address_alignment", cl_device_uint(ids[i], CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
    cl_bool unified;
    ck_assert_cl(clGetDeviceInfo(ids[i], CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL));
    ck_assert_str_eq(attr(d, "host_unified_memory"), unified ? "yes" : "no");
    cl_device_svm_capabilities svm = cl_device_ulong(ids[i], CL_DEVICE_SVM_CAPABILITIES);
    const char *svm_attr = attr(d, "svm_capabilities");
    ck_assert_int_eq(strstr(svm_attr, "coarse_grain_buffer") != NULL, (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0);
    ck_assert_int_eq(strstr(svm_attr, "fine_grain_buffer") != NULL, (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0);
    ck_assert_int_eq(strstr(svm_attr, "fine_grain_system") != NULL, (svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0);
    ck_assert_int_eq(strstr(svm_attr, "atomics") != NULL, (svm & CL_DEVICE_SVM_ATOMICS) != 0);
    if (!svm) ck_assert_str_eq(svm_attr, "none");
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(opencl_devices_follow_cpu_devices) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:1 pu:1", 1);
  hdal_context *ctx = test_context_with("opencl,cpu");
  size_t n = pocl_device_count();
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2 + n);
  for (size_t i = 0; i < 2 + n; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_str_eq(hdal_device_platform(d), i < 2 ? "cpu" : "opencl");
    ck_assert_int_eq(hdal_device_local_hardware_id(d), (int)(i < 2 ? i : i - 2));
    if (i >= 2) ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, (int)(i - 2));
  }
  hdal_context_destroy(ctx);
}
END_TEST

static void use_vendors(const char *sub) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", getenv("HDAL_TEST_ICD"), sub);
  setenv("OCL_ICD_VENDORS", dir, 1);
}

START_TEST(empty_vendor_directory_is_zero_devices) {
  use_vendors("empty");
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  hdal_context *ctx = test_context_with("cpu,opencl");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "ok: 0 devices");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(platform_without_devices_is_zero_devices) {
  setenv("POCL_DEVICES", "nosuchdriver", 1); /* PoCL lists its platform, with no device */
  hdal_context *ctx = test_context_with("opencl");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "ok: 0 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(broken_icd_next_to_pocl_is_harmless) {
  char dir[] = "/tmp/hdal-icd-XXXXXX", path[4200], cmd[8600];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/broken.icd", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("libhdal-no-such-opencl-vendor.so\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cp '%s/pocl.icd' '%s/'", getenv("OCL_ICD_VENDORS"), dir);
  ck_assert_int_eq(system(cmd), 0);
  setenv("OCL_ICD_VENDORS", dir, 1);
  hdal_context *ctx = test_context_with("opencl");
  char status[32];
  snprintf(status, sizeof status, "ok: %zu devices", pocl_device_count());
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), status);
  hdal_context_destroy(ctx);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(only_a_broken_icd_is_zero_devices) {
  char dir[] = "/tmp/hdal-icd-XXXXXX", path[4200], cmd[4300];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/broken.icd", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("/nonexistent/libOpenCL-vendor.so\n", f);
  fclose(f);
  setenv("OCL_ICD_VENDORS", dir, 1);
  hdal_context *ctx = test_context_with("opencl");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "ok: 0 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  hdal_context_destroy(ctx);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Two NUMA nodes with a PCI device under each: 0000:3b:00.0 on node 0, 0000:af:00.0 on node 1. */
static const char pci_topology[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" allowed_cpuset=\"0x3\" "
    "nodeset=\"0x3\" complete_nodeset=\"0x3\" allowed_nodeset=\"0x3\" gp_index=\"1\">\n"
    " <object type=\"Package\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
    "complete_nodeset=\"0x1\" gp_index=\"2\">\n"
    "  <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
    "complete_nodeset=\"0x1\" gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "  <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
    "complete_nodeset=\"0x1\" gp_index=\"4\"/>\n"
    "  <object type=\"Bridge\" gp_index=\"5\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[3a-3b]\">\n"
    "   <object type=\"PCIDev\" gp_index=\"6\" pci_busid=\"0000:3b:00.0\" pci_type=\"0302 [10de:2335] [10de:18be] a1\"/>\n"
    "  </object>\n"
    " </object>\n"
    " <object type=\"Package\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\" nodeset=\"0x2\" "
    "complete_nodeset=\"0x2\" gp_index=\"7\">\n"
    "  <object type=\"NUMANode\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\" nodeset=\"0x2\" "
    "complete_nodeset=\"0x2\" gp_index=\"8\" local_memory=\"1073741824\"/>\n"
    "  <object type=\"PU\" os_index=\"1\" cpuset=\"0x2\" complete_cpuset=\"0x2\" nodeset=\"0x2\" "
    "complete_nodeset=\"0x2\" gp_index=\"9\"/>\n"
    "  <object type=\"Bridge\" gp_index=\"10\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[ae-af]\">\n"
    "   <object type=\"PCIDev\" gp_index=\"11\" pci_busid=\"0000:af:00.0\" pci_type=\"0302 [10de:2335] [10de:18be] a1\"/>\n"
    "  </object>\n"
    " </object>\n"
    "</object>\n"
    "</topology>\n";

/* The fake vendor (tests/fakes/cl/fakecl.c): devices PoCL cannot give. */
START_TEST(fake_vendor_devices_classified_with_reasons) {
  use_vendors("fake");
  char xml[] = "/tmp/hdal-pci-XXXXXX";
  int fd = mkstemp(xml);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, pci_topology, sizeof pci_topology - 1), (ssize_t)(sizeof pci_topology - 1));
  close(fd);
  setenv("HWLOC_XMLFILE", xml, 1);
  hdal_context *ctx = test_context_with("opencl");
  unlink(xml);
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "ok: 4 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  static const struct {
    const char *kind, *type, *pci, *reason;
    int numa;
    const char *vendor_id;
  } want[4] = {
      {"Fake GPU (unavailable)", "gpu", "0000:3b:00.0", "OpenCL device not available (CL_DEVICE_AVAILABLE is false)", 0,
       "0x10de"},
      {"Fake custom device", "custom", NULL,
       "custom OpenCL device type (CL_DEVICE_TYPE 0x10): hdal serves no buffers on it", -1, "0x1d0f"},
      /* Listed as PjRt: contexts are made on first use (see test_opencl_dlpack). */
      {"Fake GPU (no context)", "gpu", "0000:af:00.0", NULL, 1, "0x10de"},
      {"Fake accelerator", "accelerator", "0000:17:00.0", NULL, -1, "0x1002"}, /* a bus the topology lacks */
  };
  for (int i = 0; i < 4; i++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)i);
    ck_assert_str_eq(hdal_device_kind(d), want[i].kind);
    ck_assert_str_eq(attr(d, "device_type"), want[i].type);
    ck_assert_str_eq(attr(d, "vendor_id"), want[i].vendor_id); /* CL_DEVICE_VENDOR_ID */
    ck_assert_str_eq(attr(d, "opencl_platform"), "hdal fake platform");
    ck_assert_str_eq(attr(d, "opencl_platform_version"), "OpenCL 1.2 hdal-fake");
    ck_assert_str_eq(attr(d, "available"), i == 0 ? "no" : "yes");
    ck_assert_str_eq(attr(d, "svm_capabilities"), "none"); /* OpenCL 1.2: no SVM query */
    ck_assert_str_eq(attr(d, "host_unified_memory"), "no");
    assert_attr_u64(d, "base_address_alignment", 512);
    assert_attr_u64(d, "compute_units", 8u * (unsigned)(i + 1));
    ck_assert_uint_eq(hdal_device_memory_bytes(d), (uint64_t)(i + 1) << 30);
    assert_attr_u64(d, "max_alloc_bytes", (uint64_t)(i + 1) << 28);
    if (want[i].pci) ck_assert_str_eq(attr(d, "pci_bus_id"), want[i].pci);
    else ck_assert_ptr_null(hdal_device_attribute_get(d, "pci_bus_id"));
    ck_assert_int_eq(hdal_device_numa_node(d), want[i].numa);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    if (want[i].reason) {
      ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
      ck_assert_str_eq(hdal_device_runtime_class_reason(d), want[i].reason);
    } else {
      ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
      ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    }
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* Two platforms: the flat index runs over platforms in the loader's order, then devices. */
START_TEST(flat_index_over_platforms_in_loader_order) {
  use_vendors("mixed");
  hdal_context *ctx = test_context_with("opencl");
  cl_device_id ids[16];
  cl_uint n = cl_all_devices(ids, 16);
  ck_assert_uint_eq(n, 4 + pocl_device_count());
  ck_assert_uint_eq(hdal_context_device_count(ctx), n);
  cl_platform_id first = NULL;
  unsigned platform_index = 0, device_index = 0;
  for (cl_uint i = 0; i < n; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    cl_platform_id p;
    ck_assert_cl(clGetDeviceInfo(ids[i], CL_DEVICE_PLATFORM, sizeof p, &p, NULL));
    if (i == 0) first = p;
    else if (p != first && platform_index == 0) platform_index = 1, device_index = 0;
    ck_assert_str_eq(hdal_device_kind(d), cl_device_str(ids[i], CL_DEVICE_NAME));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, (int)i);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), (int)i);
    assert_attr_u64(d, "opencl_platform_index", platform_index);
    assert_attr_u64(d, "opencl_device_index", device_index++);
  }
  ck_assert_uint_eq(platform_index, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* Each context has its own backend state; destroying one leaves the other whole. */
START_TEST(two_contexts_at_once) {
  hdal_context *a = test_context_with("opencl"), *b = test_context_with("opencl");
  ck_assert_uint_eq(hdal_context_device_count(a), pocl_device_count());
  ck_assert_uint_eq(hdal_context_device_count(b), pocl_device_count());
  hdal_context_destroy(a);
  for (size_t i = 0; i < hdal_context_device_count(b); i++)
    ck_assert_str_eq(hdal_device_platform(hdal_context_device(b, i)), "opencl");
  hdal_context_destroy(b);
}
END_TEST

START_TEST(disabled_backend_loads_no_opencl) {
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "disabled");
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HWLOC_XMLFILE");
  bool pocl = opencl_have_pocl();
  if (!pocl && !opencl_have_fake()) opencl_require_pocl(); /* exits 77 */
  Suite *s = suite_create("opencl");
  /* The fake vendor needs no PoCL: classification runs wherever the ICD loader does. */
  TCase *fake = tcase_create("fake");
  tcase_add_test(fake, fake_vendor_devices_classified_with_reasons);
  suite_add_tcase(s, fake);
  if (pocl) {
    TCase *tc = tcase_create("discovery");
    tcase_add_test(tc, pocl_devices_listed_with_attributes);
    tcase_add_test(tc, opencl_devices_follow_cpu_devices);
    tcase_add_test(tc, empty_vendor_directory_is_zero_devices);
    tcase_add_test(tc, platform_without_devices_is_zero_devices);
    tcase_add_test(tc, broken_icd_next_to_pocl_is_harmless);
    tcase_add_test(tc, only_a_broken_icd_is_zero_devices);
    tcase_add_test(tc, flat_index_over_platforms_in_loader_order);
    tcase_add_test(tc, two_contexts_at_once);
    tcase_add_test(tc, disabled_backend_loads_no_opencl);
    suite_add_tcase(s, tc);
  } else {
    printf("no PoCL ICD for the suite: only the fake vendor's tests run\n");
  }
  return test_run_suite(s);
}
