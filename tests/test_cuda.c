/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's discovery (docs/reference.md, "Contexts, backends and devices"), against the fake driver
 * (tests/fakecuda/) or, with HDAL_TEST_REAL_CUDA set (tests/gpu/), the real one. */
#include <elf.h>
#include <fcntl.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testgpu.h"
#include "fakecuda/testcuda.h"

static void use_fake(const char *lib) { test_use_fake_runtime("HDAL_CUDA_LIBRARY", lib); }

static hdal_device *cuda_device(hdal_context *ctx, int ordinal) { return test_platform_device(ctx, "cuda", ordinal); }

static size_t cuda_device_count(hdal_context *ctx) { return test_platform_device_count(ctx, "cuda"); }

/* ---- fake driver ---- */

START_TEST(two_devices_enumerated) {
  use_fake("fakecuda");
  setenv("FAKECUDA_DEVICES", "2", 1);
  setenv("FAKECUDA_NAMES", "NVIDIA H200,NVIDIA H100 80GB HBM3", 1);
  setenv("FAKECUDA_PCI_BUS_IDS", "0000:3b:00.0,0001:af:1f.0", 1);
  setenv("FAKECUDA_MEMORY", "150754820096", 1);
  setenv("FAKECUDA_COMPUTE_CAPABILITY", "9.0", 1);
  setenv("FAKECUDA_DRIVER_VERSION", "12040", 1);
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 2 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  const char *names[] = {"NVIDIA H200", "NVIDIA H100 80GB HBM3"};
  const char *pci[] = {"0000:3b:00.0", "0001:af:1f.0"};
  for (int i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)(1 + i)); /* after the CPU device */
    char uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-facec0da-0001-4000-8000-0000000000%02x", i);
    ck_assert_int_eq(hdal_device_id(d), 1 + i);
    ck_assert_str_eq(hdal_device_platform(d), "cuda");
    ck_assert_str_eq(hdal_device_kind(d), names[i]);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLCUDA);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(150754820096));
    ck_assert_int_eq(hdal_device_numa_node(d), -1); /* the synthetic machine has no PCI */
    ck_assert_str_eq(hdal_device_attribute_get(d, "name"), names[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "uuid"), uuid);
    ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), pci[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "compute_capability"), "9.0");
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_version"), "12.4");
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "150754820096");
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(one_device_enumerated) {
  use_fake("fakecuda");
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
  use_fake("fakecuda");
  setenv("FAKECUDA_DEVICES", "0", 1);
  setenv("FAKECUDA_INIT", "0", 1);
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 0 devices");
  ck_assert_uint_eq(cuda_device_count(ctx), 0);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* What a real driver does with no GPU (or CUDA_VISIBLE_DEVICES=""): cuInit says 100. */
START_TEST(no_device_is_unavailable_quietly) {
  use_fake("fakecuda");
  setenv("FAKECUDA_DEVICES", "0", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,cuda", &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "unavailable: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
  ck_assert_uint_eq(cuda_device_count(ctx), 0);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(no_driver_is_unavailable_quietly) {
  use_fake("fakecuda");
  setenv("HDAL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,cuda", &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"),
                   "unavailable: /nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(stub_driver_is_unavailable_quietly) {
  use_fake("fakecuda");
  setenv("FAKECUDA_INIT", "34", 1); /* every call of a stub answers CUDA_ERROR_STUB_LIBRARY */
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,cuda", &ctx);
  ck_assert_str_eq(err, "");
  char expected[4200];
  snprintf(expected, sizeof expected,
           "unavailable: %s is a stub library, not the CUDA driver (cuInit: CUDA_ERROR_STUB_LIBRARY)", getenv("HDAL_CUDA_LIBRARY"));
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), expected);
  ck_assert_uint_eq(cuda_device_count(ctx), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(other_init_failure_named_by_the_driver) {
  use_fake("fakecuda");
  setenv("FAKECUDA_INIT", "999", 1);
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "unavailable: cuInit: CUDA_ERROR_UNKNOWN (999): unknown error");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(debug_says_why_on_stderr) {
  use_fake("fakecuda");
  setenv("FAKECUDA_DEVICES", "0", 1);
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cuda", &ctx);
  ck_assert_msg(strstr(err, "hdal: cuda: unavailable: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)\n"), "%s", err);
  ck_assert_msg(strstr(err, "resolving entry points through cuGetProcAddress"), "%s", err);
  hdal_context_destroy(ctx);
}
END_TEST

/* The versioned names, never the legacy ones, with or without cuGetProcAddress. */
START_TEST(entry_points_through_cuGetProcAddress) {
  use_fake("fakecuda");
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  test_cuda c;
  ck_assert(test_cuda_open(&c));
  ck_assert_uint_ge(c.fakecuda_calls("cuGetProcAddress"), 20);
  ck_assert_uint_eq(c.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(driver_without_cuGetProcAddress) {
  use_fake("fakecuda_legacy");
  setenv("FAKECUDA_DEVICES", "2", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 2 devices");
  ck_assert_uint_eq(hdal_device_memory_bytes(hdal_context_device(ctx, 1)), UINT64_C(16) << 30);
  test_cuda c;
  ck_assert(test_cuda_open(&c));
  ck_assert_ptr_null(dlsym(c.lib, "cuGetProcAddress"));
  ck_assert_uint_eq(c.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(cuGetProcAddress_failing_falls_back_to_versioned_names) {
  use_fake("fakecuda");
  setenv("FAKECUDA_GETPROCADDRESS", "fail", 1);
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  test_cuda c;
  ck_assert(test_cuda_open(&c));
  ck_assert_uint_gt(c.fakecuda_calls("cuGetProcAddress"), 0);
  ck_assert_uint_eq(c.fakecuda_calls("legacy"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* hwloc finds each GPU's PCI bus id in the topology and the NUMA node above it. */
START_TEST(numa_node_from_the_pci_bus_id) {
  use_fake("fakecuda");
  char xml[4200];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir"));
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  setenv("FAKECUDA_DEVICES", "3", 1);
  setenv("FAKECUDA_PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0000:5e:00.0", 1);
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 3 devices");
  ck_assert_int_eq(hdal_device_numa_node(cuda_device(ctx, 0)), 1);
  ck_assert_int_eq(hdal_device_numa_node(cuda_device(ctx, 1)), 0);
  ck_assert_int_eq(hdal_device_numa_node(cuda_device(ctx, 2)), -1); /* not in the topology */
  hdal_context_destroy(ctx);
}
END_TEST

/* A context that does not ask for CUDA never loads the driver. */
START_TEST(driver_untouched_unless_asked_for) {
  use_fake("fakecuda");
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "disabled");
  ck_assert_ptr_null(dlopen(getenv("HDAL_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  ctx = test_context_with("-cuda");
  ck_assert_ptr_null(dlopen(getenv("HDAL_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  ctx = test_context_with("cuda");
  test_cuda c;
  ck_assert(test_cuda_open(&c));
  ck_assert_uint_eq(c.fakecuda_calls("cuInit"), 1);
  /* Discovery retains no context: that costs GPU memory, and waits for the first buffer. */
  ck_assert_uint_eq(c.fakecuda_calls("cuDevicePrimaryCtxRetain"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- the module itself ---- */

/* The DT_NEEDED entries of an ELF shared object, joined by spaces. */
static void needed_libraries(const char *path, char *out, size_t len) {
  int fd = open(path, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  unsigned char *f = malloc((size_t)st.st_size);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(pread(fd, f, (size_t)st.st_size, 0), st.st_size);
  close(fd);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
  ck_assert(!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64);
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(f + eh->e_phoff);
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(f + ph[i].p_offset);
  ck_assert_ptr_nonnull(dyn);
  Elf64_Addr strtab = 0;
  for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
  size_t stroff = 0; /* the string table's file offset, from the load segment holding it */
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr && strtab < ph[i].p_vaddr + ph[i].p_filesz)
      stroff = strtab - ph[i].p_vaddr + ph[i].p_offset;
  ck_assert_uint_ne(stroff, 0);
  out[0] = '\0';
  for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_NEEDED) {
      strncat(out, (const char *)f + stroff + d->d_un.d_val, len - strlen(out) - 2);
      strcat(out, " ");
    }
  free(f);
}

START_TEST(module_links_nothing_of_cuda) {
  char path[4200], needed[4096];
  snprintf(path, sizeof path, "%s/backends/cuda/.libs/hdal_cuda.so", getenv("top_builddir"));
  needed_libraries(path, needed, sizeof needed);
  ck_assert_msg(strstr(needed, "libc.so"), "DT_NEEDED: %s", needed); /* the parser found the list */
  ck_assert_msg(!strstr(needed, "cuda") && !strstr(needed, "nvidia"), "DT_NEEDED: %s", needed);
}
END_TEST

/* ---- a real driver (tests/gpu/) ---- */

static bool matches(const char *s, const char *pattern) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  bool m = s && regexec(&re, s, 0, NULL, 0) == 0;
  regfree(&re);
  return m;
}

START_TEST(real_driver_devices) {
  test_cuda c;
  ck_assert_msg(test_cuda_open(&c), "cannot open %s", test_cuda_library());
  int n = 0;
  ck_assert_int_eq(c.cuInit(0), 0);
  ck_assert_int_eq(c.cuDeviceGetCount(&n), 0);
  hdal_context *ctx = test_context_with("cpu,cuda");
  char expected[64];
  snprintf(expected, sizeof expected, "ok: %d device%s", n, n == 1 ? "" : "s");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), expected);
  ck_assert_uint_eq(cuda_device_count(ctx), (size_t)n);
  for (int i = 0; i < n; i++) {
    hdal_device *d = cuda_device(ctx, i);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLCUDA);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_uint_gt(hdal_device_memory_bytes(d), 0);
    ck_assert_str_eq(hdal_device_kind(d), hdal_device_attribute_get(d, "name"));
    ck_assert_msg(matches(hdal_device_attribute_get(d, "uuid"), "^GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$"),
                  "uuid %s", hdal_device_attribute_get(d, "uuid"));
    ck_assert_msg(matches(hdal_device_attribute_get(d, "pci_bus_id"), "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.0$"),
                  "pci_bus_id %s", hdal_device_attribute_get(d, "pci_bus_id"));
    ck_assert(matches(hdal_device_attribute_get(d, "compute_capability"), "^[1-9][0-9]*\\.[0-9]+$"));
    ck_assert(matches(hdal_device_attribute_get(d, "driver_version"), "^[1-9][0-9]*\\.[0-9]+$"));
    ck_assert_int_ge(hdal_device_numa_node(d), -1);
    fprintf(stderr, "cuda:%d %s %s %s cc %s NUMA %d\n", i, hdal_device_kind(d),
            hdal_device_attribute_get(d, "pci_bus_id"), hdal_device_attribute_get(d, "uuid"),
            hdal_device_attribute_get(d, "compute_capability"), hdal_device_numa_node(d));
  }
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("cuda");
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  tcase_add_test(tc, module_links_nothing_of_cuda);
  if (getenv("HDAL_TEST_REAL_CUDA")) {
    tcase_add_test(tc, real_driver_devices);
  } else {
    unsetenv("HWLOC_XMLFILE");
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
    tcase_add_test(tc, numa_node_from_the_pci_bus_id);
    tcase_add_test(tc, driver_untouched_unless_asked_for);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
