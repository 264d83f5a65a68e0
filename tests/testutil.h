/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by hdal's Check suites. */
#ifndef HDAL_TESTUTIL_H
#define HDAL_TESTUTIL_H

#include "config.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hdal.h>

/* Fails the test with the error's code and message. */
#define ck_assert_ok(expr)                                                                             \
  do {                                                                                                 \
    hdal_error *ck_err_ = (expr);                                                                      \
    ck_assert_msg(ck_err_ == NULL, "%s failed: %s: %s", #expr, hdal_code_name(hdal_error_code(ck_err_)), \
                  hdal_error_message(ck_err_));                                                        \
  } while (0)

/* Checks code and exact message, then frees the error. */
#define ck_assert_error(expr, code, message)                                                        \
  do {                                                                                              \
    hdal_error *ck_err_ = (expr);                                                                   \
    ck_assert_msg(ck_err_ != NULL, "%s succeeded, expected %s", #expr, hdal_code_name(code));       \
    ck_assert_str_eq(hdal_code_name(hdal_error_code(ck_err_)), hdal_code_name(code));               \
    ck_assert_str_eq(hdal_error_message(ck_err_), (message));                                       \
    hdal_error_destroy(ck_err_);                                                                    \
  } while (0)

/* As ck_assert_error, and the error's hdal_cause. */
#define ck_assert_error_cause(expr, code, message, cause)                                           \
  do {                                                                                              \
    hdal_error *ck_err_ = (expr);                                                                   \
    ck_assert_msg(ck_err_ != NULL, "%s succeeded, expected %s", #expr, hdal_code_name(code));       \
    ck_assert_str_eq(hdal_code_name(hdal_error_code(ck_err_)), hdal_code_name(code));               \
    ck_assert_str_eq(hdal_error_message(ck_err_), (message));                                       \
    ck_assert_int_eq(hdal_error_cause(ck_err_), (cause));                                           \
    hdal_error_destroy(ck_err_);                                                                    \
  } while (0)

static inline hdal_context *test_context_with(const char *backends) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_ptr_nonnull(ctx);
  return ctx;
}

/* Adds to ctx, as process `process`, a copy of this process's own devices (its exported table): devices
 * of another process, not addressable here. */
static inline void test_add_process_copy(hdal_context *ctx, int process) {
  void *blob;
  size_t len;
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
  ck_assert_ok(hdal_context_add_process(ctx, process, blob, len));
  free(blob);
}

/* The first device of `platform` in the context, or NULL. */
static inline hdal_device *test_first_device(hdal_context *ctx, const char *platform) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!strcmp(hdal_device_platform(hdal_context_device(ctx, i)), platform)) return hdal_context_device(ctx, i);
  return NULL;
}

/* Kind `i` of hdal_native_handle (0 to 11; false past the last), its name in *name. */
static inline bool test_native_kind(size_t i, hdal_native_handle *kind, const char **name) {
#define TEST_KIND(k) {k, #k}
  static const struct {
    hdal_native_handle kind;
    const char *name;
  } kinds[] = {
      TEST_KIND(HDAL_NATIVE_OPENCL_PLATFORM),   TEST_KIND(HDAL_NATIVE_OPENCL_DEVICE),
      TEST_KIND(HDAL_NATIVE_OPENCL_CONTEXT),    TEST_KIND(HDAL_NATIVE_OPENCL_QUEUE),
      TEST_KIND(HDAL_NATIVE_CUDA_DEVICE),       TEST_KIND(HDAL_NATIVE_CUDA_CONTEXT),
      TEST_KIND(HDAL_NATIVE_CUDA_STREAM),       TEST_KIND(HDAL_NATIVE_HIP_DEVICE),
      TEST_KIND(HDAL_NATIVE_HIP_STREAM),        TEST_KIND(HDAL_NATIVE_LEVEL_ZERO_DRIVER),
      TEST_KIND(HDAL_NATIVE_LEVEL_ZERO_DEVICE), TEST_KIND(HDAL_NATIVE_LEVEL_ZERO_CONTEXT),
  };
#undef TEST_KIND
  if (i >= sizeof kinds / sizeof kinds[0]) return false;
  *kind = kinds[i].kind;
  *name = kinds[i].name;
  return true;
}

/* Every kind of native handle of `d` but those from `first` to `last` (its
 * backend's; 0, 0: none) is refused, naming the device and the kind,
 * and leaves 0; returns how many were. */
static inline int test_assert_native_refused(hdal_device *d, hdal_native_handle first, hdal_native_handle last) {
  hdal_native_handle k;
  const char *name;
  int n = 0;
  for (size_t i = 0; test_native_kind(i, &k, &name); i++) {
    if (k >= first && k <= last) continue;
    char want[256];
    snprintf(want, sizeof want, "hdal_device_native_handle: device %d (%s) has no %s", hdal_device_id(d),
             hdal_device_platform(d), name);
    intptr_t h = 5;
    ck_assert_error(hdal_device_native_handle(d, k, &h), HDAL_NOT_FOUND, want);
    ck_assert_int_eq(h, 0);
    n++;
  }
  return n;
}

/* The first-party backends in the device order: backends/registry, through configure (config.h). */
static const char *const test_known[] = {HDAL__KNOWN_BACKENDS};
#define TEST_NKNOWN (sizeof test_known / sizeof *test_known)

/* "cpu, cuda, ...": the registry's names as hdal's messages list them. */
static inline const char *test_known_list(void) {
  static char text[1024];
  if (!text[0])
    for (size_t i = 0; i < TEST_NKNOWN; i++)
      snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? ", " : "", test_known[i]);
  return text;
}

/* The place of first-party backend `name` in the order, TEST_NKNOWN when it is none. */
static inline size_t test_known_index(const char *name) {
  size_t i = 0;
  while (i < TEST_NKNOWN && strcmp(test_known[i], name)) i++;
  return i;
}

/* The status of backend `name`, or NULL if the context does not list it. */
static inline const char *test_backend_status(const hdal_context *ctx, const char *name) {
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    if (!strcmp(hdal_context_backend_name(ctx, i), name)) return hdal_context_backend_status(ctx, i);
  return NULL;
}

/* The index of backend `name` in the context; the test fails if it is not listed. */
static inline size_t test_backend_index(const hdal_context *ctx, const char *name) {
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    if (!strcmp(hdal_context_backend_name(ctx, i), name)) return i;
  ck_abort_msg("no backend %s", name);
  return 0;
}

/* Backend `name`'s typed state (hdal_context_backend_state). */
static inline hdal_backend_state test_backend_state(const hdal_context *ctx, const char *name) {
  hdal_backend_state st = {.struct_size = sizeof st};
  ck_assert(hdal_context_backend_state(ctx, test_backend_index(ctx, name), &st));
  return st;
}

/* What the process writes to stderr between test_stderr_begin() and test_stderr_end(): into a file of
 * its own, read back into buf (a NUL-terminated string). */
typedef struct {
  int fd, saved;
} test_stderr;

static inline test_stderr test_stderr_begin(void) {
  char tmpl[] = "/tmp/hdal-test-stderr-XXXXXX";
  test_stderr t = {mkstemp(tmpl), -1};
  ck_assert_int_ge(t.fd, 0);
  unlink(tmpl);
  fflush(stderr);
  t.saved = dup(2);
  ck_assert_int_ge(dup2(t.fd, 2), 0);
  return t;
}

static inline void test_stderr_end(test_stderr t, char *buf, size_t size) {
  fflush(stderr);
  dup2(t.saved, 2);
  close(t.saved);
  ssize_t n = pread(t.fd, buf, size - 1, 0);
  close(t.fd);
  buf[n > 0 ? n : 0] = '\0';
}

/* Whether hdal_device_link() says the runtime gives a and b peer access. */
static inline bool test_peer_access(const hdal_device *a, const hdal_device *b) {
  hdal_link link;
  ck_assert_ok(hdal_device_link(a, b, &link));
  return link.peer_access;
}

/* The fake CUDA driver (tests/fakes/cuda) with n devices at these bus ids; false when it is not built
 * (--disable-cuda: the caller's GPU cases check nothing). */
static inline bool test_use_fake_cuda(const char *bus_ids, int n) {
  char path[4200], count[16];
  snprintf(path, sizeof path, "%s/fakecuda.so", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".libs");
  if (access(path, R_OK)) {
    fprintf(stderr, "%s not built: the GPU cases check nothing\n", path);
    return false;
  }
  setenv("HDAL_CUDA_LIBRARY", path, 1);
  snprintf(count, sizeof count, "%d", n);
  setenv("FAKECUDA_DEVICES", count, 1);
  setenv("FAKECUDA_PCI_BUS_IDS", bus_ids, 1);
  return true;
}

/* A stand-in for / (HDAL_FSROOT) with a host's identity (docs/dlpack.md, "Hosts"): hostname, boot id and
 * network namespace, in a new directory under /tmp whose path goes to dir; test_remove_tree() removes it. */
static inline void test_fake_host(char *dir, size_t size, const char *name, const char *boot_id) {
  snprintf(dir, size, "/tmp/hdal-host.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static const char *const dirs[] = {"/proc", "/proc/sys", "/proc/sys/kernel", "/proc/sys/kernel/random", "/proc/self",
                                     "/proc/self/ns"};
  char path[4400];
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(path, sizeof path, "%s%s", dir, dirs[i]);
    ck_assert_int_eq(mkdir(path, 0700), 0);
  }
  const char *files[][2] = {{"/proc/sys/kernel/hostname", name}, {"/proc/sys/kernel/random/boot_id", boot_id}};
  for (size_t i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s%s", dir, files[i][0]);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(files[i][1], f);
    ck_assert_int_eq(fclose(f), 0);
  }
  snprintf(path, sizeof path, "%s/proc/self/ns/net", dir);
  ck_assert_int_eq(symlink("net:[4026531840]", path), 0);
}

static inline void test_remove_tree(const char *dir) {
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Two simulated hosts, node-a and node-b (test_fake_host): a context of `backends` on node-a (process 0)
 * and its exported table,  and one on node-b as process `index` of `count`, which has no process added yet;
 * test_two_hosts_end() destroys both and the hosts. */
typedef struct {
  char a[4200], b[4200];
  hdal_context *ctx_a, *ctx_b;
  void *blob;
  size_t len;
} test_hosts;

static inline void test_two_hosts(test_hosts *h, const char *backends, int index, int count) {
  test_fake_host(h->a, sizeof h->a, "node-a", "8b1f3c52-6a0e-4d7b-9c11-2f4e5d6a7b8c");
  test_fake_host(h->b, sizeof h->b, "node-b", "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b");
  setenv("HDAL_FSROOT", h->a, 1);
  h->ctx_a = test_context_with(backends);
  ck_assert_ok(hdal_context_export_devices(h->ctx_a, &h->blob, &h->len));
  setenv("HDAL_FSROOT", h->b, 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = index, .process_count = count};
  h->ctx_b = NULL;
  ck_assert_ok(hdal_context_create(&o, &h->ctx_b));
}

static inline void test_two_hosts_end(test_hosts *h) {
  hdal_context_destroy(h->ctx_b);
  hdal_context_destroy(h->ctx_a);
  free(h->blob);
  unsetenv("HDAL_FSROOT");
  test_remove_tree(h->a);
  test_remove_tree(h->b);
}

static inline int test_run_suite_forking(Suite *s, enum fork_status fork) {
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, fork);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Runs one suite, each test in a child of its own (unless CK_FORK says
 * otherwise); the exit status is what automake's test driver reads. */
static inline int test_run_suite(Suite *s) { return test_run_suite_forking(s, CK_FORK_GETENV); }

/* The same in this process: MPI ranks must stay the processes mpirun started. */
static inline int test_run_suite_in_process(Suite *s) { return test_run_suite_forking(s, CK_NOFORK); }

#endif
