/* SPDX-License-Identifier: BSD-3-Clause */
/* Discovery of a GPU API's devices (docs/reference.md, "Contexts, backends
 * and devices"), for every face (gpusuite.h): the checks the APIs' discovery
 * programs share, each with its own values, and the cases that are the same
 * for all: NUMA nodes from PCI bus ids, a fork() child's status, the module
 * linking nothing of its runtime. */
#include <dlfcn.h>
#include <fcntl.h>
#include <regex.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "gpusuite.h"

static const char *const *foreign_names;

void gpu_assert_two_devices(const char *names[2], const char *pci[2], const char *memory, const gpu_attribute *attrs) {
  char list[512];
  gpu_set("DEVICES", "2");
  snprintf(list, sizeof list, "%s,%s", names[0], names[1]);
  gpu_set("NAMES", list);
  snprintf(list, sizeof list, "%s,%s", pci[0], pci[1]);
  gpu_set("PCI_BUS_IDS", list);
  gpu_set("MEMORY", memory);
  hdal_context *ctx = test_context_with(gpu_backends(true));
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), "ok: 2 devices");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  ck_assert_uint_eq(hdal_device_runtime_vendor(hdal_context_device(ctx, 0)), 0); /* the CPU's: none */
  for (int i = 0; i < 2; i++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)(1 + i)); /* after the CPU device */
    ck_assert_int_eq(hdal_device_id(d), 1 + i);
    ck_assert_str_eq(hdal_device_platform(d), gpu->platform);
    ck_assert_uint_eq(hdal_device_runtime_vendor(d), gpu->vendor);
    ck_assert_str_eq(hdal_device_kind(d), names[i]);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_ptr_null(hdal_device_runtime_class_reason(d));
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, gpu->memory);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), strtoull(memory, NULL, 10));
    ck_assert_int_eq(hdal_device_numa_node(d), -1); /* the synthetic machine has no PCI */
    ck_assert_str_eq(hdal_device_attribute_get(d, "name"), names[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), pci[i]);
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), memory);
    for (const gpu_attribute *a = attrs; a->key; a++) ck_assert_str_eq(hdal_device_attribute_get(d, a->key), a->value[i]);
  }
  hdal_context_destroy(ctx);
}

void gpu_assert_status_quietly(const char *backends, const char *status) {
  hdal_context *ctx;
  const char *err = test_stderr_of_create(backends, &ctx);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), status);
  ck_assert_uint_eq(test_platform_device_count(ctx, gpu->platform), 0);
  if (!strncmp(backends, "cpu,", 4)) {
    ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
    ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  }
  hdal_context_destroy(ctx);
}

void gpu_assert_debug(const char *backends, const char *const *lines) {
  setenv("HDAL_DEBUG", "1", 1);
  hdal_context *ctx;
  const char *err = test_stderr_of_create(backends, &ctx);
  for (; *lines; lines++) ck_assert_msg(strstr(err, *lines), "%s", err);
  hdal_context_destroy(ctx);
}

void gpu_assert_not_loaded_unless_asked(const char *library) {
  char unasked[64];
  snprintf(unasked, sizeof unasked, "-%s", gpu->platform);
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), "disabled");
  ck_assert_ptr_null(dlopen(library, RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
  ctx = test_context_with(unasked);
  ck_assert_ptr_null(dlopen(library, RTLD_NOW | RTLD_NOLOAD));
  hdal_context_destroy(ctx);
}

/* Whether s matches the extended regular expression. */
static bool matches(const char *s, const char *pattern) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  bool m = s && regexec(&re, s, 0, NULL, 0) == 0;
  regfree(&re);
  return m;
}

void gpu_assert_real_devices(const char *const (*patterns)[2]) {
  int n = 0;
  gpu_open();
  ck_assert_int_eq(gpu->count(&n), 0);
  const char *probed = getenv(gpu->devices); /* tests/gpu/ runs these where its probe counted GPUs */
  ck_assert_int_gt(n, 0);
  if (probed) ck_assert_int_eq(n, atoi(probed));
  hdal_context *ctx = test_context_with(gpu_backends(true));
  char expected[64];
  snprintf(expected, sizeof expected, "ok: %d device%s", n, n == 1 ? "" : "s");
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), expected);
  ck_assert_uint_eq(test_platform_device_count(ctx, gpu->platform), (size_t)n);
  for (int i = 0; i < n; i++) {
    hdal_device *d = gpu_device(ctx, i);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, gpu->memory);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
    ck_assert_uint_gt(hdal_device_memory_bytes(d), 0);
    ck_assert_str_eq(hdal_device_kind(d), hdal_device_attribute_get(d, "name"));
    ck_assert_int_ge(hdal_device_numa_node(d), -1);
    fprintf(stderr, "%s:%d %s", gpu->platform, i, hdal_device_kind(d));
    for (const char *const(*p)[2] = patterns; (*p)[0]; p++) {
      const char *value = hdal_device_attribute_get(d, (*p)[0]);
      ck_assert_msg(matches(value, (*p)[1]), "%s %s", (*p)[0], value);
      fprintf(stderr, " %s", value);
    }
    fprintf(stderr, " NUMA %d\n", hdal_device_numa_node(d));
  }
  hdal_context_destroy(ctx);
}

/* ---- the same for every API ---- */

/* hwloc finds each GPU's PCI bus id in the topology and the NUMA node above it. */
START_TEST(numa_node_from_the_pci_bus_id) {
  gpu_use_fake();
  char xml[4200];
  snprintf(xml, sizeof xml, "%s/topologies/cuda-two-numa.xml", getenv("srcdir"));
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
  gpu_set("DEVICES", "3");
  gpu_set("PCI_BUS_IDS", "0000:af:00.0,0000:3b:00.0,0000:5e:00.0");
  hdal_context *ctx = test_context_with(gpu_backends(true));
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices");
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), "ok: 3 devices");
  ck_assert_int_eq(hdal_device_numa_node(gpu_device(ctx, 0)), 1);
  ck_assert_int_eq(hdal_device_numa_node(gpu_device(ctx, 1)), 0);
  ck_assert_int_eq(hdal_device_numa_node(gpu_device(ctx, 2)), -1); /* not in the topology */
  hdal_context_destroy(ctx);
}
END_TEST

/* The runtime does not survive fork(): a context created in a child of a
 * process that started it lists the backend unavailable (docs/design.md). */
START_TEST(unavailable_in_a_fork_child) {
  gpu_use_fake();
  hdal_context *ctx = test_context_with(gpu_backends(true));
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), "ok: 1 device");
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    hdal_context_options o = {.struct_size = sizeof o, .backends = gpu_backends(true)};
    hdal_context *fresh = NULL;
    hdal_error *e = hdal_context_create(&o, &fresh);
    const char *st = !e && fresh ? test_backend_status(fresh, gpu->platform) : hdal_error_message(e);
    char want[256];
    snprintf(want, sizeof want,
             "unavailable: this process is a fork() child of one that started the %s runtime, which does not "
             "survive fork()",
             gpu->platform);
    bool ok = st && !strcmp(st, want) && !strcmp(test_backend_status(fresh, "cpu"), "ok: 1 device");
    if (!ok) fprintf(stderr, "child: %s: %s\n", gpu->platform, st ? st : "(null)");
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
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's context listed %s otherwise", gpu->platform);
  ck_assert_str_eq(test_backend_status(ctx, gpu->platform), "ok: 1 device"); /* the parent goes on */
  hdal_context_destroy(ctx);
}
END_TEST

/* The module (backends/<platform>/hdal_<platform>.so) opens its runtime at run time: it links nothing of it. */
START_TEST(module_links_nothing_of_its_runtime) { test_assert_module_links_none_of(gpu->platform, foreign_names); }
END_TEST

void gpu_discovery_add(TCase *tc, const char *const *foreign) {
  foreign_names = foreign;
  tcase_add_test(tc, module_links_nothing_of_its_runtime);
  if (gpu_real) return;
  tcase_add_test(tc, numa_node_from_the_pci_bus_id);
  tcase_add_test(tc, unavailable_in_a_fork_child);
}
