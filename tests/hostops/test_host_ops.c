/* SPDX-License-Identifier: BSD-3-Clause */
/* Host memory goes through buffer operations (docs/backend-abi.md, "Host
 * memory"): import copies, copy_to_host, copy_to_device and export copies of a
 * host-memory device reach its operations, here host memory's own as the test
 * module hostprobe reuses them, counted in hdal_test_host_ops[].  A core that
 * moved host bytes itself, as it once did for host-addressable devices, would
 * leave the counts at zero. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dlpack_testutil.h"
#include "testutil.h"

enum { ALLOCATE, RELEASE, READ, WRITE, COPY, HOST_POINTER, NOPS };
int hdal_test_host_ops[NOPS]; /* the module counts here (found with dlsym) */

static char dir[] = "/tmp/hdal-hostops-XXXXXX";
static hdal_context *ctx;
static hdal_device *probe;
static int seen[NOPS];

/* The calls of operation `op` since the last look. */
static int calls(int op) {
  int now = __atomic_load_n(&hdal_test_host_ops[op], __ATOMIC_SEQ_CST), d = now - seen[op];
  seen[op] = now;
  return d;
}

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char from[4096], to[4096];
  snprintf(from, sizeof from, "%s/mod_hostprobe.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_hostprobe.so", dir);
  ck_assert_msg(symlink(from, to) == 0, "symlink %s", to);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,hostprobe", .backend_path = dir};
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "hostprobe"), "ok: 1 device");
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!strcmp(hdal_device_kind(hdal_context_device(ctx, i)), "hostprobe")) probe = hdal_context_device(ctx, i);
  ck_assert_ptr_nonnull(probe);
}

static void teardown(void) {
  hdal_context_destroy(ctx);
  char path[4096];
  snprintf(path, sizeof path, "%s/hdal_hostprobe.so", dir);
  unlink(path);
  rmdir(dir);
}

/* A 3x4 float32 tensor 0..11 on `dev`, row-major or transposed (a 4x3 view of the transpose). */
static hdal_capsule *tensor(DLDevice dev, bool transposed) {
  static const int64_t shape[2] = {3, 4}, tshape[2] = {4, 3}, tstrides[2] = {1, 4};
  return tt_legacy(tt_make(tt_iota(12), true, 2, transposed ? tshape : shape, transposed ? tstrides : NULL, tt_f32, dev));
}

static void check_values(const hdal_buffer *b, bool transposed) {
  float out[12];
  ck_assert_ok(hdal_buffer_copy_to_host(b, out, sizeof out));
  for (int i = 0; i < 12; i++) ck_assert_float_eq(out[i], transposed ? (float)((i % 3) * 4 + i / 3) : (float)i);
}

static hdal_buffer *import(hdal_capsule *c, hdal_device *d, const hdal_import_options *o) {
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, o, &b));
  hdal_capsule_destroy(c);
  return b;
}

START_TEST(import_copies_reach_the_operations) {
  calls(ALLOCATE), calls(HOST_POINTER), calls(READ);
  /* kDLCPU memory copied onto the probe: allocated, then compacted straight into its host pointer. */
  hdal_buffer *b = import(tensor(tt_cpu, false), probe, &tt_always);
  ck_assert_int_eq(calls(ALLOCATE), 1);
  ck_assert_int_eq(calls(HOST_POINTER), 1);
  check_values(b, false);
  ck_assert_int_eq(calls(READ), 1);
  hdal_buffer *t = import(tensor(tt_cpu, true), probe, &tt_always);
  ck_assert_int_eq(calls(ALLOCATE), 1);
  ck_assert_int_eq(calls(HOST_POINTER), 1);
  check_values(t, true);
  ck_assert_int_eq(calls(READ), 1);
  /* The probe's memory copied onto the CPU device: read through the probe. */
  hdal_buffer *c = import(tensor((DLDevice){kDLExtDev, 0}, false), tt_cpu_device(ctx), &tt_always);
  ck_assert_int_eq(calls(READ), 1);
  hdal_buffer *ct = import(tensor((DLDevice){kDLExtDev, 0}, true), tt_cpu_device(ctx), &tt_always);
  ck_assert_int_eq(calls(HOST_POINTER), 1); /* strided: gathered from its host pointer, no temporary */
  check_values(c, false);
  check_values(ct, true);
  hdal_buffer_release(b), hdal_buffer_release(t), hdal_buffer_release(c), hdal_buffer_release(ct);
}
END_TEST

/* A compact buffer of the probe's own (views may be permuted: they are gathered). */
static hdal_buffer *owned(void) { return import(tensor(tt_cpu, false), probe, &tt_always); }

START_TEST(copy_to_host_reaches_the_operations) {
  hdal_buffer *v = owned();
  ck_assert_ptr_eq(hdal_buffer_device(v), probe);
  calls(READ), calls(HOST_POINTER);
  check_values(v, false);
  ck_assert_int_eq(calls(READ), 1);
  hdal_buffer *t = import(tensor((DLDevice){kDLExtDev, 0}, true), NULL, &tt_never);
  ck_assert(hdal_buffer_is_view(t));
  check_values(t, true);
  ck_assert_int_eq(calls(HOST_POINTER), 1);
  ck_assert_int_eq(calls(READ), 0);
  hdal_buffer_release(v), hdal_buffer_release(t);
}
END_TEST

START_TEST(copy_to_device_reaches_the_operations) {
  hdal_buffer *v = owned(), *out;
  calls(ALLOCATE), calls(COPY), calls(READ), calls(HOST_POINTER);
  ck_assert_ok(hdal_buffer_copy_to_device(v, probe, &out)); /* inside the backend: its copy */
  ck_assert_int_eq(calls(ALLOCATE), 1);
  ck_assert_int_eq(calls(COPY), 1);
  check_values(out, false);
  hdal_buffer *same = out; /* kept: the pool would hand its block out again */
  calls(READ);
  ck_assert_ok(hdal_buffer_copy_to_device(v, tt_cpu_device(ctx), &out)); /* to the CPU: read */
  ck_assert_int_eq(calls(READ), 1);
  hdal_buffer *cpu = out;
  ck_assert_ok(hdal_buffer_copy_to_device(cpu, probe, &out)); /* from the CPU: into its host pointer */
  ck_assert_int_eq(calls(ALLOCATE), 1);
  ck_assert_int_eq(calls(HOST_POINTER), 1);
  check_values(out, false);
  hdal_buffer_release(out), hdal_buffer_release(cpu), hdal_buffer_release(same), hdal_buffer_release(v);
}
END_TEST

START_TEST(export_copies_reach_the_operations) {
  hdal_buffer *v = owned();
  hdal_export_options eo = HDAL_EXPORT_OPTIONS_INIT;
  eo.has_dl_device = true;
  eo.dl_device = tt_cpu;
  hdal_capsule *c;
  calls(READ), calls(ALLOCATE), calls(HOST_POINTER);
  ck_assert_ok(hdal_buffer_to_dlpack(v, &eo, &c)); /* probe -> CPU: read */
  ck_assert_int_eq(calls(READ), 1);
  hdal_buffer *cpu = import(c, NULL, &tt_never);
  check_values(cpu, false);
  calls(READ);
  eo.dl_device = (DLDevice){kDLExtDev, 0};
  ck_assert_ok(hdal_buffer_to_dlpack(cpu, &eo, &c)); /* CPU -> probe: allocated, compacted into it */
  ck_assert_int_eq(calls(ALLOCATE), 1);
  ck_assert_int_eq(calls(HOST_POINTER), 1);
  hdal_buffer *back = import(c, NULL, &tt_never);
  ck_assert_ptr_eq(hdal_buffer_device(back), probe);
  check_values(back, false);
  hdal_buffer_release(back), hdal_buffer_release(cpu), hdal_buffer_release(v);
}
END_TEST

int main(void) {
  Suite *s = suite_create("host_ops");
  TCase *tc = tcase_create("host_ops");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, import_copies_reach_the_operations);
  tcase_add_test(tc, copy_to_host_reaches_the_operations);
  tcase_add_test(tc, copy_to_device_reaches_the_operations);
  tcase_add_test(tc, export_copies_reach_the_operations);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
