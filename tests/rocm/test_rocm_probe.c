/* SPDX-License-Identifier: BSD-3-Clause */
/* For tests/gpu/: is there a HIP runtime with a device here?  Prints what it
 * found; exit 0 when a device answers, 1 otherwise.  Never part of `make check`
 * on its own. */
#include <stdio.h>
#include "fakes/hip/testhip.h"

int main(void) {
  const char *path = NULL;
  void *h = test_hip_dlopen(&path);
  if (!h) {
    printf("%s\n", dlerror());
    return 1;
  }
  hipError_t (*init)(unsigned) = (hipError_t(*)(unsigned))dlsym(h, "hipInit");
  hipError_t (*version)(int *) = (hipError_t(*)(int *))dlsym(h, "hipRuntimeGetVersion");
  hipError_t (*count)(int *) = (hipError_t(*)(int *))dlsym(h, "hipGetDeviceCount");
  int v = 0, n = 0;
  hipError_t r = init && version && count ? init(0) : -1;
  if (r == 0) r = version(&v);
  if (r == 0) r = count(&n);
  if (r != 0 || n == 0) {
    printf("%s: hipInit/hipGetDeviceCount: hipError_t %d, %d device(s)\n", path, r, n);
    return 1;
  }
  printf("%s: runtime %d, %d device(s)\n", path, v, n);
  return 0;
}
