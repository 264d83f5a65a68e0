/* SPDX-License-Identifier: BSD-3-Clause */
/* Statuses and attribute values as data (docs/reference.md): each backend's
 * state, counts and reason (hdal_context_backend_state), which its status text
 * is made from, and attributes read once by the core as the types their
 * backends gave them (hdal_device_attribute_uint, _bool), here and in another
 * process's table.  The modules: oddities (refused devices), failing (its
 * discovery fails), badabi (not loadable), typedls (typed attributes). */
#include <unistd.h>
#include "testutil.h"
#include <hdal/backend.h>

static char dir[] = "/tmp/hdal-typed-XXXXXX";
static const char *const modules[] = {"oddities", "failing", "badabi", "typedls"};

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/mod_%s.so", getenv("HDAL_TEST_MODULES"), modules[i]);
    snprintf(to, sizeof to, "%s/hdal_%s.so", dir, modules[i]);
    ck_assert_int_eq(symlink(from, to), 0);
  }
}

static void teardown(void) {
  for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
    char to[4096];
    snprintf(to, sizeof to, "%s/hdal_%s.so", dir, modules[i]);
    unlink(to);
  }
  rmdir(dir);
}

static hdal_context *context_of(const char *backends) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends, .backend_path = dir};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  return ctx;
}

/* Backend `name`'s state is as given, and its status the text made from it. */
static void check_state(const hdal_context *ctx, const char *name, hdal_backend_state_kind state, size_t devices,
                        size_t refused, const char *reason, const char *status) {
  size_t i = test_backend_index(ctx, name);
  hdal_backend_state st = {.struct_size = sizeof st};
  ck_assert(hdal_context_backend_state(ctx, i, &st));
  ck_assert_int_eq(st.state, state);
  ck_assert_uint_eq(st.device_count, devices);
  ck_assert_uint_eq(st.refused_count, refused);
  if (reason) ck_assert_str_eq(st.reason, reason);
  else ck_assert_ptr_null(st.reason);
  ck_assert_str_eq(hdal_context_backend_status(ctx, i), status);
}

START_TEST(every_state_with_counts_and_reason) {
  hdal_context *ctx = context_of("cpu,oddities,failing,badabi,vulkan");
  check_state(ctx, "cpu", HDAL_BACKEND_OK, 2, 0, NULL, "ok: 2 devices");
  check_state(ctx, "cuda", HDAL_BACKEND_DISABLED, 0, 0, NULL, "disabled");
  check_state(ctx, "oddities", HDAL_BACKEND_OK, 5, 4, "negative local hardware id -1",
              "ok: 5 devices; 4 refused: negative local hardware id -1 (and 3 more)");
  /* The device failing added before its discovery failed is not counted. */
  check_state(ctx, "failing", HDAL_BACKEND_UNAVAILABLE, 0, 0, "failing: no hardware of this kind here",
              "unavailable: failing: no hardware of this kind here");
  char why[4200], status[4300];
  snprintf(why, sizeof why, "%s/hdal_badabi.so: module ABI version 42, this hdal needs %u", dir, HDAL_BACKEND_ABI_VERSION);
  snprintf(status, sizeof status, "unavailable: %s", why);
  check_state(ctx, "badabi", HDAL_BACKEND_UNAVAILABLE, 0, 0, why, status);
  /* A first-party backend whose module is not on the path. */
  snprintf(why, sizeof why, "module hdal_vulkan.so not found (searched %s)", dir);
  snprintf(status, sizeof status, "unavailable: %s", why);
  check_state(ctx, "vulkan", HDAL_BACKEND_UNAVAILABLE, 0, 0, why, status);
  hdal_context_destroy(ctx);
  /* A loaded backend whose runtime broke failed; its text says unavailable all the same. */
  setenv("HDAL_TEST_FAILING_INTERNAL", "1", 1);
  ctx = context_of("failing");
  unsetenv("HDAL_TEST_FAILING_INTERNAL");
  check_state(ctx, "failing", HDAL_BACKEND_FAILED, 0, 0, "failing: the runtime broke",
              "unavailable: failing: the runtime broke");
  hdal_context_destroy(ctx);
  ctx = context_of("typedls");
  check_state(ctx, "cpu", HDAL_BACKEND_DISABLED, 0, 0, NULL, "disabled");
  check_state(ctx, "typedls", HDAL_BACKEND_OK, 2, 0, NULL, "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

/* A caller compiled when the struct was shorter gets what it holds; an index
 * out of range, no struct or one too short for the state: false, nothing written. */
START_TEST(state_struct_size_and_range) {
  hdal_context *ctx = context_of("cpu,oddities");
  size_t odd = test_backend_index(ctx, "oddities");
  hdal_backend_state st;
  memset(&st, 0x5a, sizeof st);
  st.struct_size = offsetof(hdal_backend_state, device_count) + sizeof st.device_count;
  ck_assert(hdal_context_backend_state(ctx, odd, &st));
  ck_assert_int_eq(st.state, HDAL_BACKEND_OK);
  ck_assert_uint_eq(st.device_count, 5);
  hdal_backend_state untouched;
  memset(&untouched, 0x5a, sizeof untouched);
  ck_assert_mem_eq(&st.refused_count, &untouched.refused_count, sizeof st - offsetof(hdal_backend_state, refused_count));

  memset(&st, 0x5a, sizeof st);
  st.struct_size = offsetof(hdal_backend_state, state) + sizeof st.state - 1;
  ck_assert(!hdal_context_backend_state(ctx, odd, &st));
  untouched.struct_size = st.struct_size;
  ck_assert_mem_eq(&st, &untouched, sizeof st);
  st.struct_size = sizeof st;
  ck_assert(!hdal_context_backend_state(ctx, hdal_context_backend_count(ctx), &st));
  untouched.struct_size = sizeof st;
  ck_assert_mem_eq(&st, &untouched, sizeof st);
  ck_assert(!hdal_context_backend_state(ctx, 0, NULL));
  hdal_context_destroy(ctx);
}
END_TEST

static size_t attribute_index(const hdal_device *d, const char *key) {
  const char *k;
  for (size_t i = 0; hdal_device_attribute(d, i, &k, NULL); i++)
    if (!strcmp(k, key)) return i;
  ck_abort_msg("no attribute %s", key);
  return 0;
}

/* typedls's attributes (tests/modules/typed_ls.c) on device d, read as data. */
static void check_typed(const hdal_device *d) {
  static const struct {
    const char *key;
    int uint; /* 1: a number, 0: not */
    uint64_t number;
    int boolean; /* -1: not a boolean, else its value */
  } cases[] = {
      {"widgets", 1, 42, -1},
      {"largest", 1, UINT64_MAX, -1},
      {"shiny", 0, 0, 1},
      {"dull", 0, 0, 0},
      {"label", 0, 0, -1},        /* "42", a string */
      {"too_large", 0, 0, -1},    /* 2^64: kept as a string */
      {"leading_zero", 0, 0, -1}, /* "007" */
      {"negative", 0, 0, -1},
      {"maybe", 0, 0, -1},
      {"unknown_type", 0, 0, -1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    size_t i = attribute_index(d, cases[c].key);
    uint64_t u = 7;
    bool b = true;
    ck_assert_msg(hdal_device_attribute_uint(d, i, &u) == (cases[c].uint == 1), "%s as a number", cases[c].key);
    ck_assert_uint_eq(u, cases[c].uint ? cases[c].number : 7); /* untouched when not one */
    ck_assert_msg(hdal_device_attribute_bool(d, i, &b) == (cases[c].boolean >= 0), "%s as a boolean", cases[c].key);
    ck_assert_int_eq(b, cases[c].boolean >= 0 ? cases[c].boolean : true);
    if (cases[c].uint) ck_assert(hdal_device_attribute_uint(d, i, NULL));
    if (cases[c].boolean >= 0) ck_assert(hdal_device_attribute_bool(d, i, NULL));
  }
  /* The text the core wrote from the typed values: one spelling of each. */
  ck_assert_str_eq(hdal_device_attribute_get(d, "widgets"), "42");
  ck_assert_str_eq(hdal_device_attribute_get(d, "largest"), "18446744073709551615");
  ck_assert_str_eq(hdal_device_attribute_get(d, "shiny"), "yes");
  ck_assert_str_eq(hdal_device_attribute_get(d, "dull"), "no");
  ck_assert_uint_eq(hdal_device_attribute_flags(d, attribute_index(d, "unknown_type")), 0);
  ck_assert_ptr_null(hdal_device_attribute_get(d, "bad_type")); /* refused (typed_ls.c) */
  ck_assert_ptr_null(hdal_device_attribute_get(d, "no_text"));
  uint64_t u = 7;
  bool b = false;
  ck_assert(!hdal_device_attribute_uint(d, hdal_device_attribute_count(d), &u));
  ck_assert(!hdal_device_attribute_bool(d, hdal_device_attribute_count(d), &b));
  ck_assert(u == 7 && !b);
}

START_TEST(attribute_values_as_data) {
  hdal_context *ctx = context_of("cpu,typedls");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  check_typed(hdal_context_device(ctx, 2));
  check_typed(hdal_context_device(ctx, 3));
  /* The CPU backend's numbers: the same as their text. */
  const hdal_device *cpu = hdal_context_device(ctx, 0);
  uint64_t cores, pus;
  ck_assert(hdal_device_attribute_uint(cpu, attribute_index(cpu, "cores"), &cores));
  ck_assert(hdal_device_attribute_uint(cpu, attribute_index(cpu, "pus"), &pus));
  ck_assert_uint_eq(cores, 2);
  ck_assert_uint_eq(pus, 2);
  ck_assert_str_eq(hdal_device_attribute_get(cpu, "cores"), "2");
  ck_assert(!hdal_device_attribute_uint(cpu, attribute_index(cpu, "cpuset"), NULL));
  /* Its memory crosses the module ABI once, as the info's field, and is listed where the backend put it. */
  uint64_t mem;
  ck_assert(hdal_device_attribute_uint(cpu, attribute_index(cpu, "memory_bytes"), &mem));
  ck_assert_uint_eq(mem, hdal_device_memory_bytes(cpu));
  ck_assert_uint_gt(mem, 0);

  /* Another process's devices: the values read again from its table, the same. */
  void *blob;
  size_t len;
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 1, .process_count = 2};
  hdal_context *peer;
  ck_assert_ok(hdal_context_create(&o, &peer));
  ck_assert_ok(hdal_context_add_process(peer, 0, blob, len));
  free(blob);
  ck_assert_uint_eq(hdal_context_device_count(peer), 6);
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(peer, 2)), "typedls");
  ck_assert(!hdal_device_is_addressable(hdal_context_device(peer, 2)));
  check_typed(hdal_context_device(peer, 2));
  check_typed(hdal_context_device(peer, 3));
  hdal_context_destroy(peer);
  hdal_context_destroy(ctx);
}
END_TEST

/* Every DLPack device type by its dlpack.h name; NULL for values DLPack does not define. */
START_TEST(dlpack_device_type_names) {
  static const char *const names[] = {NULL, "kDLCPU", "kDLCUDA", "kDLCUDAHost", "kDLOpenCL", NULL, NULL,
                                      "kDLVulkan", "kDLMetal", "kDLVPI", "kDLROCM", "kDLROCMHost", "kDLExtDev",
                                      "kDLCUDAManaged", "kDLOneAPI", "kDLWebGPU", "kDLHexagon", "kDLMAIA", "kDLTrn",
                                      "kDLTPU", "kDLTPUHost", "kDLAscend"};
  for (int t = 0; t < (int)(sizeof names / sizeof *names); t++) {
    const char *got = hdal_dlpack_device_type_name((DLDeviceType)t);
    if (names[t]) ck_assert_msg(got && !strcmp(got, names[t]), "type %d: %s", t, got ? got : "NULL");
    else ck_assert_msg(!got, "type %d: %s, expected NULL", t, got);
  }
  static const int unknown[] = {22, 63, 64, 1000, -1, -1000, 2147483647};
  for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
    ck_assert_ptr_null(hdal_dlpack_device_type_name((DLDeviceType)unknown[i]));
}
END_TEST

/* The words hdal prints, from the library's one table; NULL for values that are no state or class. */
START_TEST(state_and_class_words) {
  ck_assert_str_eq(hdal_backend_state_name(HDAL_BACKEND_OK), "ok");
  ck_assert_str_eq(hdal_backend_state_name(HDAL_BACKEND_DISABLED), "disabled");
  ck_assert_str_eq(hdal_backend_state_name(HDAL_BACKEND_UNAVAILABLE), "unavailable");
  ck_assert_str_eq(hdal_backend_state_name(HDAL_BACKEND_FAILED), "failed");
  ck_assert_ptr_null(hdal_backend_state_name((hdal_backend_state_kind)0));
  ck_assert_ptr_null(hdal_backend_state_name((hdal_backend_state_kind)5));
  ck_assert_str_eq(hdal_runtime_class_name(HDAL_RUNTIME_PJRT), "pjrt");
  ck_assert_str_eq(hdal_runtime_class_name(HDAL_RUNTIME_IFRT_NATIVE), "ifrt-native");
  ck_assert_ptr_null(hdal_runtime_class_name((hdal_runtime_class)0));
  ck_assert_ptr_null(hdal_runtime_class_name((hdal_runtime_class)3));
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  Suite *s = suite_create("typed");
  TCase *tc = tcase_create("typed");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, every_state_with_counts_and_reason);
  tcase_add_test(tc, dlpack_device_type_names);
  tcase_add_test(tc, state_and_class_words);
  tcase_add_test(tc, state_struct_size_and_range);
  tcase_add_test(tc, attribute_values_as_data);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
