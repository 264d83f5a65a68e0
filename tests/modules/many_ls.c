/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only backend module (never installed): as many devices as
 * HDAL_TEST_MANY_DEVICES says (default 16), for hdal-ls's "same hardware"
 * rule at scale (tests/hdal-ls/hdal-ls-scale.sh, bench/hdal-ls-scale.sh).  Device i
 * is built from i % 8, in blocks b = i / 8:
 *   0  PCI bus id P(b)                    } one piece of hardware per block,
 *   1  PCI bus id P(b) in upper case,     } joined through 1 (PCI to 0,
 *      UUID U(b)                          } UUID to 2)
 *   2  UUID U(b) in lower case            }
 *   3  PCI bus id 0000:ff:1f.7, shared by every such device (one large group)
 *   4  topology cpuset 0-7: every NUMA node of an 8-CPU machine, and 4, 5, 7
 *   5  topology cpuset 2: the node holding CPU 2, and 4
 *   6  topology cpuset 8-9: no CPU of an 8-CPU machine; only other 6s
 *   7  in odd blocks, PCI bus id 0000:ff:1f.7 (the large group) and cpuset 3-4;
 *      in even blocks nothing.
 * tests/hdal-ls/hdal-ls-scale.sh links it as hdal_manyls.so into a directory of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <hdal/backend.h>

static hdal_error *manyls_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  const char *env = getenv("HDAL_TEST_MANY_DEVICES");
  long n = env ? strtol(env, NULL, 10) : 16;
  if (n < 0 || n > 1000000) n = 0;
  for (long i = 0; i < n; i++) {
    long b = i / 8;
    int r = (int)(i % 8);
    char kind[32], pci[16], uuid[48];
    snprintf(kind, sizeof kind, "Many %ld", i);
    snprintf(pci, sizeof pci, r == 1 ? "%04lX:%02lX:%02lX.0" : "%04lx:%02lx:%02lx.0", b / 8192 % 65536, b / 32 % 256,
             b % 32);
    snprintf(uuid, sizeof uuid, r == 1 ? "MANY-%08lX" : "many-%08lx", b);
    hdal_backend_device_info info = HDAL_BACKEND_DEVICE_INFO_INIT;
    info.kind = kind;
    info.local_hardware_id = (int)i;
    info.dlpack_device = (DLDevice){kDLExtDev, (int32_t)i};
    info.numa_node = r == 5 ? 0 : -1;
    info.runtime_class_reason = "test module";
    hdal_device *d = host->add_device(disc, &info);
    if (!d) return host->error_oom();
    bool odd = b % 2, ok = true;
    const char *cpuset = r == 4 ? "0-7" : r == 5 ? "2" : r == 6 ? "8-9" : r == 7 && odd ? "3-4" : NULL;
    if (r <= 1) ok = ok && host->add_attribute(d, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_PCI_BUS_ID, pci));
    if (r == 1 || r == 2) ok = ok && host->add_attribute(d, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_UUID, uuid));
    if (r == 3 || (r == 7 && odd))
      ok = ok && host->add_attribute(d, HDAL_BACKEND_STRING(HDAL_ATTRIBUTE_PCI_BUS_ID, "0000:ff:1f.7"));
    if (cpuset)
      ok = ok && host->add_attribute(d, &(const hdal_backend_attribute){
                                            HDAL_ATTRIBUTE_CPUSET, HDAL_ATTRIBUTE_STRING | HDAL_ATTRIBUTE_TOPOLOGY,
                                            {.string = cpuset}});
    if (!ok) return host->error_oom();
  }
  *state = NULL;
  return NULL;
}

HDAL_BACKEND_DEFINE(manyls) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "manyls",
    .runtime_class = HDAL_RUNTIME_IFRT_NATIVE,
    .dl_device_types = HDAL_DL_TYPE_BIT(kDLExtDev),
    .discover = manyls_discover,
};
