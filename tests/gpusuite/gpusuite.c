/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU suites' common part (gpusuite.h): the face under test and the fake. */
#include <limits.h>
#include "gpusuite.h"

const gpu_face *gpu;
const char *gpu_fake;
gpu_hooks gpu_hook;
bool gpu_real, gpu_two;

void gpu_init(const gpu_face *face) {
  /* Every GPU program chooses its backends itself and prints no diagnostics. */
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  gpu = face;
  gpu_fake = face->fake;
  gpu_real = getenv(face->real) != NULL;
  const char *n = getenv(face->devices);
  gpu_two = !gpu_real || (n && atoi(n) >= 2);
}

void gpu_open(void) {
  ck_assert_msg(gpu->open(&gpu_hook), "cannot open %s", gpu->library());
  ck_assert(gpu_real || gpu_hook.calls); /* the fake's hooks, found */
}

static void set(const char *name, const char *value, int overwrite) {
  char var[128];
  snprintf(var, sizeof var, "%s%s", gpu->prefix, name);
  setenv(var, value, overwrite);
}

void gpu_set(const char *name, const char *value) { set(name, value, 1); }

void gpu_set_default(const char *name, const char *value) { set(name, value, 0); }

const char *gpu_backends(bool cpu) {
  static char backends[64];
  snprintf(backends, sizeof backends, "%s%s", cpu ? "cpu," : "", gpu->platform);
  return backends;
}

hdal_context *gpu_context(const char *backends) {
  gpu_open();
  hdal_context *ctx = test_context_with(backends);
  const char *status = test_backend_status(ctx, gpu->platform);
  ck_assert_msg(status && !strncmp(status, "ok: ", 4), "%s", status);
  return ctx;
}

bool gpu_fake_path(char *buf, size_t len) {
  char path[PATH_MAX];
  const char *modules = getenv("HDAL_TEST_MODULES");
  snprintf(path, sizeof path, "%.3000s/%s.so", modules ? modules : ".libs", gpu_fake);
  /* absolute: the Level Zero loader wants one */
  return realpath(path, buf) && strlen(buf) < len;
}

void gpu_use_fake(void) {
  char path[PATH_MAX];
  ck_assert_msg(gpu_fake_path(path, sizeof path), "%s is not built", gpu_fake);
  gpu->name_fake(path);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
}

hdal_device *gpu_device_of(hdal_context *ctx, const char *platform, int local) {
  hdal_device *d = test_platform_device(ctx, platform, local);
  ck_assert_msg(d != NULL, "no %s device %d", platform, local);
  return d;
}

hdal_device *gpu_device(hdal_context *ctx, int ordinal) { return gpu_device_of(ctx, gpu->platform, ordinal); }

void gpu_assert_calls(const gpu_calls calls[GPU_CALLS]) {
  for (int i = 0; i < GPU_CALLS && calls[i].entry; i++)
    ck_assert_msg(gpu_hook.calls(calls[i].entry) == calls[i].n, "%s called %u times, expected %u", calls[i].entry,
                  gpu_hook.calls(calls[i].entry), calls[i].n);
}
