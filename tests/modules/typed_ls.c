/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only backend module (never installed): devices whose attributes carry
 * types and flags (hdal_backend_host::add_attribute_typed), for hdal-ls to show
 * typed without knowing their keys.  Device 0 computes on host CPU 1 (a topology
 * cpuset), device 1 on CPUs no NUMA node of tests/hdal-ls-typed.sh's machine
 * has.  Values that do not read as their type are kept as strings by the core.
 * tests/hdal-ls-typed.sh links it as hdal_typedls.so into a directory of its own. */
#include <hdal/backend.h>

static hdal_error *typedls_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  static const struct {
    const char *key, *value;
    unsigned type;
  } attrs[] = {
      {"widgets", "42", HDAL_ATTRIBUTE_UINT},
      {"largest", "18446744073709551615", HDAL_ATTRIBUTE_UINT},
      {"shiny", "yes", HDAL_ATTRIBUTE_BOOL},
      {"dull", "false", HDAL_ATTRIBUTE_BOOL},
      {"label", "42", HDAL_ATTRIBUTE_STRING},
      /* Kept as strings: */
      {"too_large", "18446744073709551616", HDAL_ATTRIBUTE_UINT},
      {"leading_zero", "007", HDAL_ATTRIBUTE_UINT},
      {"negative", "-1", HDAL_ATTRIBUTE_UINT},
      {"maybe", "maybe", HDAL_ATTRIBUTE_BOOL},
      {"unknown_type", "7", 7u | 0x400u},
  };
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
      ok = ok && host->add_attribute(d, attrs[a].key, attrs[a].value, attrs[a].type);
    ok = ok && host->add_attribute(d, HDAL_ATTRIBUTE_CPUSET, cpusets[i],
                                         HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY);
    if (!ok) return host->error_oom();
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
