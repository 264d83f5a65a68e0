/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_device_link's answers that hang on no particular machine (docs/reference.md, "Links"): its
 * arguments, the same hardware seen by two processes of one host, devices of two hosts (simulated with
 * HDAL_FSROOT), and the words.  Every pair of real machines' topologies is checked by hdal-ls/hdal-ls-links.sh. */
#include <unistd.h>
#include "testutil.h"

/* Two fake CUDA GPUs on a synthetic machine (no PCI objects); false without the fake. */
static bool two_fake_gpus(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/fakecuda.so", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".libs");
  if (access(path, R_OK)) return false;
  setenv("HDAL_CUDA_LIBRARY", path, 1);
  setenv("HDAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1); /* the machine's NVML knows no fake GPU */
  setenv("FAKECUDA_DEVICES", "2", 1);
  unsetenv("FAKECUDA_PCI_BUS_IDS");
  unsetenv("FAKECUDA_PEER");
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "pack:2 core:2 pu:1", 1);
  return true;
}

START_TEST(arguments) {
  hdal_context *ctx = test_context_with("cpu"), *other = test_context_with("cpu");
  const hdal_device *d = hdal_context_device(ctx, 0), *e = hdal_context_device(other, 0);
  hdal_link l;
  memset(&l, 0xa5, sizeof l);
  ck_assert_error(hdal_device_link(NULL, d, &l), HDAL_INVALID_ARGUMENT, "hdal_device_link: device a is NULL");
  ck_assert_int_eq(l.kind, 0);
  ck_assert_ptr_null(l.fabric);
  ck_assert_error(hdal_device_link(d, NULL, &l), HDAL_INVALID_ARGUMENT, "hdal_device_link: device b is NULL");
  ck_assert_error(hdal_device_link(d, d, NULL), HDAL_INVALID_ARGUMENT, "hdal_device_link: out is NULL");
  ck_assert_error(hdal_device_link(d, d, &l), HDAL_INVALID_ARGUMENT, "hdal_device_link: a and b are one device (0)");
  ck_assert_error(hdal_device_link(d, e, &l), HDAL_INVALID_ARGUMENT,
                  "hdal_device_link: devices 0 and 0 are of two contexts");
  hdal_context_destroy(other);
  hdal_context_destroy(ctx);
}
END_TEST

/* A second process of this host sees the same GPUs: same hardware, and no peer access (its memory is
 * not this process's to ask the runtime about).  Two GPUs a synthetic topology cannot place: sys. */
START_TEST(same_hardware_and_unplaced) {
  if (!two_fake_gpus()) {
    fprintf(stderr, "fakecuda.so not built: nothing to check\n");
    return;
  }
  hdal_context *ctx = test_context_with("cuda");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  test_add_process_copy(ctx, 1);
  const hdal_device *g0 = hdal_context_device(ctx, 0), *g1 = hdal_context_device(ctx, 1);
  const hdal_device *copy0 = hdal_context_device(ctx, 2);
  hdal_link l;
  ck_assert_ok(hdal_device_link(g0, copy0, &l));
  ck_assert_int_eq(l.kind, HDAL_LINK_SAME);
  ck_assert(!l.peer_access);
  ck_assert_ptr_null(l.fabric);
  ck_assert_ok(hdal_device_link(g0, g1, &l));
  ck_assert_int_eq(l.kind, HDAL_LINK_SYS);
  ck_assert(l.peer_access); /* the fake's default: every pair */
  ck_assert_uint_eq(l.bandwidth_mbps, 0);
  ck_assert_ok(hdal_device_link(g1, copy0, &l));
  ck_assert_int_eq(l.kind, HDAL_LINK_SYS);
  ck_assert(!l.peer_access);
  const char *detail;
  ck_assert_int_eq(hdal_context_topology_source(ctx, &detail), HDAL_TOPOLOGY_SYNTHETIC);
  ck_assert_str_eq(detail, "pack:2 core:2 pu:1");
  hdal_context_destroy(ctx);
  unsetenv("HWLOC_SYNTHETIC");
}
END_TEST

/* Simulated hosts (HDAL_FSROOT): no link joins devices of two hosts, and one of another host is not known
 * here; two processes of one host are linked as one machine's devices. */
START_TEST(no_link_across_hosts) {
  test_hosts h;
  test_two_hosts(&h, "cpu", 1, 3);
  hdal_context *ctx_b = h.ctx_b;
  ck_assert_ok(hdal_context_add_process(ctx_b, 0, h.blob, h.len)); /* node-a's process */
  ck_assert_ok(hdal_context_add_process(ctx_b, 2, h.blob, h.len)); /* a second process of node-a */
  size_t n = hdal_context_device_count(h.ctx_a);
  const hdal_device *own = NULL, *far = NULL, *far2 = NULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx_b); i++) {
    const hdal_device *d = hdal_context_device(ctx_b, i);
    if (hdal_device_process_index(d) == 1) own = d;
    if (hdal_device_process_index(d) == 0 && !far) far = d;
    if (hdal_device_process_index(d) == 2 && !far2) far2 = d;
  }
  ck_assert_uint_eq(hdal_context_device_count(ctx_b), 3 * n);
  ck_assert_ptr_nonnull(far);
  ck_assert_ptr_nonnull(far2);
  hdal_link l;
  char msg[256];
  snprintf(msg, sizeof msg, "hdal_device_link: devices %d and %d are on two hosts: no link joins them",
           hdal_device_id(own), hdal_device_id(far));
  ck_assert_error(hdal_device_link(own, far, &l), HDAL_FAILED_PRECONDITION, msg);
  snprintf(msg, sizeof msg,
           "hdal_device_link: devices %d and %d are on another host than this process's: their link is known on "
           "their own host only",
           hdal_device_id(far), hdal_device_id(far2));
  ck_assert_error(hdal_device_link(far, far2, &l), HDAL_FAILED_PRECONDITION, msg);
  test_two_hosts_end(&h);
}
END_TEST

/* The words, once each, in hdal-ls's spelling; NULL past the enums. */
START_TEST(words) {
  static const char *const kinds[] = {"same", "fabric", "pix", "pxb", "phb", "node", "sys"};
  for (int k = 0; k < 7; k++) ck_assert_str_eq(hdal_link_kind_name((hdal_link_kind)k), kinds[k]);
  ck_assert_ptr_null(hdal_link_kind_name((hdal_link_kind)7));
  static const char *const sources[] = {"system", "xml", "synthetic", "other", "unavailable"};
  for (int s = 0; s < 5; s++) ck_assert_str_eq(hdal_topology_source_name((hdal_topology_source)s), sources[s]);
  ck_assert_ptr_null(hdal_topology_source_name((hdal_topology_source)5));
  const char *detail = "x";
  ck_assert_int_eq(hdal_context_topology_source(NULL, &detail), HDAL_TOPOLOGY_UNAVAILABLE);
  ck_assert_ptr_null(detail);
}
END_TEST

int main(void) {
  Suite *s = suite_create("links");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, arguments);
  tcase_add_test(tc, same_hardware_and_unplaced);
  tcase_add_test(tc, no_link_across_hosts);
  tcase_add_test(tc, words);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
