/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI layer under mpirun (docs/dlpack.md, "Process tables"; docs/mpi.md): run by the scripts tests/mpi/NAME.test with
 * 1, 2 and 3 ranks.  argv[1] picks the test case: "global" (the default),
 * "backends" (ranks started with different HDAL_BACKENDS, MPMD), "modules",
 * "failures" or "hosts" (ranks on simulated hosts, tests/mpi/hosts-*.test).
 *
 * MPI is initialised once per process and may not be used in a forked child, so
 * this suite runs without Check's fork (CK_NOFORK, set below) between MPI_Init
 * and MPI_Finalize.  So that a rank failing an assertion cannot leave the others
 * waiting in a collective, every test makes all its collective calls (the
 * whole_view() helper) before its first assertion; the scripts also run mpirun
 * under a timeout.
 *
 * Each rank enumerates a synthetic machine of its own: rank r has r + 1 NUMA
 * nodes (so r + 1 CPU devices) of r + 2 cores each, so the global table of a
 * job is known: process p's devices are ids p(p+1)/2 .. p(p+1)/2 + p.
 */
#include <unistd.h>
#include <hdal/mpi.h>
#include "mpi_testutil.h"

static int rank, size;

static void use_rank_topology(void) {
  char synth[96];
  snprintf(synth, sizeof synth, "pack:1 numa:%d core:%d pu:1", rank + 1, rank + 2);
  setenv("HWLOC_SYNTHETIC", synth, 1);
}

/* FNV-1a over everything a device says, addressability aside (it differs by rank on purpose). */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = p; n--; c++) h = (h ^ *c) * 0x100000001b3ULL;
  return h;
}
static uint64_t fnv_str(uint64_t h, const char *s) { return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "\xff", 1); }

static uint64_t table_digest(const hdal_context *ctx) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    DLDevice dl = hdal_device_dlpack_device(d);
    long long v[8] = {hdal_device_id(d), hdal_device_process_index(d), hdal_device_local_hardware_id(d),
                      hdal_device_runtime_class(d), dl.device_type, dl.device_id,
                      (long long)hdal_device_memory_bytes(d), hdal_device_numa_node(d)};
    h = fnv(h, v, sizeof v);
    h = fnv_str(fnv_str(fnv_str(h, hdal_device_platform(d)), hdal_device_kind(d)), hdal_device_runtime_class_reason(d));
    const char *k, *val;
    for (size_t a = 0; hdal_device_attribute(d, a, &k, &val); a++) h = fnv_str(fnv_str(h, k), val);
    /* Its host and the hardware it is: the same on every rank too. */
    int same[64];
    size_t nsame = 0;
    hdal_error *e = hdal_device_same_hardware(d, same, 64, &nsame);
    long long w[4] = {hdal_device_host_index(d), hdal_device_hardware_index(d), e ? -1 : (long long)nsame,
                      (long long)hdal_context_host_count(ctx)};
    hdal_error_destroy(e);
    h = fnv(fnv_str(h, hdal_device_host(d)), w, sizeof w);
    if (nsame) h = fnv(h, same, (nsame < 64 ? nsame : 64) * sizeof *same);
  }
  return h;
}

/* What every rank learns collectively; assertions come after. */
typedef struct {
  hdal_error *err;
  hdal_context *ctx;
  bool same_table; /* min and max of the digests agree over the job */
  long long min_count, max_count;
} view;

static view selected_view(MPI_Comm comm, const char *backends, const char *selector) {
  view v = {0};
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends, .device_selector = selector};
  v.err = hdal_mpi_context_create(comm, &o, &v.ctx);
  uint64_t h = v.ctx ? table_digest(v.ctx) : 0, hr[2] = {h, ~h};
  long long n = v.ctx ? (long long)hdal_context_device_count(v.ctx) : -1, nr[2] = {n, -n};
  MPI_Allreduce(MPI_IN_PLACE, hr, 2, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, nr, 2, MPI_LONG_LONG, MPI_MIN, comm);
  v.same_table = hr[0] == ~hr[1];
  v.min_count = nr[0];
  v.max_count = -nr[1];
  return v;
}

static view whole_view(MPI_Comm comm, const char *backends) { return selected_view(comm, backends, NULL); }

static hdal_context *view_ok(view v) {
  ck_assert_ok(v.err);
  ck_assert_ptr_nonnull(v.ctx);
  return v.ctx;
}

/* ---- a host tensor whose deleter is counted ---- */

static int deleted;
static float host_data[6] = {1, 2, 3, 4, 5, 6};
static int64_t host_shape[2] = {2, 3};

static void count_deleter(DLManagedTensor *t) {
  (void)t;
  deleted++;
}

/* A capsule of the host tensor *t (host_data), its deleter's calls counted in `deleted` from 0. */
static hdal_capsule *host_capsule(DLManagedTensor *t) {
  *t = (DLManagedTensor){0};
  t->dl_tensor.data = host_data;
  t->dl_tensor.device = (DLDevice){kDLCPU, 0};
  t->dl_tensor.ndim = 2;
  t->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
  t->dl_tensor.shape = host_shape;
  t->deleter = count_deleter;
  deleted = 0;
  hdal_capsule *cap = hdal_capsule_wrap(t);
  ck_assert_ptr_nonnull(cap);
  return cap;
}

/* An import of capsule cap (of tensor t) onto d, another process's device, is refused with the
 * message of docs/dlpack.md; nothing is made and the capsule is as it was. */
static void import_refused(hdal_context *ctx, hdal_capsule *cap, const DLManagedTensor *t, hdal_device *d) {
  hdal_buffer *buf = (hdal_buffer *)&buf;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, d, NULL, &buf), HDAL_FAILED_PRECONDITION,
                  "DLPack is only supported for devices addressable by the current process.");
  ck_assert_ptr_null(buf);
  ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  ck_assert_ptr_eq(hdal_capsule_pointer(cap), t);
  ck_assert_int_eq(deleted, 0);
}

/* ---- global: every rank with the CPU backend on its own machine ---- */

START_TEST(same_table_on_every_rank) {
  use_rank_topology();
  view v = whole_view(MPI_COMM_WORLD, "cpu");
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  long long expected = (long long)size * (size + 1) / 2;
  ck_assert_int_eq(v.min_count, expected);
  ck_assert_int_eq(v.max_count, expected);
  ck_assert_int_eq(hdal_context_process_index(ctx), rank);
  ck_assert_int_eq(hdal_context_process_count(ctx), size);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(devices_in_global_order) {
  use_rank_topology();
  hdal_context *ctx = view_ok(whole_view(MPI_COMM_WORLD, "cpu"));
  size_t i = 0;
  for (int p = 0; p < size; p++)
    for (int j = 0; j <= p; j++, i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      ck_assert_ptr_nonnull(d);
      char cores[16];
      snprintf(cores, sizeof cores, "%d", p + 2);
      ck_assert_int_eq(hdal_device_id(d), (int)i);
      ck_assert_int_eq(hdal_device_process_index(d), p);
      ck_assert_int_eq(hdal_device_local_hardware_id(d), j);
      ck_assert_str_eq(hdal_device_platform(d), "cpu");
      ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_PJRT);
      ck_assert_int_eq(hdal_device_numa_node(d), j);
      ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLCPU);
      ck_assert_str_eq(hdal_device_attribute_get(d, "cores"), cores); /* process p's own machine */
    }
  ck_assert_ptr_null(hdal_context_device(ctx, i));
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(own_devices_addressable_and_only_those) {
  use_rank_topology();
  hdal_context *ctx = view_ok(whole_view(MPI_COMM_WORLD, "cpu"));
  int own = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_is_addressable(d), hdal_device_process_index(d) == rank);
    own += hdal_device_is_addressable(d);
  }
  ck_assert_int_eq(own, rank + 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(import_onto_another_ranks_device_refused) {
  use_rank_topology();
  hdal_context *ctx = view_ok(whole_view(MPI_COMM_WORLD, "cpu"));
  DLManagedTensor t;
  hdal_capsule *cap = host_capsule(&t);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_process_index(d) != rank) import_refused(ctx, cap, &t, d);
  }
  /* The same capsule still imports onto this rank's device, zero-copy. */
  hdal_device *own = hdal_context_device(ctx, (size_t)rank * (rank + 1) / 2);
  ck_assert_int_eq(hdal_device_process_index(own), rank);
  hdal_buffer *buf = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, own, NULL, &buf));
  ck_assert_ptr_eq(hdal_buffer_data(buf), host_data);
  ck_assert_ptr_eq(hdal_buffer_device(buf), own);
  ck_assert_str_eq(hdal_capsule_name(cap), "used_dltensor");
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 0);
  hdal_buffer_release(buf);
  ck_assert_int_eq(deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* Routing by DLDevice (no target given) must land on this rank's devices, never on another's. */
START_TEST(routed_import_stays_on_this_rank) {
  use_rank_topology();
  hdal_context *ctx = view_ok(whole_view(MPI_COMM_WORLD, "cpu"));
  DLManagedTensor t;
  hdal_capsule *cap = host_capsule(&t);
  hdal_buffer *buf = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, cap, NULL, NULL, &buf));
  ck_assert_int_eq(hdal_device_process_index(hdal_buffer_device(buf)), rank);
  ck_assert(hdal_device_is_addressable(hdal_buffer_device(buf)));
  ck_assert_ptr_eq(hdal_buffer_data(buf), host_data);
  hdal_buffer_release(buf);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* A communicator of one rank: only this rank's devices, process index 0. */
START_TEST(self_communicator_sees_only_this_rank) {
  use_rank_topology();
  view v = whole_view(MPI_COMM_SELF, "cpu");
  hdal_context *ctx = view_ok(v);
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  ck_assert_uint_eq(hdal_context_device_count(ctx), (size_t)rank + 1);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    ck_assert(hdal_device_is_addressable(hdal_context_device(ctx, i)));
  hdal_context_destroy(ctx);
}
END_TEST

/* Ranks split in two communicators (even, odd ranks): each builds its own view, indices are ranks in it. */
START_TEST(split_communicators_build_their_own_views) {
  use_rank_topology();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int hrank, hsize;
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  view v = whole_view(half, "cpu");
  MPI_Comm_free(&half);
  hdal_context *ctx = view_ok(v);
  ck_assert(v.same_table);
  ck_assert_int_eq(hdal_context_process_index(ctx), hrank);
  ck_assert_int_eq(hdal_context_process_count(ctx), hsize);
  /* World ranks rank%2, rank%2 + 2, ...: world rank w has w + 1 devices. */
  size_t expected = 0;
  for (int w = rank % 2; w < size; w += 2) expected += (size_t)w + 1;
  ck_assert_uint_eq(hdal_context_device_count(ctx), expected);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- modules: each rank started with its own HDAL_BACKEND_PATH (MPMD) ----
 * Rank HDAL_TEST_MODULE_RANK's directory holds the test module probea, the
 * others' hold none: every rank still builds the same table. */

START_TEST(ranks_with_different_modules_agree) {
  use_rank_topology();
  unsetenv("HDAL_BACKENDS");
  const char *with = getenv("HDAL_TEST_MODULE_RANK");
  ck_assert_ptr_nonnull(with);
  int owner = atoi(with);
  view v = whole_view(MPI_COMM_WORLD, NULL); /* every backend this rank's path offers */
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  ck_assert_int_eq(v.min_count, v.max_count);
  /* The device order (docs/reference.md): by process, then backend (cpu before modules), then local id. */
  size_t i = 0;
  for (int p = 0; p < size; p++) {
    for (int j = 0; j <= p; j++, i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      ck_assert_ptr_nonnull(d);
      ck_assert_int_eq(hdal_device_id(d), (int)i);
      ck_assert_int_eq(hdal_device_process_index(d), p);
      ck_assert_str_eq(hdal_device_platform(d), "cpu");
      ck_assert_int_eq(hdal_device_local_hardware_id(d), j);
    }
    if (p == owner) {
      hdal_device *d = hdal_context_device(ctx, i);
      ck_assert_ptr_nonnull(d);
      ck_assert_int_eq(hdal_device_id(d), (int)i);
      ck_assert_int_eq(hdal_device_process_index(d), p);
      ck_assert_str_eq(hdal_device_platform(d), "probea");
      ck_assert_str_eq(hdal_device_kind(d), "probea");
      i++;
    }
  }
  ck_assert_int_eq(hdal_context_device_count(ctx), i);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- backends: each rank started with its own HDAL_BACKENDS (MPMD) ----
 * HDAL_TEST_RANK_BACKENDS holds every rank's list, separated by ';', so each
 * rank knows the whole job's expected table. */

static bool list_has(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, name, n)) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

/* Rank p's value in the environment variable `var`, a ';'-separated list of
 * every rank's values. */
static void rank_value(const char *var, int p, char *out, size_t size_out) {
  const char *all = getenv(var);
  ck_assert_msg(all != NULL, "%s is not set", var);
  for (int i = 0; i < p && all; i++) {
    all = strchr(all, ';');
    if (all) all++;
  }
  ck_assert_msg(all != NULL, "%s names no value for rank %d", var, p);
  snprintf(out, size_out, "%.*s", (int)strcspn(all, ";"), all);
}

/* Rank p's backend list, from HDAL_TEST_RANK_BACKENDS. */
static void rank_backends(int p, char *out, size_t size_out) { rank_value("HDAL_TEST_RANK_BACKENDS", p, out, size_out); }

START_TEST(ranks_with_different_backends_agree) {
  use_rank_topology();
  view v = whole_view(MPI_COMM_WORLD, NULL); /* HDAL_BACKENDS, as mpirun -x set it for this rank */
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  char mine[128];
  rank_backends(rank, mine, sizeof mine);
  ck_assert_str_eq(getenv("HDAL_BACKENDS"), mine);

  size_t i = 0;
  for (int p = 0; p < size; p++) {
    char list[128];
    rank_backends(p, list, sizeof list);
    /* The device order (docs/reference.md): by process, then backend (cpu before modules), then local id. */
    if (list_has(list, "cpu"))
      for (int j = 0; j <= p; j++, i++) {
        hdal_device *d = hdal_context_device(ctx, i);
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(hdal_device_id(d), (int)i);
        ck_assert_int_eq(hdal_device_process_index(d), p);
        ck_assert_str_eq(hdal_device_platform(d), "cpu");
        ck_assert_int_eq(hdal_device_local_hardware_id(d), j);
        ck_assert_int_eq(hdal_device_is_addressable(d), p == rank);
      }
    if (list_has(list, "ifrttest"))
      for (int j = 0; j < 2; j++, i++) {
        hdal_device *d = hdal_context_device(ctx, i);
        ck_assert_ptr_nonnull(d);
        char kind[32];
        snprintf(kind, sizeof kind, "ifrt-test-device-%d", j);
        ck_assert_int_eq(hdal_device_id(d), (int)i);
        ck_assert_int_eq(hdal_device_process_index(d), p);
        ck_assert_str_eq(hdal_device_platform(d), "ifrttest");
        ck_assert_str_eq(hdal_device_kind(d), kind);
        ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
        ck_assert_str_eq(hdal_device_runtime_class_reason(d),
                         "test module: devices listed for IFRT only, no buffer runtime");
        ck_assert_int_eq(hdal_device_is_addressable(d), p == rank);
        ck_assert_str_eq(hdal_device_attribute_get(d, "test_attribute"), j ? "one" : "zero");
      }
  }
  ck_assert_uint_eq(hdal_context_device_count(ctx), i);
  ck_assert_int_eq(v.min_count, (long long)i);

  /* Another rank's IFRT-native device: the runtime-class check comes first (docs/dlpack.md's check order). */
  DLManagedTensor t;
  hdal_capsule *cap = host_capsule(&t);
  for (size_t k = 0; k < hdal_context_device_count(ctx); k++) {
    hdal_device *d = hdal_context_device(ctx, k);
    if (hdal_device_process_index(d) == rank) continue;
    hdal_buffer *buf = NULL;
    ck_assert_error(hdal_buffer_from_dlpack(ctx, cap, d, NULL, &buf), HDAL_FAILED_PRECONDITION,
                    hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT
                        ? "DLPack is only supported for devices addressable by the current process."
                        : "DLPack is supported for PjRt-compatible backends only.");
    ck_assert_str_eq(hdal_capsule_name(cap), "dltensor");
  }
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- failures: every rank gets the same error, none hangs ---- */

/* The message hdal_context_create gives for `backends` here. */
static char *core_message(const char *backends) {
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends};
  hdal_context *ctx = NULL;
  hdal_error *err = hdal_context_create(&o, &ctx);
  ck_assert_ptr_nonnull(err);
  char *m = strdup(hdal_error_message(err));
  hdal_error_destroy(err);
  return m;
}

START_TEST(a_rank_that_cannot_create_its_context_fails_every_rank) {
  use_rank_topology();
  const char *bad = "cpu;oops";
  view v = whole_view(MPI_COMM_WORLD, rank == size - 1 ? bad : "cpu");
  ck_assert_ptr_null(v.ctx);
  ck_assert_int_eq(v.max_count, -1); /* no rank has a context */
  char *why = core_message(bad), expected[1024];
  snprintf(expected, sizeof expected, "rank %d could not create its hdal context: %s", size - 1, why);
  ck_assert_error(v.err, HDAL_INVALID_ARGUMENT, expected);
  free(why);
}
END_TEST

START_TEST(null_out_on_one_rank_fails_every_rank) {
  use_rank_topology();
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_context *ctx = (hdal_context *)&o;
  hdal_error *err = hdal_mpi_context_create(MPI_COMM_WORLD, &o, rank == 0 ? NULL : &ctx);
  if (rank != 0) ck_assert_ptr_null(ctx);
  ck_assert_error(err, HDAL_INVALID_ARGUMENT, "rank 0 could not create its hdal context: hdal_mpi_context_create: out is NULL");
}
END_TEST

START_TEST(null_communicator_refused) {
  hdal_context *ctx = (hdal_context *)&ctx;
  ck_assert_error(hdal_mpi_context_create(MPI_COMM_NULL, NULL, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_mpi_context_create: comm is MPI_COMM_NULL");
  ck_assert_ptr_null(ctx);
}
END_TEST

/* The caller's process index and count are the rank's, whatever the options said. */
START_TEST(options_process_fields_are_the_ranks) {
  use_rank_topology();
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 7, .process_count = 9};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_mpi_context_create(MPI_COMM_WORLD, &o, &ctx));
  ck_assert_int_eq(hdal_context_process_index(ctx), rank);
  ck_assert_int_eq(hdal_context_process_count(ctx), size);
  ck_assert_int_eq(o.process_index, 7); /* the caller's struct is left alone */
  hdal_context_destroy(ctx);
}
END_TEST

/* Each rank selects its own devices before the exchange (docs/reference.md,
 * "Choosing devices"): rank p, with p + 1 CPU devices, keeps only its last. */
START_TEST(ranks_with_different_selectors_agree) {
  use_rank_topology();
  char mine[32];
  snprintf(mine, sizeof mine, "cpu:%d", rank);
  view v = selected_view(MPI_COMM_WORLD, "cpu", mine);
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  ck_assert_uint_eq(hdal_context_device_count(ctx), (size_t)size);
  for (int p = 0; p < size; p++) {
    hdal_device *d = hdal_context_device(ctx, (size_t)p);
    ck_assert_int_eq(hdal_device_id(d), p);
    ck_assert_int_eq(hdal_device_process_index(d), p);
    ck_assert_int_eq(hdal_device_local_hardware_id(d), p);
    ck_assert_int_eq(hdal_device_is_addressable(d), p == rank);
  }
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- hosts: ranks on the simulated hosts of tests/mpi/hosts-*.test ----
 * Each rank enumerates what its host has (the host's environment: the fake
 * CUDA driver's GPUs under HDAL_FSROOT, the machine's CPU), with the cpu and
 * cuda backends.  Hosts may be clones of one another: the same bus ids and
 * the same UUIDs.  HDAL_TEST_RANK_HOSTS names every rank's host,
 * ';'-separated, where the launcher was told to place it. */

typedef struct {
  char host[64];  /* gethostname */
  char gpus[192]; /* FAKECUDA_PCI_BUS_IDS: the host's fake GPUs */
  int devices;    /* its own (addressable) devices in its view; -1 without one */
} rank_place;

/* Collective: every rank's place, whatever happened to its view. */
static rank_place *gather_places(const hdal_context *ctx) {
  rank_place me = {.devices = -1};
  if (gethostname(me.host, sizeof me.host - 1) != 0) snprintf(me.host, sizeof me.host, "?");
  const char *gpus = getenv("FAKECUDA_PCI_BUS_IDS");
  snprintf(me.gpus, sizeof me.gpus, "%s", gpus ? gpus : "");
  if (ctx) {
    me.devices = 0;
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
      me.devices += hdal_device_is_addressable(hdal_context_device(ctx, i));
  }
  rank_place *all = calloc((size_t)size, sizeof *all);
  ck_assert_ptr_nonnull(all);
  MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, MPI_COMM_WORLD);
  return all;
}

/* Every rank is on the host it was placed on, and every process's devices in
 * the global table are its host's: as many as it has, its CUDA devices its
 * host's GPUs, by bus id, in CUDA's order, each saying the host's name and
 * index (the hosts numbered by their lowest process), as many hosts as the
 * ranks are on. */
START_TEST(hosts_each_process_has_its_hosts_devices) {
  view v = whole_view(MPI_COMM_WORLD, "cpu,cuda");
  rank_place *all = gather_places(v.ctx);
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  ck_assert_int_eq(v.min_count, v.max_count);
  /* The hosts in the order of their lowest process, as hdal numbers them: each
   * simulated host has a name of its own. */
  int *host_of = calloc((size_t)size, sizeof *host_of);
  ck_assert_ptr_nonnull(host_of);
  size_t hosts = 0;
  for (int p = 0; p < size; p++) {
    int q = 0;
    while (q < p && strcmp(all[q].host, all[p].host)) q++;
    host_of[p] = q < p ? host_of[q] : (int)hosts++;
  }
  for (int p = 0; p < size; p++) {
    char want[64];
    rank_value("HDAL_TEST_RANK_HOSTS", p, want, sizeof want);
    ck_assert_msg(!strcmp(all[p].host, want), "rank %d is on %s, placed on %s", p, all[p].host, want);
    int n = 0;
    char gpus[192] = "";
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_process_index(d) != p) continue;
      n++;
      /* Its host: the hostname its process has, and that host's index. */
      const char *host = hdal_device_host(d);
      ck_assert_msg(host && !strcmp(host, all[p].host), "device %d of process %d says host %s, the process is on %s",
                    hdal_device_id(d), p, host ? host : "(null)", all[p].host);
      ck_assert_msg(hdal_device_host_index(d) == host_of[p], "device %d of process %d is on host %d, expected %d",
                    hdal_device_id(d), p, hdal_device_host_index(d), host_of[p]);
      if (strcmp(hdal_device_platform(d), "cuda") != 0) continue;
      const char *bus = hdal_device_attribute_get(d, "pci_bus_id");
      ck_assert_ptr_nonnull(bus);
      size_t len = strlen(gpus);
      snprintf(gpus + len, sizeof gpus - len, "%s%s", len ? "," : "", bus);
    }
    ck_assert_int_eq(n, all[p].devices);
    ck_assert_msg(!strcmp(gpus, all[p].gpus), "process %d's CUDA devices are at %s, its host %s has %s", p, gpus,
                  all[p].host, all[p].gpus);
  }
  ck_assert_uint_eq(hdal_context_host_count(ctx), hosts);
  free(host_of);
  free(all);
  hdal_context_destroy(ctx);
}
END_TEST

/* Another process's devices, on another host or on this one, are not
 * addressable: an import onto one is refused with the message of docs/dlpack.md and
 * the capsule untouched, and neither an allocation nor a copy lands there,
 * even on another host's GPU with the UUID and bus id of one of ours. */
START_TEST(hosts_other_processes_devices_not_addressable) {
  view v = whole_view(MPI_COMM_WORLD, "cpu,cuda");
  hdal_context *ctx = view_ok(v);
  ck_assert_msg(v.same_table, "the ranks' tables differ (digest reduction)");
  hdal_device *my_gpu = NULL;
  size_t others = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_is_addressable(d), hdal_device_process_index(d) == rank);
    if (!my_gpu && hdal_device_is_addressable(d) && !strcmp(hdal_device_platform(d), "cuda")) my_gpu = d;
  }
  ck_assert_msg(my_gpu != NULL, "rank %d has no CUDA device (FAKECUDA_DEVICES of its host?)", rank);
  hdal_buffer *mine = NULL;
  int64_t shape[1] = {4};
  ck_assert_ok(hdal_buffer_allocate(my_gpu, 1, shape, (DLDataType){kDLFloat, 32, 1}, &mine));

  DLManagedTensor t;
  hdal_capsule *cap = host_capsule(&t);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_process_index(d) == rank) continue;
    others++;
    import_refused(ctx, cap, &t, d);
    char expected[160];
    snprintf(expected, sizeof expected, "hdal_buffer_allocate: device %d (%s) is not addressable by the current process",
             hdal_device_id(d), hdal_device_platform(d));
    hdal_buffer *buf = (hdal_buffer *)&buf;
    ck_assert_error(hdal_buffer_allocate(d, 1, shape, (DLDataType){kDLFloat, 32, 1}, &buf), HDAL_FAILED_PRECONDITION,
                    expected);
    ck_assert_ptr_null(buf);
    snprintf(expected, sizeof expected,
             "hdal_buffer_copy_to_device: device %d (%s) is not addressable by the current process", hdal_device_id(d),
             hdal_device_platform(d));
    buf = (hdal_buffer *)&buf;
    ck_assert_error(hdal_buffer_copy_to_device(mine, d, &buf), HDAL_FAILED_PRECONDITION, expected);
    ck_assert_ptr_null(buf);
  }
  ck_assert_uint_gt(others, 0);
  ck_assert_int_eq(deleted, 0);
  hdal_capsule_destroy(cap);
  ck_assert_int_eq(deleted, 1);
  hdal_buffer_release(mine);
  hdal_context_destroy(ctx);
}
END_TEST

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &rank, &size);
  const char *which = argc > 1 ? argv[1] : "global";

  Suite *s = suite_create("mpi");
  TCase *tc = tcase_create(which);
  if (!strcmp(which, "global")) {
    tcase_add_test(tc, same_table_on_every_rank);
    tcase_add_test(tc, devices_in_global_order);
    tcase_add_test(tc, own_devices_addressable_and_only_those);
    tcase_add_test(tc, import_onto_another_ranks_device_refused);
    tcase_add_test(tc, routed_import_stays_on_this_rank);
    tcase_add_test(tc, self_communicator_sees_only_this_rank);
    tcase_add_test(tc, split_communicators_build_their_own_views);
    tcase_add_test(tc, ranks_with_different_selectors_agree);
  } else if (!strcmp(which, "backends")) {
    tcase_add_test(tc, ranks_with_different_backends_agree);
  } else if (!strcmp(which, "modules")) {
    tcase_add_test(tc, ranks_with_different_modules_agree);
  } else if (!strcmp(which, "hosts")) {
    tcase_add_test(tc, hosts_each_process_has_its_hosts_devices);
    tcase_add_test(tc, hosts_other_processes_devices_not_addressable);
  } else if (!strcmp(which, "failures")) {
    tcase_add_test(tc, a_rank_that_cannot_create_its_context_fails_every_rank);
    tcase_add_test(tc, null_out_on_one_rank_fails_every_rank);
    tcase_add_test(tc, null_communicator_refused);
    tcase_add_test(tc, options_process_fields_are_the_ranks);
  } else {
    return test_mpi_leave(rank, 99, "test_mpi: unknown test case '%s' (global, backends, modules, failures, hosts)",
                          which);
  }
  return test_mpi_run(s, tc);
}
