/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module (never on the suite's module path: tests link it as
 * hdal_oddities.so where they want it) whose devices are what a careless or
 * hostile third-party module may hand hdal.
 *
 * Accepted (odd, but within the device rules of docs/backend-abi.md), by local id:
 *   0        kind with ESC sequences, NUMA node 1000000, memory 2^64-1
 *   1        kind with CR and LF forging an hdal-ls row, NUMA node INT_MAX
 *   2        kind of invalid UTF-8 (overlong, surrogate, above U+10FFFF, 0xFF),
 *            an attribute whose key and value are hostile too
 *   3        a 5000-byte kind and two 5000-byte keys that differ after byte 4096
 *            (hdal keeps 4096 bytes of each: one attribute), runtime class 7
 *   INT_MAX  NUMA node 0
 * Refused (the backend's status counts them):
 *   -1       negative local hardware id
 *   1 again  a second device with local id 1
 *   10       NUMA node -5
 *   11       DLPack device type -3
 * No buffer operations: every device is IFRT-native. */
#include <limits.h>
#include <string.h>
#include <hdal/backend.h>

static char long_kind[5001], long_key_a[5001], long_key_b[5001];

static hdal_error *odd_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  memset(long_kind, 'k', 5000);
  memset(long_key_a, 'a', 5000);
  memcpy(long_key_b, long_key_a, 5000);
  long_key_b[4999] = 'b';
  static const struct {
    int id, numa, dl_type;
    uint64_t memory;
    const char *kind;
    int runtime_class;
  } devices[] = {
      {0, 1000000, kDLExtDev, UINT64_MAX, "\x1b[31mred\x1b[0m \x1b]0;title\x07 device", 0},
      {1, INT_MAX, kDLExtDev, 1, "forged)\r\n  opencl   ok: 9 devices (", 0},
      {2, -1, kDLExtDev, 0, "bad \xe0\x80\x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xff utf-8", 0},
      {3, 0, kDLExtDev, 0, long_kind, 7},
      {INT_MAX, 0, kDLExtDev, 4096, "largest local id", 0},
      {-1, 0, kDLExtDev, 0, "negative local id", 0},
      {1, 0, kDLExtDev, 0, "second device with local id 1", 0},
      {10, -5, kDLExtDev, 0, "NUMA node -5", 0},
      {11, 0, -3, 0, "DLPack device type -3", 0},
  };
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
    hdal_backend_device_info info = {
        .kind = devices[i].kind,
        .local_hardware_id = devices[i].id,
        .dlpack_device = {(DLDeviceType)devices[i].dl_type, devices[i].id},
        .memory_bytes = devices[i].memory,
        .numa_node = devices[i].numa,
        .runtime_class = (hdal_runtime_class)devices[i].runtime_class,
    };
    hdal_device *d = host->add_device(disc, &info);
    if (!d || !host->add_attribute(d, HDAL_BACKEND_STRING("oddity", devices[i].kind))) return host->error_oom();
    if (devices[i].id == 2 && !host->add_attribute(d, HDAL_BACKEND_STRING("\x1b[2J\r\nkey\xff", "value\x1b[5m\n\xc0\xaf")))
      return host->error_oom();
    if (devices[i].id == 3 &&
        (!host->add_attribute(d, HDAL_BACKEND_STRING(long_key_a, "first")) || !host->add_attribute(d, HDAL_BACKEND_STRING(long_key_b, "second"))))
      return host->error_oom();
  }
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(oddities) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "oddities",
    .platform = "oddities",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = odd_discover,
};
