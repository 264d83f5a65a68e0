/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU suites: each concern written once and run against every GPU API's
 * face (docs/design.md, "One GPU layer").
 *
 *   discovery.c  what the API's programs share of discovery        test_cuda, test_rocm, test_levelzero
 *   buffers.c    import, export, copies, streams, out of memory     test_cuda_buffers, test_rocm_buffers,
 *                                                                   test_levelzero_buffers
 *   pool.c       the device memory pool                             test_cuda_pool, test_rocm_pool,
 *                                                                   test_levelzero_buffers
 *   walks.c      fault-injection walks                              test_fi_dlpack (CUDA), test_fi_rocm,
 *                                                                   test_fi_levelzero
 *
 * A face (tests/fakes/cuda/testcuda.c, tests/fakes/hip/testhip.c,
 * tests/fakes/ze/testze.c) makes the test's own calls of its API — device and
 * pinned memory, copies, streams — against the fake or, under tests/gpu/, the
 * machine's runtime, and finds the fake's hooks.  What hdal says and does for
 * that API (its messages, the calls it makes) is the data each program hands
 * its suite (gpu_buffers, gpu_pool, gpu_walks below).  What only one API has
 * stays in that API's program. */
#ifndef HDAL_GPUSUITE_H
#define HDAL_GPUSUITE_H

#include <stdbool.h>
#include <stdint.h>
#include "testgpu.h"

/* The fake's hooks: NULL with a real runtime. */
typedef struct {
  size_t (*live_allocations)(void); /* allocations not freed */
  unsigned (*calls)(const char *entry); /* calls of a counted entry point */
  void (*slow_launch)(void); /* slow work (a kernel) on hdal's stream 0, done at its next synchronisation */
} gpu_hooks;

/* A GPU API as the tests use it.  The calls answer 0 on success, the API's
 * error otherwise; `ordinal` is the GPU's. */
typedef struct {
  const char *platform;  /* hdal's backend and platform: "cuda" */
  unsigned vendor;       /* the PCI vendor of its GPUs, as its module says: 0x10de */
  DLDeviceType memory;   /* DLPack type of its device memory: kDLCUDA */
  DLDeviceType pinned;   /* of its page-locked host memory: kDLCUDAHost */
  const char *real;      /* set under tests/gpu/: the machine's runtime, not the fake ("HDAL_TEST_REAL_CUDA") */
  const char *devices;   /* then how many GPUs the two-GPU cases may use ("HDAL_TEST_CUDA_DEVICES") */
  const char *fake;      /* the fake, a module of HDAL_TEST_MODULES: "fakecuda" */
  const char *prefix;    /* of the fake's settings: "FAKECUDA_" */
  const char *slow;      /* the setting that makes slow_launch's work slow: "FAKECUDA_SLOW_LEGACY" */
  bool guarded;          /* the fake's device memory faults on host access */
  bool mempools;         /* the fake has the device's default pool, which its setting MEMPOOLS=0 takes away */
  void (*name_fake)(const char *path); /* has hdal load the fake at `path` */
  /* Opens and initialises the runtime for the test's own calls; false when it cannot. */
  bool (*open)(gpu_hooks *hooks);
  const char *(*library)(void); /* the library open() tried */
  int (*count)(int *n);          /* its GPUs */
  int (*alloc)(int ordinal, const void *host, size_t n, void **out); /* device memory holding a copy of host */
  int (*free)(int ordinal, void *p);
  int (*read)(void *host, const void *p, size_t n);
  int (*pinned_alloc)(size_t n, void **out);
  int (*pinned_free)(void *p);
  /* NULL where hdal takes no stream of the API: work queued on a new
   * non-blocking stream of GPU 0, which the caller has not waited for. */
  int (*late_write)(void *p, const void *host, size_t n, intptr_t *stream);
  int (*stream_destroy)(intptr_t stream);
} gpu_face;

extern const gpu_face gpu_face_cuda, gpu_face_hip, gpu_face_ze;

/* The face under test, its fake of the moment (a variant: fakehip5), its hooks
 * once opened, whether the runtime is the machine's, and whether the two-GPU
 * cases run. */
extern const gpu_face *gpu;
extern const char *gpu_fake;
extern gpu_hooks gpu_hook;
extern bool gpu_real, gpu_two;

/* Chooses the face (HDAL_BACKENDS and HDAL_DEBUG unset); the environment says real or fake and how many GPUs. */
void gpu_init(const gpu_face *face);
/* Opens the runtime (gpu->open), asserting it, and with the fake its hooks. */
void gpu_open(void);
/* The fake's setting `name` (without its prefix); gpu_set_default leaves one the caller made. */
void gpu_set(const char *name, const char *value);
void gpu_set_default(const char *name, const char *value);
/* "cpu,<the face's backend>" (cpu) or the face's backend alone, in a static buffer. */
const char *gpu_backends(bool cpu);
/* The test's own runtime opened (gpu_open), and a context of `backends` in
 * which the face's backend is "ok: ...". */
hdal_context *gpu_context(const char *backends);
/* Points hdal at the fake of the moment, on a small synthetic machine. */
void gpu_use_fake(void);
/* The fake's path (HDAL_TEST_MODULES or .libs) in buf; false when it is not built. */
bool gpu_fake_path(char *buf, size_t len);
/* The device of `platform` with local hardware id `local`, asserted. */
hdal_device *gpu_device_of(hdal_context *ctx, const char *platform, int local);
/* GPU `ordinal` of the face. */
hdal_device *gpu_device(hdal_context *ctx, int ordinal);
/* Each `entry` the fake has counted `n` times: up to GPU_CALLS of them, to
 * the first NULL entry. */
#define GPU_CALLS 4
typedef struct {
  const char *entry;
  unsigned n;
} gpu_calls;
void gpu_assert_calls(const gpu_calls calls[GPU_CALLS]);

/* ---- the suites: each program hands its suite what hdal says and does for its API ---- */

/* Import, export, copies and streams (buffers.c). */
typedef struct {
  const char *peer_copy;   /* the fake's entry of a copy between GPUs, NULL: not counted */
  const char *enable_peer; /* the fake's entry that enables peer access, NULL: the API has none */
  const char *staging;     /* of the host memory a copy between GPUs that cannot reach each other goes
                            * through ("zeMemAllocHost"), NULL: the runtime's peer copy stages itself */
  const char *wait_event;  /* of a stream waiting for an event: "cuStreamWaitEvent" */
  const char *record;      /* of recording an event: "cuEventRecord" */
  int export_on;           /* the GPU of the export case (where there are two) */
  /* hdal's messages */
  void (*wrong_gpu)(char *out, size_t len, const void *data); /* a tensor claims GPU 1, its data is on 0 */
  void (*unknown)(char *out, size_t len, const void *data);   /* memory the runtime does not know */
  const char *(*out_of_memory)(void); /* 1024 bytes of device memory, 4096 asked for */
} gpu_buffers;
/* The context of `backends` (with the face's own: ok), on the fake with two
 * GPUs unless its DEVICES setting says otherwise; the runtime for the test's
 * own calls is opened here, in the test's own process. */
hdal_context *gpu_buffers_setup(const char *backends);
/* Adds the cases that apply to the face (the two-GPU ones where gpu_two, the
 * fake's own where it is no real runtime).  One gpu_buffers a program. */
void gpu_buffers_add(TCase *tc, const gpu_buffers *spec);

/* The device memory pool (pool.c), on GPU 0 of the fake alone: the calls the
 * fake counts at each step. */
typedef struct {
  void (*synchronize)(void); /* GPU 0's default stream waited for; NULL: nothing to wait for */
  void (*keep_device)(bool keep); /* another user of GPU 0 holds it meanwhile; NULL: none */
  /* the device's default pool (gpu_face::mempools) */
  gpu_calls default_reused[GPU_CALLS], default_released[GPU_CALLS], default_trimmed[GPU_CALLS];
  gpu_calls default_retried[GPU_CALLS]; /* out of memory: trimmed, tried again */
  gpu_calls default_limited[GPU_CALLS]; /* over HDAL_MEMORY_POOL_LIMIT: trimmed before asking */
  /* hdal's own pool */
  gpu_calls hdal_reused[GPU_CALLS], hdal_trimmed[GPU_CALLS];
  gpu_calls hdal_retried[GPU_CALLS];  /* out of memory: trimmed, tried again */
  gpu_calls fenced[GPU_CALLS];        /* a block freed behind slow work, not handed out */
  gpu_calls fence_done[GPU_CALLS];    /* handed out once the work is done */
  gpu_calls fence_released[GPU_CALLS], fence_trimmed[GPU_CALLS]; /* freed behind more slow work, trimmed */
  gpu_calls caching_off[GPU_CALLS];   /* HDAL_MEMORY_POOL=0: two buffers made and released */
} gpu_pool;
/* Adds the cases of hdal's pool, and with `default_pool` (the fake of the
 * tcase has one) those of the default pool.  One gpu_pool a program. */
void gpu_pool_add(TCase *tc, const gpu_pool *spec, bool default_pool);
/* hdal_memory_stats of GPU 0, asserted. */
hdal_memory_stats gpu_pool_stats(hdal_context *ctx);
/* The first n (up to 1024) floats 0, 1, ... copied onto GPU 0, read back and checked. */
hdal_buffer *gpu_pool_copy(hdal_context *ctx, int64_t n);

/* Discovery (discovery.c): helpers for the API's own cases, and shared cases. */
typedef struct {
  const char *key, *value[2]; /* the attribute of each of the two devices */
} gpu_attribute;
/* Two devices named, placed and sized by the fake's settings, their
 * attributes as `attrs` says (to a NULL key), after the CPU device. */
void gpu_assert_two_devices(const char *names[2], const char *pci[2], const char *memory, const gpu_attribute *attrs);
/* A context of `backends` (the CPU's and the face's) created without a word on
 * stderr: the face's status, none of its devices, the CPU alone if asked for. */
void gpu_assert_status_quietly(const char *backends, const char *status);
/* The context of `backends` made with HDAL_DEBUG set wrote each of `lines`. */
void gpu_assert_debug(const char *backends, const char *const *lines);
/* A context that does not ask for the face never loads `library`. */
void gpu_assert_not_loaded_unless_asked(const char *library);
/* Against the machine's runtime (tests/gpu/): the devices it counts, with
 * each attribute of `patterns` (key, extended regex; to a NULL key). */
void gpu_assert_real_devices(const char *const (*patterns)[2]);
/* Adds the shared discovery cases: NUMA nodes from PCI bus ids, a fork child's
 * status, and the module linking nothing named by `foreign` (a NULL-ended list). */
void gpu_discovery_add(TCase *tc, const char *const *foreign);

/* Fault-injection walks (walks.c, for the programs of tests/faultinject/,
 * which start with walk_bootstrap): each named as it was for its platform
 * (walk_import_view_on_rocm). */
typedef struct {
  const char *placing; /* the call whose failure leaves hdal unable to say where memory is; NULL: any of the runtime's */
} gpu_walks;
void gpu_walks_add(TCase *tc, const gpu_walks *spec);

#endif /* HDAL_GPUSUITE_H */
