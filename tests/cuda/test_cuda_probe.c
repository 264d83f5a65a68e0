/* SPDX-License-Identifier: BSD-3-Clause */
/* For tests/gpu/: is there a CUDA driver with a device here?  Prints what it
 * found; exit 0 when a device answers, 1 otherwise.  Never part of `make check`
 * on its own. */
#include <stdio.h>
#include "fakes/cuda/testcuda.h"

int main(int argc, char **argv) {
  const char *lib = argc > 1 ? argv[1] : "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("%s\n", dlerror());
    return 1;
  }
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
  CUresult (*version)(int *) = (CUresult(*)(int *))dlsym(h, "cuDriverGetVersion");
  CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(h, "cuDeviceGetCount");
  int v = 0, n = 0;
  CUresult r = init && version && count ? init(0) : -1;
  if (r == 0) r = version(&v);
  if (r == 0) r = count(&n);
  if (r != 0 || n == 0) {
    printf("%s: cuInit/cuDeviceGetCount: CUresult %d, %d device(s)\n", lib, r, n);
    return 1;
  }
  printf("%s: driver %d, %d device(s)\n", lib, v, n);
  return 0;
}
