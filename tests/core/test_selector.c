/* SPDX-License-Identifier: BSD-3-Clause */
/* The device selector (docs/reference.md, "Choosing devices"):
 * HDAL_DEVICE_SELECTOR and hdal_context_options::device_selector, on the CPU
 * backend (a synthetic topology of 4 NUMA nodes) and the fake CUDA driver (3
 * GPUs, UUIDs GPU-facec0da-0001-4000-8000-0000000000NN), and PoCL. */
#include <ctype.h>
#include "testutil.h"
#include "testgpu.h"

static void setup(void) {
  test_use_fake_runtime("HDAL_CUDA_LIBRARY", "fakecuda");
  setenv("FAKECUDA_DEVICES", "3", 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:4 core:1 pu:1", 1);
  unsetenv("HDAL_DEVICE_SELECTOR");
}

static hdal_error *create(const char *selector, hdal_context **ctx) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,cuda", .device_selector = selector};
  *ctx = NULL;
  return hdal_context_create(&o, ctx);
}

/* The context's devices as "platform:local" joined by spaces, in id order (ids are dense). */
static const char *listing(const char *selector) {
  static char out[512];
  hdal_context *ctx;
  ck_assert_ok(create(selector, &ctx));
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    n += (size_t)snprintf(out + n, sizeof out - n, "%s%s:%d", i ? " " : "", hdal_device_platform(d),
                          hdal_device_local_hardware_id(d));
  }
  hdal_context_destroy(ctx);
  return out;
}

START_TEST(everything_without_a_selector) {
  const char *all = "cpu:0 cpu:1 cpu:2 cpu:3 cuda:0 cuda:1 cuda:2";
  ck_assert_str_eq(listing(NULL), all);
  ck_assert_str_eq(listing(""), all);
  ck_assert_str_eq(listing(" \t "), all);
  ck_assert_str_eq(listing("*:*"), all);
}
END_TEST

START_TEST(accept_terms) {
  ck_assert_str_eq(listing("cuda:1"), "cuda:1");
  ck_assert_str_eq(listing("cuda:2,0"), "cuda:0 cuda:2");
  ck_assert_str_eq(listing("cuda:2;cpu:3"), "cpu:3 cuda:2");
  ck_assert_str_eq(listing("cuda:*"), "cuda:0 cuda:1 cuda:2");
  ck_assert_str_eq(listing("*:0"), "cpu:0 cuda:0");
  ck_assert_str_eq(listing("cuda:7"), ""); /* matches nothing: not an error */
}
END_TEST

START_TEST(discard_terms) {
  ck_assert_str_eq(listing("!cuda:1"), "cpu:0 cpu:1 cpu:2 cpu:3 cuda:0 cuda:2");
  ck_assert_str_eq(listing("!cpu:*"), "cuda:0 cuda:1 cuda:2");
  /* Both: the accepted ones but the discarded, wherever the discard stands. */
  ck_assert_str_eq(listing("!cuda:1;cuda:*"), "cuda:0 cuda:2");
  ck_assert_str_eq(listing("cuda:*;!cuda:0,2"), "cuda:1");
  ck_assert_str_eq(listing("*:*;!*:gpu"), "cpu:0 cpu:1 cpu:2 cpu:3");
}
END_TEST

START_TEST(kinds) {
  ck_assert_str_eq(listing("*:gpu"), "cuda:0 cuda:1 cuda:2");
  ck_assert_str_eq(listing("*:CPU"), "cpu:0 cpu:1 cpu:2 cpu:3");
  ck_assert_str_eq(listing("*:accelerator"), "");
  ck_assert_str_eq(listing("cuda:cpu"), "");
}
END_TEST

START_TEST(identity_terms) {
  ck_assert_str_eq(listing("cuda:uuid=GPU-facec0da-0001-4000-8000-000000000002"), "cuda:2");
  ck_assert_str_eq(listing("*:uuid=gpu-FACEC0DA-0001-4000-8000-000000000000"), "cuda:0"); /* any case */
}
END_TEST

START_TEST(pci_terms) {
  hdal_context *ctx;
  ck_assert_ok(create(NULL, &ctx));
  const char *pci = hdal_device_attribute_get(test_platform_device(ctx, "cuda", 1), HDAL_ATTRIBUTE_PCI_BUS_ID);
  ck_assert_ptr_nonnull(pci);
  char term[64], upper[64], nodomain[64];
  snprintf(term, sizeof term, "cuda:pci=%s", pci);
  for (size_t i = 0; i <= strlen(term); i++) upper[i] = (char)toupper((unsigned char)term[i]);
  memcpy(upper, "cuda:pci=", 9);
  snprintf(nodomain, sizeof nodomain, "cuda:pci=%s", pci + 5); /* bb:dd.f is in domain 0000 */
  ck_assert_str_eq(listing(term), "cuda:1");
  ck_assert_str_eq(listing(upper), "cuda:1");
  ck_assert_str_eq(listing(nodomain), "cuda:1");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(whitespace_around_terms_and_devices) {
  ck_assert_str_eq(listing("  cuda : 0 , 2 ;\t! cuda:2 "), "cuda:0");
}
END_TEST

START_TEST(ambiguous_uuid_prefix_refused) {
  hdal_context *ctx;
  ck_assert_error(create("cpu:*;cuda:uuid=GPU-facec0da", &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: device_selector: term 2 (\"cuda:uuid=GPU-facec0da\", at character 7): "
                  "uuid=GPU-facec0da names two devices of backend cuda (0 and 1): give more of it");
  ck_assert_ptr_null(ctx);
}
END_TEST

START_TEST(status_and_state_say_what_was_selected) {
  hdal_context *ctx;
  setenv("HDAL_DEVICE_SELECTOR", "cuda:1", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,cuda"};
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 0 of 4 devices selected by HDAL_DEVICE_SELECTOR");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 of 3 devices selected by HDAL_DEVICE_SELECTOR");
  hdal_backend_state st = test_backend_state(ctx, "cuda");
  ck_assert(st.state == HDAL_BACKEND_OK && st.device_count == 1 && st.unselected_count == 2);
  st = test_backend_state(ctx, "cpu");
  ck_assert(st.state == HDAL_BACKEND_OK && st.device_count == 0 && st.unselected_count == 4);
  hdal_context_destroy(ctx);
  /* The option wins over the variable; a backend it keeps whole says nothing of it. */
  ck_assert_ok(create("cpu:*;cuda:0", &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 4 devices");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"),
                   "ok: 1 of 3 devices selected by hdal_context_options: device_selector");
  hdal_context_destroy(ctx);
}
END_TEST

/* The selector trap (issue 38): "cuda:0" keeps no CPU device, as oneAPI's
 * grammar says; asking for (kDLCPU, 0) then, to route or to export to, is
 * refused with a message that names the selector and what to add, and
 * changes nothing.  "cpu:*;cuda:0" keeps the host. */
START_TEST(refusal_names_the_selector_that_left_a_device_out) {
  hdal_context *ctx;
  ck_assert_ok(create("cuda:0", &ctx));
  hdal_device *d = (hdal_device *)ctx; /* set to NULL by the refusal */
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCPU, 0) is out of range: backend 'cpu' has 0 devices: the device selector "
                  "\"cuda:0\" (hdal_context_options: device_selector) left out all 4 it found; add \"cpu:*\" to keep them");
  ck_assert_ptr_null(d);
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 2}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCUDA, 2) is out of range: backend 'cuda' has 1 device: the device selector "
                  "\"cuda:0\" (hdal_context_options: device_selector) left out 2 of the 3 it found; add \"cuda:*\" to keep "
                  "them");
  /* Exporting a buffer of the GPU to the host: the same refusal; no capsule, the buffer as it was. */
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_buffer *b;
  int64_t shape[1] = {4};
  ck_assert_ok(hdal_buffer_allocate(hdal_context_device(ctx, 0), 1, shape, (DLDataType){kDLFloat, 32, 1}, &b));
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  ck_assert_ok(hdal_buffer_write(b, 0, in, sizeof in));
  hdal_export_options eo = {.struct_size = sizeof eo, .has_dl_device = true, .dl_device = {kDLCPU, 0}};
  hdal_capsule *c = (hdal_capsule *)b;
  ck_assert_error(hdal_buffer_to_dlpack(b, &eo, &c), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCPU, 0) is out of range: backend 'cpu' has 0 devices: the device selector "
                  "\"cuda:0\" (hdal_context_options: device_selector) left out all 4 it found; add \"cpu:*\" to keep them");
  ck_assert_ptr_null(c);
  ck_assert_ok(hdal_buffer_read(b, 0, out, sizeof out));
  ck_assert_mem_eq(in, out, sizeof in);
  hdal_buffer_release(b);
  hdal_context_destroy(ctx);
  /* The variable, named as such; its text as written, without the blanks around it. */
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,cuda"};
  setenv("HDAL_DEVICE_SELECTOR", " !cpu:* ; cuda:0 ", 1);
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCPU, 0) is out of range: backend 'cpu' has 0 devices: the device selector "
                  "\"!cpu:* ; cuda:0\" (HDAL_DEVICE_SELECTOR) left out all 4 it found; add \"cpu:*\" to keep them");
  hdal_context_destroy(ctx);
  unsetenv("HDAL_DEVICE_SELECTOR");
  /* Out of range without a selector's doing: the message as before. */
  ck_assert_ok(create("cpu:*;cuda:0", &ctx));
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCPU, 0}, &d));
  ck_assert_str_eq(hdal_device_platform(d), "cpu");
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 1}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCUDA, 1) is out of range: backend 'cuda' has 1 device: the device selector "
                  "\"cpu:*;cuda:0\" (hdal_context_options: device_selector) left out 2 of the 3 it found; add \"cuda:*\" to "
                  "keep them");
  hdal_context_destroy(ctx);
  ck_assert_ok(create("cuda:*", &ctx));
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 3}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCUDA, 3) is out of range: backend 'cuda' has 3 devices");
  hdal_context_destroy(ctx);
}
END_TEST

/* A device the selector kept is found by its DLPack id, not by its place among those kept: with only
 * cuda:1 kept, (kDLCUDA, 0) is refused and (kDLCUDA, 1) is device 1 (before, it was the reverse). */
START_TEST(routed_by_the_runtime_ordinal_across_gaps) {
  hdal_context *ctx;
  ck_assert_ok(create("cuda:1;cpu:0,2", &ctx));
  hdal_device *d = NULL;
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 1}, &d));
  ck_assert_str_eq(hdal_device_platform(d), "cuda");
  ck_assert_int_eq(hdal_device_local_hardware_id(d), 1);
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCUDA, 0) is out of range: backend 'cuda' has 1 device: the device selector "
                  "\"cuda:1;cpu:0,2\" (hdal_context_options: device_selector) left out 2 of the 3 it found; add \"cuda:*\" "
                  "to keep them");
  ck_assert_ptr_null(d);
  hdal_context_destroy(ctx);
}
END_TEST

/* Malformed selectors: INVALID_ARGUMENT naming the term and where it starts, no context. */
START_TEST(malformed_refused) {
  static const struct {
    const char *selector, *message;
  } cases[] = {
      {"cuda:", "term 1 (\"cuda:\", at character 1): an empty device (between ',' or after ':')"},
      {"cuda:x", "term 1 (\"cuda:x\", at character 1): not a device: *, an ordinal, cpu, gpu, accelerator, "
                 "uuid=PREFIX or pci=BUS_ID"},
      {"cuda:0,,1", "term 1 (\"cuda:0,,1\", at character 1): an empty device (between ',' or after ':')"},
      {";;", "term 1 (\"\", at character 1): an empty term (between ';')"},
      {"cuda:0;", "term 2 (\"\", at character 8): an empty term (between ';')"},
      {"cuda:0; cpu", "term 2 (\"cpu\", at character 9): no ':' (a term reads BACKEND:DEVICES)"},
      {":0", "term 1 (\":0\", at character 1): no backend before ':'"},
      /* Backend names as HDAL_BACKENDS takes them: case-sensitive, the known ones listed (@KNOWN@: the
       * registry's, test_known_list; the suite's module path has ifrttest besides hdal's). */
      {"nosuch:0", "term 1 (\"nosuch:0\", at character 1): unknown backend 'nosuch'; known: @KNOWN@, ifrttest"},
      {"cpu:*;openCL:0", "term 2 (\"openCL:0\", at character 7): unknown backend 'openCL' (did you mean 'opencl'?); "
                         "known: @KNOWN@, ifrttest"},
      {"!CUDA:1", "term 1 (\"!CUDA:1\", at character 1): unknown backend 'CUDA' (did you mean 'cuda'?); known: "
                  "@KNOWN@, ifrttest"},
      {"cu.da:0", "term 1 (\"cu.da:0\", at character 1): a backend name has letters, digits, '_' and '-' only"},
      {"cuda:0x1", "term 1 (\"cuda:0x1\", at character 1): an ordinal has only digits"},
      {"cuda:99999999999", "term 1 (\"cuda:99999999999\", at character 1): the ordinal is too large"},
      {"cuda:pci=12", "term 1 (\"cuda:pci=12\", at character 1): a PCI bus id reads [dddd:]bb:dd.f"},
      {"cuda:\xc3\xa9", "term 1 (\"cuda:\\xc3\\xa9\", at character 1): a character that is not printable ASCII"},
      {"cpu:0;cuda:\"\n", "term 2 (\"cuda:\\x22\\x0a\", at character 7): a character that is not printable ASCII"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char want[512];
    const char *m = cases[i].message, *at = strstr(m, "@KNOWN@");
    snprintf(want, sizeof want, "hdal_context_options: device_selector: %.*s%s%s", at ? (int)(at - m) : (int)strlen(m),
             m, at ? test_known_list() : "", at ? at + strlen("@KNOWN@") : "");
    hdal_context *ctx;
    ck_assert_error(create(cases[i].selector, &ctx), HDAL_INVALID_ARGUMENT, want);
    ck_assert_ptr_null(ctx);
  }
  /* The variable, named as such. */
  setenv("HDAL_DEVICE_SELECTOR", "cuda:", 1);
  hdal_context *ctx;
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,cuda"};
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_DEVICE_SELECTOR: term 1 (\"cuda:\", at character 1): an empty device (between ',' or after "
                  "':')");
}
END_TEST

/* 10,000 terms parse in one pass; the bad one at the end is named by its number. */
START_TEST(long_selectors) {
  size_t n = 10000, len = n * 7 + 16;
  char *s = malloc(len);
  ck_assert_ptr_nonnull(s);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += (size_t)snprintf(s + k, len - k, "cuda:%zu;", i % 2 ? (size_t)1 : (size_t)2);
  s[k - 1] = '\0';
  ck_assert_str_eq(listing(s), "cuda:1 cuda:2");
  snprintf(s + k - 1, len - k + 1, ";cuda:");
  char want[160];
  snprintf(want, sizeof want,
           "hdal_context_options: device_selector: term 10001 (\"cuda:\", at character %zu): an empty device "
           "(between ',' or after ':')",
           k + 1);
  hdal_context *ctx;
  ck_assert_error(create(s, &ctx), HDAL_INVALID_ARGUMENT, want);
  free(s);
}
END_TEST

/* PoCL's devices (through the ICD loader, as make check sets it up): kinds
 * come from their device_type attribute. */
START_TEST(opencl_kinds) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,opencl"};
  hdal_context *all;
  ck_assert_ok(hdal_context_create(&o, &all));
  size_t cpus = 0, others = 0, hdal_cpus = 0;
  for (size_t i = 0; i < hdal_context_device_count(all); i++) {
    hdal_device *d = hdal_context_device(all, i);
    if (strcmp(hdal_device_platform(d), "opencl")) {
      hdal_cpus++;
      continue;
    }
    const char *t = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_DEVICE_TYPE);
    ck_assert_ptr_nonnull(t);
    if (!strcmp(t, "cpu")) cpus++;
    else others++;
  }
  ck_assert_msg(cpus > 0, "no PoCL CPU device: %s", test_backend_status(all, "opencl"));
  hdal_context_destroy(all);
  static const struct {
    const char *selector;
    int kept; /* -1: the PoCL CPUs, -2: the others, -3: hdal's CPUs and the PoCL CPUs */
  } cases[] = {{"opencl:cpu", -1}, {"!opencl:cpu;opencl:*", -2}, {"*:cpu", -3}, {"opencl:accelerator", 0}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    o.device_selector = cases[c].selector;
    hdal_context *ctx;
    ck_assert_ok(hdal_context_create(&o, &ctx));
    size_t want = cases[c].kept == -1 ? cpus : cases[c].kept == -2 ? others : cases[c].kept == -3 ? cpus + hdal_cpus : 0;
    ck_assert_msg(hdal_context_device_count(ctx) == want, "%s kept %zu devices, not %zu", cases[c].selector,
                  hdal_context_device_count(ctx), want);
    hdal_context_destroy(ctx);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("selector");
  TCase *tc = tcase_create("selector");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, everything_without_a_selector);
  tcase_add_test(tc, refusal_names_the_selector_that_left_a_device_out);
  tcase_add_test(tc, accept_terms);
  tcase_add_test(tc, discard_terms);
  tcase_add_test(tc, kinds);
  tcase_add_test(tc, identity_terms);
  tcase_add_test(tc, pci_terms);
  tcase_add_test(tc, whitespace_around_terms_and_devices);
  tcase_add_test(tc, ambiguous_uuid_prefix_refused);
  tcase_add_test(tc, routed_by_the_runtime_ordinal_across_gaps);
  tcase_add_test(tc, status_and_state_say_what_was_selected);
  tcase_add_test(tc, malformed_refused);
  tcase_add_test(tc, long_selectors);
  tcase_add_test(tc, opencl_kinds);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
