/* SPDX-License-Identifier: BSD-3-Clause */
/* GPUs per local rank under MPI (docs/mpi.md, "GPUs per local rank"): every
 * rank of a one-host job runs on the same fake machine, G fake CUDA GPUs and
 * the fake Vulkan driver's faces of them, and hdal_mpi_context_create gives
 * each its local rank (MPI_COMM_TYPE_SHARED).  Run by tests/mpi/binding.test
 * with 2 and 3 ranks on 2 GPUs and on 4:
 *
 *   test_mpi_binding G env      HDAL_GPU_BINDING=local-rank
 *   test_mpi_binding G option   hdal_context_options::gpu_binding = "local-rank"
 *   test_mpi_binding G none     neither: every rank lists every GPU (the default)
 *
 * Every rank checks the whole global table: process p holds, on CUDA and on
 * Vulkan alike, exactly the GPUs that fall to local rank p (blocks in PCI bus
 * id order when there are at least as many GPUs as ranks, else GPU p mod G);
 * a GPU appears once, owned by one process, unless there are more ranks than
 * GPUs; only the rank's own devices are addressable.  CK_NOFORK between
 * MPI_Init and MPI_Finalize, as in test_mpi.c: every collective call comes
 * before the first assertion. */
#include <hdal/mpi.h>
#include "mpi_testutil.h"

static int rank, size, gpus;
static const char *mode;

/* The GPUs (machine indices) that fall to local rank r of n, as docs/mpi.md gives the rule. */
static bool falls_to(int g, int r, int n) {
  if (!strcmp(mode, "none")) return true;
  if (gpus < n) return g == r % gpus;
  int q = gpus / n, m = gpus % n, start = r * q + (r < m ? r : m);
  return g >= start && g < start + q + (r < m);
}

/* The machine index of a fake GPU face: its UUID's last two hex digits (tests/fakes/cuda, tests/fakes/vk). */
static int gpu_of(const hdal_device *d) {
  const char *u = hdal_device_attribute_get(d, "uuid");
  ck_assert_ptr_nonnull(u);
  return (int)strtol(u + strlen(u) - 2, NULL, 16);
}

static void use_fakes(void) {
  char path[4200], n[16];
  const char *modules = getenv("HDAL_TEST_MODULES");
  snprintf(path, sizeof path, "%s/fakecuda.so", modules);
  setenv("HDAL_CUDA_LIBRARY", path, 1);
  snprintf(path, sizeof path, "%s/../fakevk_icd.json", modules);
  setenv("VK_DRIVER_FILES", path, 1);
  snprintf(n, sizeof n, "%d", gpus);
  setenv("FAKECUDA_DEVICES", n, 1);
  setenv("FAKEVK_DEVICES", n, 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HDAL_DEVICE_SELECTOR");
  unsetenv("CUDA_VISIBLE_DEVICES");
  /* The launcher's word, made wrong after MPI_Init: what MPI_COMM_TYPE_SHARED says wins. */
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
  setenv("MPI_LOCALRANKID", "0", 1);
  setenv("MPI_LOCALNRANKS", "1", 1);
}

START_TEST(each_rank_its_gpus_on_every_face) {
  use_fakes();
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,cuda,vulkan";
  if (!strcmp(mode, "env")) setenv("HDAL_GPU_BINDING", "local-rank", 1);
  else unsetenv("HDAL_GPU_BINDING");
  if (!strcmp(mode, "option")) o.gpu_binding = "local-rank";
  o.local_rank = 5, o.local_size = 2; /* the caller's values are libhdal-mpi's to set, as the process fields */
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_mpi_context_create(MPI_COMM_WORLD, &o, &ctx));

  /* held[p][g]: which faces of GPU g process p lists (1 CUDA, 2 Vulkan). */
  int held[8][8] = {{0}}, cpus[8] = {0};
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    int p = hdal_device_process_index(d);
    ck_assert_int_lt(p, size);
    ck_assert_int_eq(hdal_device_is_addressable(d), p == rank);
    const char *platform = hdal_device_platform(d);
    if (!strcmp(platform, "cpu")) {
      cpus[p]++;
      continue;
    }
    int g = gpu_of(d), face = !strcmp(platform, "cuda") ? 1 : 2;
    ck_assert_msg(face == 1 || !strcmp(platform, "vulkan"), "a %s device", platform);
    ck_assert_int_lt(g, gpus);
    ck_assert_msg(!(held[p][g] & face), "process %d lists GPU %d's %s face twice", p, g, platform);
    held[p][g] |= face;
    if (face == 1) ck_assert_int_eq(hdal_device_local_hardware_id(d), g); /* the runtime's own ordinal */
  }
  for (int p = 0; p < size; p++) {
    ck_assert_int_eq(cpus[p], 1); /* the host is every rank's */
    for (int g = 0; g < gpus; g++)
      ck_assert_msg(held[p][g] == (falls_to(g, p, size) ? 3 : 0),
                    "rank %d (%s, %d GPUs, %d ranks): process %d, GPU %d: faces %d, expected %s", rank, mode, gpus,
                    size, p, g, held[p][g], falls_to(g, p, size) ? "both" : "none");
  }
  /* One owner per GPU while there are GPUs enough; with more ranks than GPUs, shared round-robin. */
  for (int g = 0; g < gpus && strcmp(mode, "none"); g++) {
    int owners = 0;
    for (int p = 0; p < size; p++) owners += held[p][g] != 0;
    ck_assert_int_eq(owners, size <= gpus ? 1 : size / gpus + (g < size % gpus));
  }

  /* This rank's statuses say what went to the others. */
  int mine = 0;
  for (int g = 0; g < gpus; g++) mine += falls_to(g, rank, size);
  char want[200];
  if (mine == gpus)
    snprintf(want, sizeof want, "ok: %d device%s", mine, mine == 1 ? "" : "s");
  else
    snprintf(want, sizeof want, "ok: %d device%s; %d owned by other local ranks (%s: local rank %d of %d)", mine,
             mine == 1 ? "" : "s", gpus - mine, !strcmp(mode, "env") ? "HDAL_GPU_BINDING" : "hdal_context_options: gpu_binding",
             rank, size);
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), want);
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), want);
  ck_assert_uint_eq(test_backend_state(ctx, "cuda").owned_elsewhere_count, (size_t)(gpus - mine));
  hdal_context_destroy(ctx);
}
END_TEST

int main(int argc, char **argv) {
  test_mpi_init(&argc, &argv, &rank, &size);
  if (argc != 3 || (gpus = atoi(argv[1])) < 1 || gpus > 8 || size > 8 ||
      (strcmp(argv[2], "env") && strcmp(argv[2], "option") && strcmp(argv[2], "none")))
    return test_mpi_leave(rank, 99, "usage: test_mpi_binding GPUS env|option|none (1 to 8 GPUs, 8 ranks at most)");
  mode = argv[2];
  Suite *s = suite_create("mpi_binding");
  TCase *tc = tcase_create("binding");
  tcase_add_test(tc, each_rank_its_gpus_on_every_face);
  return test_mpi_run(s, tc);
}
