/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module with a wrong ABI number: the loader must refuse it. */
#include <hdal/backend.h>

static hdal_error *badabi_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  return host->error_new(HDAL_INTERNAL, "badabi: discover must never run");
}

HDAL_BACKEND_DEFINE(badabi) = {
    .abi_version = 42, /* no hdal has had it */
    .name = "badabi",
    .platform = "badabi",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .discover = badabi_discover,
};
