/* SPDX-License-Identifier: BSD-3-Clause */
/* The ROCm backend's discovery (docs/rocm.md), against the fake HIP runtimes
 * of both ABIs (tests/fakehip/) or, with HDAL_TEST_REAL_ROCM set (tests/gpu/),
 * the real one. */
#include <elf.h>
#include <fcntl.h>
#include <regex.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testgpu.h"
#include "fakehip/testhip.h"

static void use_fake(const char *lib) { test_use_fake_runtime("HDAL_ROCM_LIBRARY", lib); }

static hdal_device *rocm_device(hdal_context *ctx, int ordinal) { return test_platform_device(ctx, "rocm", ordinal); }

static size_t rocm_device_count(hdal_context *ctx) { return test_platform_device_count(ctx, "rocm"); }

/* ---- fake runtimes ---- */

/* Both ABIs list the same devices: each is read the way it writes. */
static void two_devices(const char *lib, const char *version) {
  use_fake(lib);
  setenv("FAKEHIP_DEVICES", "2", 1);
  setenv("FAKEHIP_NAMES", "AMD Instinct MI300X,AMD Instinct MI210", 1);
  setenv("FAKEHIP_PCI_BUS_IDS", "0000:c1:00.0,0001:0a:1f.0", 1);
  setenv("FAKEHIP_MEMORY", "206141652992", 1);
  setenv("FAKEHIP_ARCH", "gfx942:sramecc+:xnack-", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 2 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  const char *names[] = {"AMD Instinct MI300X", "AMD Instinct MI210"};
  const char *pci[] = {"0000:c1:00.0", "0001:0a:1f.0"};
  const char *uuid[] = {"GPU-fa7eb1d0c0de0000", "GPU-fa7eb1d0c0de0001"};
  for (int i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)(1 + i)); /* after the CPU device */
    ck_assert_int_eq(hdal_device_id(d), 1 + i);
    ck_assert_str_eq(hdal_device_platform(d), "rocm");
    ck_assert_str_eq(hdal_device_kind(d), names[i]);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLROCM);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(206141652992));
    ck_assert_int_eq(hdal_device_numa_node(d), -1); /* the synthetic machine has no PCI */
    ck_assert_str_eq(hdal_device_attribute_get(d, "name"), names[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "uuid"), uuid[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), pci[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "architecture"), "gfx942:sramecc+:xnack-");
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_version"), version);
    ck_assert_str_eq(hdal_device_attribute_get(d, "runtime_version"), version);
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "206141652992");
    ck_assert_str_eq(hdal_device_attribute_get(d, "compute_units"), !strcmp(lib, "fakehip5") ? "104" : "110");
  }
  hdal_context_destroy(ctx);
}

START_TEST(two_devices_rocm6) {
  two_devices("fakehip6", "6.0.32830");
  test_hip h;
  ck_assert(test_hip_open(&h));
  ck_assert_uint_eq(h.fakehip_calls("hipGetDevicePropertiesR0600"), 2);
  ck_assert_uint_eq(h.fakehip_calls("hipGetDeviceProperties"), 0);
}
END_TEST

START_TEST(two_devices_rocm5) {
  two_devices("fakehip5", "5.2.21153");
  test_hip h;
  ck_assert(test_hip_open(&h));
  ck_assert_uint_eq(h.fakehip_calls("hipGetDeviceProperties"), 2);
  ck_assert_ptr_null(dlsym(h.lib, "hipGetDevicePropertiesR0600"));
}
END_TEST

/* A runtime whose version names an ABI whose entry point it lacks is refused,
 * not read with the wrong declarations. */
START_TEST(version_without_its_entry_point_unavailable) {
  use_fake("fakehip5");
  setenv("FAKEHIP_RUNTIME_VERSION", "60100000", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  char expected[4300];
  snprintf(expected, sizeof expected,
           "unavailable: %s: the runtime (HIP 6.1) has no entry point hipGetDevicePropertiesR0600", getenv("HDAL_ROCM_LIBRARY"));
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), expected);
  ck_assert_uint_eq(rocm_device_count(ctx), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(runtime_too_old_unavailable) {
  use_fake("fakehip5");
  setenv("FAKEHIP_RUNTIME_VERSION", "40500000", 1);
  hdal_context *ctx = test_context_with("rocm");
  char expected[4300];
  snprintf(expected, sizeof expected, "unavailable: %s: HIP runtime 4.5 is too old (ROCm 5.0 or later is needed)",
           getenv("HDAL_ROCM_LIBRARY"));
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), expected);
  hdal_context_destroy(ctx);
}
END_TEST

/* ROCm 5 without a GPU: hipInit says hipErrorInvalidDevice (the Debian runtime
 * on these machines; tests/test_rocm_system.sh checks the real one). */
START_TEST(no_device_is_unavailable_quietly) {
  const char *libs[] = {"fakehip5", "fakehip6"};
  for (int i = 0; i < 2; i++) {
    use_fake(libs[i]);
    setenv("FAKEHIP_DEVICES", "0", 1);
    hdal_context *ctx;
    const char *err = test_stderr_of_create("cpu,rocm", &ctx);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(test_backend_status(ctx, "rocm"), "unavailable: no ROCm device (hipInit: hipErrorInvalidDevice)");
    ck_assert_uint_eq(rocm_device_count(ctx), 0);
    ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
    hdal_context_destroy(ctx);
  }
}
END_TEST

START_TEST(no_device_after_init_is_unavailable) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "0", 1);
  setenv("FAKEHIP_INIT", "0", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "unavailable: no ROCm device (hipGetDeviceCount: hipErrorNoDevice)");
  hdal_context_destroy(ctx);
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
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,rocm", &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "unavailable: no AMD GPU driver (/dev/kfd absent)");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  const char *sonames[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  for (size_t i = 0; i < 3; i++) ck_assert_ptr_null(dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "1", 1);
  ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 1 device");
  hdal_context_destroy(ctx);
  ck_assert_int_eq(rmdir(root), 0);
}
END_TEST

START_TEST(no_runtime_is_unavailable_quietly) {
  use_fake("fakehip6");
  setenv("HDAL_ROCM_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("cpu,rocm", &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"),
                   "unavailable: /nonexistent/libamdhip64.so: cannot open shared object file: No such file or directory");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
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
    hdal_context *ctx;
    const char *err = test_stderr_of_create("cpu,rocm", &ctx);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(test_backend_status(ctx, "rocm"), expected[i]);
    ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
    hdal_context_destroy(ctx);
  }
}
END_TEST

START_TEST(other_init_failure_named_by_the_runtime) {
  use_fake("fakehip6");
  setenv("FAKEHIP_INIT", "999", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "unavailable: hipInit: hipErrorUnknown (999): unknown error");
  hdal_context_destroy(ctx);
  use_fake("fakehip5"); /* ROCm 5's strings are the names again */
  ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "unavailable: hipInit: hipErrorUnknown (999)");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(debug_says_why_on_stderr) {
  use_fake("fakehip6");
  setenv("FAKEHIP_DEVICES", "0", 1);
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create("rocm", &ctx);
  ck_assert_msg(strstr(err, "hdal: rocm: unavailable: no ROCm device (hipInit: hipErrorInvalidDevice)\n"), "%s", err);
  ck_assert_msg(strstr(err, "HIP runtime 6.0.32830, ROCm 6 ABI (hipGetDevicePropertiesR0600)"), "%s", err);
  hdal_context_destroy(ctx);
}
END_TEST

/* hwloc finds each GPU's PCI bus id in the topology and the NUMA node above it. */
START_TEST(numa_node_from_the_pci_bus_id) {
  use_fake("fakehip6");
  char xml[4200];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir"));
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  setenv("FAKEHIP_DEVICES", "3", 1);
  setenv("FAKEHIP_PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0000:5e:00.0", 1);
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 3 devices");
  ck_assert_int_eq(hdal_device_numa_node(rocm_device(ctx, 0)), 1);
  ck_assert_int_eq(hdal_device_numa_node(rocm_device(ctx, 1)), 0);
  ck_assert_int_eq(hdal_device_numa_node(rocm_device(ctx, 2)), -1); /* not in the topology */
  hdal_context_destroy(ctx);
}
END_TEST

/* A context that does not ask for ROCm never loads the runtime. */
START_TEST(runtime_untouched_unless_asked_for) {
  use_fake("fakehip6");
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "disabled");
  ck_assert_ptr_null(dlopen(getenv("HDAL_ROCM_LIBRARY"), RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  ctx = test_context_with("-rocm");
  ck_assert_ptr_null(dlopen(getenv("HDAL_ROCM_LIBRARY"), RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  ctx = test_context_with("rocm");
  test_hip h;
  ck_assert(test_hip_open(&h));
  ck_assert_uint_eq(h.fakehip_calls("hipInit"), 1);
  ck_assert_uint_eq(h.fakehip_calls("hipMalloc"), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* A known backend (cpu, cuda, opencl, rocm, levelzero): other modules follow
 * the known ones by name, whatever their names (docs/reference.md). */
START_TEST(listed_after_opencl) {
  use_fake("fakehip6");
  hdal_context *ctx = test_context_with("cpu,rocm");
  size_t n = hdal_context_backend_count(ctx);
  ck_assert_uint_ge(n, 7); /* the suite's path has the test module ifrttest */
  ck_assert_str_eq(hdal_context_backend_name(ctx, 2), "opencl");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 3), "rocm");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 4), "levelzero");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 5), "vulkan");
  ck_assert_str_eq(hdal_context_backend_name(ctx, 6), "ifrttest"); /* before "rocm" by name, after it here */
  for (size_t i = 7; i < n; i++)
    ck_assert_int_lt(strcmp(hdal_context_backend_name(ctx, i - 1), hdal_context_backend_name(ctx, i)), 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* The HIP runtime does not survive fork(): a context created in a child of a
 * process that initialised it lists the backend unavailable (docs/design.md). */
START_TEST(unavailable_in_a_fork_child) {
  use_fake("fakehip6");
  hdal_context *ctx = test_context_with("cpu,rocm");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 1 device");
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,rocm"};
    hdal_context *fresh = NULL;
    hdal_error *e = hdal_context_create(&o, &fresh);
    const char *st = !e && fresh ? test_backend_status(fresh, "rocm") : hdal_error_message(e);
    const char *want = "unavailable: this process is a fork() child of one that started the rocm runtime, which "
                       "does not survive fork()";
    bool ok = st && !strcmp(st, want) && !strcmp(test_backend_status(fresh, "cpu"), "ok: 1 device");
    if (!ok) fprintf(stderr, "child: rocm: %s\n", st ? st : "(null)");
    /* What the child made, it destroys: under memcheck a definite leak is the
     * child's exit status 1 too (tests/valgrind/memcheck.sh). */
    hdal_context_destroy(fresh);
    hdal_error_destroy(e);
    hdal_context_destroy(ctx); /* lets go without calling the runtime (docs/design.md) */
    fflush(stderr);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's context listed rocm otherwise");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), "ok: 1 device"); /* the parent goes on */
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
  size_t stroff = 0;
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

START_TEST(module_links_nothing_of_rocm) {
  char path[4200], needed[4096];
  snprintf(path, sizeof path, "%s/backends/rocm/.libs/hdal_rocm.so", getenv("top_builddir"));
  needed_libraries(path, needed, sizeof needed);
  ck_assert_msg(strstr(needed, "libc.so"), "DT_NEEDED: %s", needed);
  ck_assert_msg(!strstr(needed, "hip") && !strstr(needed, "hsa") && !strstr(needed, "amd"), "DT_NEEDED: %s", needed);
}
END_TEST

/* ---- a real runtime and GPU (tests/gpu/) ---- */

static bool matches(const char *s, const char *pattern) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  bool m = s && regexec(&re, s, 0, NULL, 0) == 0;
  regfree(&re);
  return m;
}

START_TEST(real_runtime_devices) {
  test_hip h;
  ck_assert_msg(test_hip_open(&h), "cannot open %s", h.path);
  int n = 0;
  ck_assert_int_eq(h.hipInit(0), 0);
  ck_assert_int_eq(h.hipGetDeviceCount(&n), 0);
  hdal_context *ctx = test_context_with("cpu,rocm");
  char expected[64];
  snprintf(expected, sizeof expected, "ok: %d device%s", n, n == 1 ? "" : "s");
  ck_assert_str_eq(test_backend_status(ctx, "rocm"), expected);
  ck_assert_uint_eq(rocm_device_count(ctx), (size_t)n);
  for (int i = 0; i < n; i++) {
    hdal_device *d = rocm_device(ctx, i);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLROCM);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_uint_gt(hdal_device_memory_bytes(d), 0);
    ck_assert(matches(hdal_device_attribute_get(d, "uuid"), "^GPU-"));
    ck_assert_msg(matches(hdal_device_attribute_get(d, "pci_bus_id"), "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$"),
                  "pci_bus_id %s", hdal_device_attribute_get(d, "pci_bus_id"));
    ck_assert_msg(matches(hdal_device_attribute_get(d, "architecture"), "^gfx[0-9a-f]+"), "architecture %s",
                  hdal_device_attribute_get(d, "architecture"));
    ck_assert(matches(hdal_device_attribute_get(d, "runtime_version"), "^[5-9]\\.[0-9]+\\.[0-9]+$"));
    ck_assert_int_ge(hdal_device_numa_node(d), -1);
    fprintf(stderr, "rocm:%d %s %s %s %s NUMA %d\n", i, hdal_device_kind(d), hdal_device_attribute_get(d, "pci_bus_id"),
            hdal_device_attribute_get(d, "uuid"), hdal_device_attribute_get(d, "architecture"),
            hdal_device_numa_node(d));
  }
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rocm");
  TCase *tc = tcase_create("rocm");
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  tcase_add_test(tc, module_links_nothing_of_rocm);
  if (getenv("HDAL_TEST_REAL_ROCM")) {
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
    tcase_add_test(tc, numa_node_from_the_pci_bus_id);
    tcase_add_test(tc, runtime_untouched_unless_asked_for);
    tcase_add_test(tc, listed_after_opencl);
    tcase_add_test(tc, unavailable_in_a_fork_child);
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
