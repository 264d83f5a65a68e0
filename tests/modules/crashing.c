/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module whose discovery crashes (a NULL store), for tests/hardening/badinput.sh.
 * A module runs inside the caller's process, so nothing can contain this: the
 * test checks what hdal does promise (docs/hardening.md). */
#include <signal.h>
#include <hdal/backend.h>

static hdal_error *crashing_discover(const hdal_backend_host *host, hdal_backend_discovery *disc, void **state) {
  (void)host, (void)disc, (void)state;
  raise(SIGSEGV); /* what a NULL dereference in a driver does, without undefined behaviour here */
  return NULL;
}

HDAL_BACKEND_DEFINE(crashing) = {
    .abi_version = HDAL_BACKEND_ABI_VERSION,
    .name = "crashing",
    .platform = "crashing",
    .runtime_class = HDAL_RUNTIME_PJRT,
    .discover = crashing_discover,
};
