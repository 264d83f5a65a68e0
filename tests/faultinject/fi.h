/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal fault injection — the control interface of the interposer (fi.c).
 *
 * The interposer is preloaded (LD_PRELOAD) into a test process.  It counts the
 * fallible calls whose caller lies in hdal's own code (libhdal, libhdal-mpi,
 * hdal_*.so modules) and fails the Nth: allocations return NULL, hwloc and
 * OpenCL calls return their error, pthread_create returns EAGAIN, mmap and
 * madvise fail with ENOMEM, dlopen and dlsym find nothing, the fake CUDA
 * driver's calls CUDA_ERROR_OUT_OF_MEMORY.  It also
 * tracks what hdal allocates and the hwloc/OpenCL objects it creates, so a test
 * can check that everything came back.  A walk test looks these functions up
 * with dlsym(RTLD_DEFAULT, ...): a process without the interposer has none.
 */
#ifndef HDAL_FI_H
#define HDAL_FI_H

#include <stdbool.h>

/* Kinds of fallible calls. */
typedef enum {
  HDALFI_MEMORY = 0,  /* malloc, calloc, realloc, strdup, asprintf, posix_memalign, mmap, madvise, ... */
  HDALFI_THREAD = 1,  /* pthread_create */
  HDALFI_HWLOC = 2,   /* hwloc_topology_init, hwloc_topology_load */
  HDALFI_OPENCL = 3,  /* OpenCL entry points that can fail */
  HDALFI_DRIVER = 4,  /* CUDA driver calls, in the suite's fake driver (it asks hdalfi_driver_call) */
  HDALFI_LOADER = 5,  /* dlopen, dlsym */
  HDALFI_NKINDS = 6,
} hdalfi_kind;

typedef struct {
  long calls;            /* fallible calls by hdal from hdalfi_start to hdalfi_stop_injecting */
  long injected_at;      /* N of the injected failure, 0 when none was */
  hdalfi_kind kind;      /* of the injected call */
  char function[32];     /* its name, e.g. "calloc" */
  char caller[160];      /* "libhdal.so.0+0x1a2b" */
  long live_allocations; /* hdal allocations since start, not freed */
  long live_objects;     /* hwloc topologies, OpenCL and fake-driver objects hdal holds, since start */
} hdalfi_report;

/* Starts counting and tracking; the `nth` fallible call fails (0: none). */
typedef void hdalfi_start_fn(long nth);
/* No more failures; counting and tracking go on. */
typedef void hdalfi_stop_injecting_fn(void);
typedef void hdalfi_get_report_fn(hdalfi_report *out);
/* Stops everything. */
typedef void hdalfi_stop_fn(void);
/* For a fake library that hdal reaches through dlsym'd pointers (out of the
 * interposer's reach): counts a call `caller` made to `function`; nonzero when
 * this one must fail.  tests/fakes/cuda/ looks it up with dlsym(RTLD_DEFAULT). */
typedef int hdalfi_driver_call_fn(const char *function, const void *caller);
/* The same library's objects: `held` 1 when it made one for `caller`, 0 when
 * it was given back; those hdal still holds at the end are a leak. */
typedef void hdalfi_driver_object_fn(const void *object, int held, const void *caller);

#endif
