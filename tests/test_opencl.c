/* OpenCL backend on real PoCL: enumeration, attributes, classification and
 * statuses (contract sections 3 and 4).  Expected values come from OpenCL
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
  for (size_t i = 0; i < n; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    char driver[64], prefix[80];
    /* PoCL names its devices "<driver>-<cpu>", in POCL_DEVICES order. */
    snprintf(prefix, sizeof prefix, "%s-", pocl_driver(i, driver, sizeof driver));
    ck_assert_msg(!strncmp(hdal_device_kind(d), prefix, strlen(prefix)), "device %zu kind %s", i, hdal_device_kind(d));
    ck_assert_str_eq(hdal_device_kind(d), cl_device_str(ids[i], CL_DEVICE_NAME));
    ck_assert_str_eq(hdal_device_platform(d), "opencl");
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
  opencl_require_pocl();
  unsetenv("HDAL_BACKENDS");
  unsetenv("HWLOC_XMLFILE");
  Suite *s = suite_create("opencl");
  TCase *tc = tcase_create("discovery");
  tcase_add_test(tc, pocl_devices_listed_with_attributes);
  tcase_add_test(tc, opencl_devices_follow_cpu_devices);
  tcase_add_test(tc, empty_vendor_directory_is_zero_devices);
  tcase_add_test(tc, platform_without_devices_is_zero_devices);
  tcase_add_test(tc, broken_icd_next_to_pocl_is_harmless);
  tcase_add_test(tc, only_a_broken_icd_is_zero_devices);
  tcase_add_test(tc, two_contexts_at_once);
  tcase_add_test(tc, disabled_backend_loads_no_opencl);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
