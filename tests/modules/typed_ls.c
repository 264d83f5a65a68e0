/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only backend module (never installed): devices whose attributes carry
 * types and flags (hdal_backend_attribute), for hdal-ls to show typed without
 * knowing their keys.  Device 0 computes on host CPU 1 (a topology cpuset),
 * device 1 on CPUs no NUMA node of tests/hdal-ls/hdal-ls-typed.sh's machine has.  Text
 * that looks like a number stays a string when given as one, and the core
 * refuses an attribute of a type it does not know.
 * tests/hdal-ls/hdal-ls-typed.sh links it as hdal_typedls.so into a directory of its own. */
#include <hdal/backend.h>

static hdal_error *typedls_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  static const hdal_backend_attribute attrs[] = {
      {"widgets", HDAL_ATTRIBUTE_UINT, {.uint = 42}},
      {"largest", HDAL_ATTRIBUTE_UINT, {.uint = UINT64_MAX}},
      {"shiny", HDAL_ATTRIBUTE_BOOL, {.boolean = true}},
      {"dull", HDAL_ATTRIBUTE_BOOL, {.boolean = false}},
      {"label", HDAL_ATTRIBUTE_STRING, {.string = "42"}},
      /* Strings that a reader must not take for numbers or booleans: */
      {"too_large", HDAL_ATTRIBUTE_STRING, {.string = "18446744073709551616"}},
      {"leading_zero", HDAL_ATTRIBUTE_STRING, {.string = "007"}},
      {"negative", HDAL_ATTRIBUTE_STRING, {.string = "-1"}},
      {"maybe", HDAL_ATTRIBUTE_STRING, {.string = "maybe"}},
      {"unknown_type", HDAL_ATTRIBUTE_STRING | 0x400u, {.string = "7"}}, /* the unknown flag is dropped */
  };
  /* Refused: a type the core does not know, a string without text, no key. */
  static const hdal_backend_attribute refused[] = {
      {"bad_type", 7u, {.uint = 7}}, {"no_text", HDAL_ATTRIBUTE_STRING, {.string = NULL}}, {NULL, 0, {.string = "x"}}};
  static const char *const cpusets[] = {"1", "64-127"};
  for (int i = 0; i < 2; i++) {
    hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
    info.kind = i ? "typed elsewhere" : "typed on CPU 1";
    info.local_hardware_id = i;
    info.dlpack_device = (DLDevice){kDLExtDev, i};
    info.runtime_class_reason = "test module";
    hdal_device *d = host->add_device(disc, &info);
    if (!d) return host->error_oom();
    bool ok = true;
    for (size_t a = 0; a < sizeof attrs / sizeof *attrs; a++)
      ok = ok && host->add_attribute(d, &attrs[a]);
    ok = ok && host->add_attribute(d, &(const hdal_backend_attribute){HDAL_ATTRIBUTE_CPUSET,
                                                                      HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY,
                                                                      {.string = cpusets[i]}});
    if (!ok) return host->error_oom();
    for (size_t a = 0; a < sizeof refused / sizeof *refused; a++)
      if (host->add_attribute(d, &refused[a])) return host->error_new(HDAL_INTERNAL, "attribute %zu taken", a);
  }
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(typedls) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "typedls",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = typedls_discover,
};
