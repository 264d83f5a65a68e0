/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only backend module (never installed) that gives hdal-ls what a careless
 * or hostile third-party module may give: devices that claim platform "cpu"
 * without the CPU backend's "cores"/"pus" attributes (or with junk text in them),
 * NUMA nodes 1,000,000 and INT_MAX, 2^64-1 bytes of memory, names with ESC
 * sequences, CR and LF that would forge table rows, and strings that are not
 * UTF-8 (overlong forms, a surrogate, a code point above U+10FFFF).
 * tests/hdal-ls/hdal-ls.sh links it as hdal_hostilels.so into a directory of its own. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <hdal/backend.h>

/* A count, typed as the CPU backend's are, or junk text where one is expected. */
static bool add_count(const hdal_backend_host *host, hdal_device *d, const char *key, const char *text) {
  char *end;
  unsigned long long n = strtoull(text, &end, 10);
  hdal_backend_attribute a = {key, HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY, {.string = text}};
  if (*text && !*end) a = (hdal_backend_attribute){key, HDAL_ATTRIBUTE_UINT | HDAL_ATTRIBUTE_TOPOLOGY, {.uint = n}};
  return host->add_attribute(d, &a);
}

static hdal_error *hostilels_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  static const struct {
    const char *kind;
    int numa_node;
    const char *cores, *pus;
  } devs[] = {
      {"evil\x1b[31mred\x1b[0m\r\n9   0     opencl  forged row", 1000000, NULL, NULL},
      {"overlong \xe0\x80\x80 \xc0\xaf surrogate \xed\xa0\x80 big \xf4\x90\x80\x80 cut \xe2\x82", INT_MAX, "many", ""},
      {"tab\there \\ back \xc2\x9b" "31m c1 \xe2\x80\xae rlo", -1, "2", "4"},
  };
  for (int i = 0; i < (int)(sizeof devs / sizeof *devs); i++) {
    hdal_backend_device_info info = {
        .kind = devs[i].kind,
        .local_hardware_id = i,
        .dlpack_device = {kDLExtDev, i},
        .memory_bytes = i == 0 ? UINT64_MAX : (uint64_t)1 << 30,
        .numa_node = devs[i].numa_node,
        .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
        .runtime_class_reason = "hostile\x1b]0;title\x07 reason\n",
    };
    hdal_device *d = host->add_device(disc, &info);
    if (!d) return host->error_oom();
    bool ok = host->add_attribute(
        d, HDAL_BACKEND_STRING("bytes", "\xe0\x80\x80|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xf0\x9f\x98\x80"));
    if (devs[i].cores) ok = ok && add_count(host, d, "cores", devs[i].cores);
    if (devs[i].pus) ok = ok && add_count(host, d, "pus", devs[i].pus);
    if (!ok) return host->error_oom();
  }
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(hostilels) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "hostilels",
    .platform = "cpu",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = hostilels_discover,
};
