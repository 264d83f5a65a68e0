/* SPDX-License-Identifier: BSD-3-Clause */
/* One GPU, several faces (lib/faces.c; docs/reference.md, "The scheduler's
 * GPUs on every backend" and "GPUs per local rank"), with the fake drivers:
 *   - the fakes honour the vendors' visibility variables as the real runtimes
 *     do: fake CUDA CUDA_VISIBLE_DEVICES (ordinals, UUID prefixes, the list
 *     ending at a bad entry), fake HIP ROCR_VISIBLE_DEVICES then
 *     HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES), fake Level Zero
 *     ZE_AFFINITY_MASK; the fake Vulkan driver, like the vendors', none;
 *   - where a variable narrowed its runtime, the other backends' faces of the
 *     GPUs it no longer shows are hidden (Vulkan by UUID or PCI bus id, the
 *     fake OpenCL vendor's GPUs by PCI bus id), GPUs of other vendors never;
 *     HDAL_HIDE_FACES=0 or the option keeps them; the status says why;
 *   - HDAL_GPU_BINDING=local-rank: each local rank keeps its GPUs, every face
 *     of each, from the launcher's variables (Open MPI, MPICH, Slurm) or the
 *     options; tests/mpi/binding.test does it under mpirun.
 * The fake CUDA GPUs are at PCI 0000:1N:00.0 with UUID GPU-facec0da-...-00000000000N,
 * as the fake Vulkan driver's devices are by default. */
#include <sys/stat.h>
#include <unistd.h>
#include "testgpu.h"

static char modules[4200];

static bool have(const char *file) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", modules, file);
  return access(path, R_OK) == 0;
}

static void clean_environment(void) {
  static const char *const names[] = {
      "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "HDAL_HIDE_FACES",
      "HDAL_GPU_BINDING", "HDAL_DEVICE_SELECTOR", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
      "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
      "SLURM_NODEID", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "HDAL_VULKAN_LIBRARY", "HDAL_FSROOT",
      "HDAL_LEVELZERO_LIBRARY", "HDAL_DEBUG"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unsetenv(names[i]);
}

/* n fake CUDA GPUs and the fake Vulkan driver's faces of them (m devices, n by default). */
static void cuda_and_vulkan(int n, int m) {
  char v[16], path[4400];
  clean_environment();
  test_use_fake_runtime("HDAL_CUDA_LIBRARY", "fakecuda");
  snprintf(v, sizeof v, "%d", n);
  setenv("FAKECUDA_DEVICES", v, 1);
  snprintf(v, sizeof v, "%d", m ? m : n);
  setenv("FAKEVK_DEVICES", v, 1);
  snprintf(path, sizeof path, "%s/../fakevk_icd.json", modules);
  setenv("VK_DRIVER_FILES", path, 1);
}

/* A context of `backends`, with `opts` fields set by the caller when not NULL. */
static hdal_context *context(const char *backends, hdal_context_options *opts) {
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  if (!opts) opts = &o;
  opts->backends = backends;
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(opts, &ctx));
  return ctx;
}

enum { IDS, UUIDS, FACES };

static int cmp_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A platform's devices: IDS their local hardware ids ("0,2"), UUIDS their UUIDs' last two digits in
 * the table's order ("02,00"), FACES those sorted: the Vulkan loader orders devices its own way. */
static const char *listing(hdal_context *ctx, const char *platform, int what) {
  static char out[4][256];
  static int turn;
  char *s = out[turn++ % 4], *items[64];
  size_t n = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx) && n < 64; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (strcmp(hdal_device_platform(d), platform)) continue;
    const char *u = hdal_device_attribute_get(d, "uuid");
    char item[16];
    if (what == IDS) snprintf(item, sizeof item, "%d", hdal_device_local_hardware_id(d));
    else snprintf(item, sizeof item, "%s", u ? u + strlen(u) - 2 : "-");
    items[n++] = strdup(item);
  }
  if (what == FACES) qsort(items, n, sizeof *items, cmp_text);
  s[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    size_t at = strlen(s);
    snprintf(s + at, sizeof out[0] - at, "%s%s", i ? "," : "", items[i]);
    free(items[i]);
  }
  return s;
}

/* A platform's UUIDS listing, "-" when it has no device. */
static const char *uuids_or_dash(hdal_context *ctx, const char *platform) {
  const char *got = listing(ctx, platform, UUIDS);
  return *got ? got : "-";
}

/* A context of `backends` (opts: the caller's options, or NULL) in which `platform` lists `want` (IDS,
 * UUIDS or FACES, as `what` says; NULL: not asked) and has the status `status` (NULL: not asked).  A
 * failure names the caller's line. */
#define expect_platform(backends, opts, platform, what, want, status) \
  expect_platform_at(__LINE__, backends, opts, platform, what, want, status)

static void expect_platform_at(int line, const char *backends, hdal_context_options *opts, const char *platform,
                               int what, const char *want, const char *status) {
  hdal_context *ctx = context(backends, opts);
  const char *got = want ? listing(ctx, platform, what) : "";
  ck_assert_msg(!want || !strcmp(got, want), "line %d: %s lists '%s', expected '%s'", line, platform, got, want);
  got = test_backend_status(ctx, platform);
  ck_assert_msg(!status || !strcmp(got, status), "line %d: %s says '%s', expected '%s'", line, platform, got, status);
  hdal_context_destroy(ctx);
}

/* Runs run(i) for each case i < n in a process of its own, as the drivers read their variables once
 * per process; run says what went wrong on stderr and returns whether the case held. */
static void each_case_in_a_process(size_t n, bool (*run)(size_t i), const char *what) {
  for (size_t i = 0; i < n; i++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(run(i) ? 0 : 1);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: case %zu", what, i);
  }
}

#define EACH_CASE_IN_A_PROCESS(cases, run, what) each_case_in_a_process(sizeof cases / sizeof cases[0], run, what)

/* ---- the fakes honour the vendors' variables ---- */

/* CUDA_VISIBLE_DEVICES, as NVIDIA's driver reads it: each value, the devices (by their UUIDs) it leaves. */
static const struct {
  const char *value, *uuids;
} cuda_cases[] = {
    {"1", "01"},
    {"2,0", "02,00"},                                            /* the list's order */
    {" 1 , 0 ", "01,00"},                                        /* blanks around entries */
    {"GPU-facec0da-0001-4000-8000-000000000002,0", "02,00"},     /* a whole UUID */
    {"gpu-FACEC0DA-0001-4000-8000-00000000000", "-"},            /* a prefix of three: nothing */
    {"GPU-facec0da-0001-4000-8000-000000000001", "01"},
    {"gpu-FACEC0DA-0001-4000-8000-0000000000", "-"},
    {"0,5,1", "00"},                                             /* ends at an ordinal out of range */
    {"1,1,2", "01"},                                             /* ends at a repeat */
    {"0,x,1", "00"},                                             /* ends at a word */
    {"MIG-1", "-"},
};

static bool cuda_case(size_t i) {
  cuda_and_vulkan(3, 0);
  setenv("CUDA_VISIBLE_DEVICES", cuda_cases[i].value, 1);
  hdal_context *ctx = context("cpu,cuda", NULL);
  const char *got = uuids_or_dash(ctx, "cuda");
  bool ok = !strcmp(got, cuda_cases[i].uuids);
  if (!ok) fprintf(stderr, "CUDA_VISIBLE_DEVICES='%s': %s, expected %s\n", cuda_cases[i].value, got, cuda_cases[i].uuids);
  /* Renumbered from 0 in the variable's order, each keeping its own name and PCI bus id. */
  for (size_t j = 0; ok && j < hdal_context_device_count(ctx); j++) {
    hdal_device *d = hdal_context_device(ctx, j);
    if (strcmp(hdal_device_platform(d), "cuda")) continue;
    const char *u = hdal_device_attribute_get(d, "uuid");
    char want[64];
    snprintf(want, sizeof want, "Fake GPU %c", u[strlen(u) - 1]);
    ok = !strcmp(hdal_device_kind(d), want);
    snprintf(want, sizeof want, "0000:1%c:00.0", u[strlen(u) - 1]);
    ok = ok && !strcmp(hdal_device_attribute_get(d, "pci_bus_id"), want);
    ok = ok && hdal_device_local_hardware_id(d) == (int)j - 1; /* after the CPU device */
    if (!ok) fprintf(stderr, "CUDA_VISIBLE_DEVICES='%s': device %zu is %s\n", cuda_cases[i].value, j, hdal_device_kind(d));
  }
  hdal_context_destroy(ctx);
  return ok;
}

START_TEST(fake_cuda_visible_devices) { EACH_CASE_IN_A_PROCESS(cuda_cases, cuda_case, "CUDA_VISIBLE_DEVICES"); }
END_TEST

/* No device left: cuInit says so, as NVIDIA's driver does for "" and "-1". */
START_TEST(fake_cuda_none_visible) {
  cuda_and_vulkan(2, 0);
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  hdal_context *ctx = context("cpu,cuda", NULL);
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "unavailable: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
  hdal_context_destroy(ctx);
}
END_TEST

static void use_hip(int n) {
  char v[16];
  test_use_fake_runtime("HDAL_ROCM_LIBRARY", "fakehip6");
  snprintf(v, sizeof v, "%d", n);
  setenv("FAKEHIP_DEVICES", v, 1);
}

/* ROCR_VISIBLE_DEVICES (ordinals or UUIDs), then HIP_VISIBLE_DEVICES among what ROCr shows; HIP reads
 * CUDA_VISIBLE_DEVICES where HIP_VISIBLE_DEVICES is unset. */
static const struct {
  const char *rocr, *hip, *cuda, *uuids;
} hip_cases[] = {
    {"2,0", NULL, NULL, "02,00"},
    {"GPU-fa7eb1d0c0de0002,0", NULL, NULL, "02,00"},
    {"GPU-fa7eb1d0c0de0002,0", "1", NULL, "00"}, /* HIP's ordinal 1 of ROCr's two */
    {NULL, "1", NULL, "01"},
    {NULL, NULL, "2", "02"},
    {NULL, "0", "2", "00"},                     /* HIP's own name wins */
    {NULL, "GPU-fa7eb1d0c0de0001", NULL, "-"}, /* HIP takes ordinals only */
    {"1,7,2", NULL, NULL, "01"},
};

static bool hip_case(size_t i) {
  clean_environment();
  use_hip(3);
  if (hip_cases[i].rocr) setenv("ROCR_VISIBLE_DEVICES", hip_cases[i].rocr, 1);
  if (hip_cases[i].hip) setenv("HIP_VISIBLE_DEVICES", hip_cases[i].hip, 1);
  if (hip_cases[i].cuda) setenv("CUDA_VISIBLE_DEVICES", hip_cases[i].cuda, 1);
  hdal_context *ctx = context("cpu,rocm", NULL);
  const char *got = uuids_or_dash(ctx, "rocm");
  bool ok = !strcmp(got, hip_cases[i].uuids);
  if (!ok) fprintf(stderr, "case %zu: %s, expected %s (%s)\n", i, got, hip_cases[i].uuids, test_backend_status(ctx, "rocm"));
  hdal_context_destroy(ctx);
  return ok;
}

START_TEST(fake_hip_visible_devices) { EACH_CASE_IN_A_PROCESS(hip_cases, hip_case, "ROCr and HIP variables"); }
END_TEST

static void use_ze(int n) {
  char v[16], path[4400];
  snprintf(v, sizeof v, "%d", n);
  setenv("FAKEZE_DEVICES", v, 1);
  snprintf(path, sizeof path, "%s/fakeze.so", modules);
  setenv("ZE_ENABLE_ALT_DRIVERS", path, 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
}

/* ZE_AFFINITY_MASK as Intel's driver reads it: root devices in the machine's order, one tile of a device,
 * entries that name nothing ignored. */
static const struct {
  const char *mask, *ids, *tiles;
} ze_cases[] = {
    {"2,0", "00,02", "2,2"}, {"1.1", "01", "1"}, {"1.0,1.1", "01", "2"}, {"0.1,0", "00", "2"},
    {"7,1", "01", "2"},      {"", "00,01,02", "2,2,2"}, {"1.5", "-", ""},
};

static bool ze_case(size_t i) {
  clean_environment();
  use_ze(3);
  setenv("FAKEZE_SUBDEVICES", "2", 1);
  setenv("ZE_AFFINITY_MASK", ze_cases[i].mask, 1);
  hdal_context *ctx = context("cpu,levelzero", NULL);
  const char *got = uuids_or_dash(ctx, "levelzero");
  char tiles[64] = "";
  for (size_t j = 0; j < hdal_context_device_count(ctx); j++) {
    hdal_device *d = hdal_context_device(ctx, j);
    if (strcmp(hdal_device_platform(d), "levelzero")) continue;
    size_t at = strlen(tiles);
    snprintf(tiles + at, sizeof tiles - at, "%s%s", at ? "," : "", hdal_device_attribute_get(d, "sub_devices"));
  }
  bool ok = !strcmp(got, ze_cases[i].ids) && !strcmp(tiles, ze_cases[i].tiles);
  if (!ok) fprintf(stderr, "ZE_AFFINITY_MASK='%s': %s tiles %s, expected %s tiles %s (%s)\n", ze_cases[i].mask, got,
                   tiles, ze_cases[i].ids, ze_cases[i].tiles, test_backend_status(ctx, "levelzero"));
  hdal_context_destroy(ctx);
  return ok;
}

START_TEST(fake_ze_affinity_mask) { EACH_CASE_IN_A_PROCESS(ze_cases, ze_case, "ZE_AFFINITY_MASK"); }
END_TEST

/* ---- hiding the faces of GPUs a runtime does not show ---- */

#define HIDDEN_BY_CUDA "; 1 hidden: not shown by cuda (CUDA_VISIBLE_DEVICES)"

/* The drivers read their variables once per process, as the real ones do: each test sets them before
 * its first context (Check runs each test in a process of its own). */

START_TEST(every_face_without_variables) {
  cuda_and_vulkan(2, 0);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "00,01");
  ck_assert_str_eq(listing(ctx, "cuda", UUIDS), "00,01");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(cuda_visible_devices_hides_vulkan_faces) {
  cuda_and_vulkan(2, 0);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "cuda", UUIDS), "01");
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "01"); /* GPU 0's face is gone, GPU 1's stays */
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 1 device" HIDDEN_BY_CUDA);
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 1 device");
  hdal_backend_state st = test_backend_state(ctx, "vulkan");
  ck_assert_uint_eq(st.device_count, 1);
  ck_assert_uint_eq(st.hidden_count, 1);
  ck_assert_uint_eq(st.unselected_count, 0);
  ck_assert_uint_eq(st.owned_elsewhere_count, 0);
  ck_assert_uint_eq(test_backend_state(ctx, "cuda").hidden_count, 0);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 3);
  hdal_context_destroy(ctx);
}
END_TEST

/* The switch: HDAL_HIDE_FACES=0, or the option, which wins. */
START_TEST(hide_faces_off) {
  cuda_and_vulkan(2, 0);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  setenv("HDAL_HIDE_FACES", "0", 1);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "00,01");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices");
  ck_assert_uint_eq(test_backend_state(ctx, "vulkan").hidden_count, 0);
  hdal_context_destroy(ctx);

  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.hide_faces = "1";
  expect_platform("cpu,cuda,vulkan", &o, "vulkan", FACES, "01", NULL);
  unsetenv("HDAL_HIDE_FACES");
  o.hide_faces = "0";
  expect_platform("cpu,cuda,vulkan", &o, "vulkan", FACES, "00,01", NULL);

  /* Anything else is refused, naming where it came from; nothing is made. */
  o.hide_faces = "no";
  ctx = (hdal_context *)&o;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: hide_faces: 'no' is neither 0 (keep every face) nor 1 (hide)");
  ck_assert_ptr_null(ctx);
  setenv("HDAL_HIDE_FACES", "yes", 1);
  ck_assert_error(hdal_context_create(NULL, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_HIDE_FACES: 'yes' is neither 0 (keep every face) nor 1 (hide)");
}
END_TEST

/* UUID forms, and a Vulkan face without a PCI bus id (matched by its UUID, NVIDIA's being CUDA's). */
START_TEST(hidden_by_uuid) {
  cuda_and_vulkan(3, 0);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-facec0da-0001-4000-8000-000000000002,GPU-facec0da-0001-4000-8000-000000000000", 1);
  setenv("FAKEVK_NO_PCI", "1", 1);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "cuda", UUIDS), "02,00");
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "00,02");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices" HIDDEN_BY_CUDA);
  hdal_context_destroy(ctx);
}
END_TEST

/* GPUs of another vendor are not CUDA's to hide: an Intel GPU's Vulkan face stays. */
START_TEST(other_vendors_kept) {
  cuda_and_vulkan(2, 3);
  setenv("FAKEVK_VENDOR_IDS", "0x10de,0x10de,0x8086", 1);
  setenv("FAKEVK_PCI_BUS_IDS", "0000:10:00.0,0000:11:00.0,0000:00:02.0", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  expect_platform("cpu,cuda,vulkan", NULL, "vulkan", FACES, "00,02", "ok: 2 devices" HIDDEN_BY_CUDA);
}
END_TEST

/* A runtime left without any GPU hides every face of its vendor's; one that did not run hides nothing
 * (hdal cannot tell which GPUs "1" names), unless the variable names none. */
START_TEST(runtime_without_gpus) {
  cuda_and_vulkan(2, 0);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const char *none = "ok: 0 devices; 2 hidden: not shown by cuda (CUDA_VISIBLE_DEVICES)";
  expect_platform("cpu,cuda,vulkan", NULL, "vulkan", FACES, NULL, none);
  expect_platform("cpu,vulkan", NULL, "vulkan", FACES, NULL, none);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  expect_platform("cpu,vulkan", NULL, "vulkan", FACES, NULL, "ok: 2 devices"); /* the CUDA backend not run */
  setenv("HDAL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  expect_platform("cpu,cuda,vulkan", NULL, "vulkan", FACES, NULL, "ok: 2 devices"); /* no driver */
}
END_TEST

/* Hiding comes first, then the selector, which counts among what is left. */
START_TEST(hidden_before_selection) {
  cuda_and_vulkan(3, 0);
  setenv("CUDA_VISIBLE_DEVICES", "2,1", 1);
  setenv("HDAL_DEVICE_SELECTOR", "vulkan:1", 1);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 1 of 2 devices selected by HDAL_DEVICE_SELECTOR" HIDDEN_BY_CUDA);
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 0 of 2 devices selected by HDAL_DEVICE_SELECTOR");
  hdal_backend_state st = test_backend_state(ctx, "vulkan");
  ck_assert_uint_eq(st.device_count, 1);
  ck_assert_uint_eq(st.unselected_count, 1);
  ck_assert_uint_eq(st.hidden_count, 1);
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "01");
  hdal_context_destroy(ctx);
}
END_TEST

/* The fake OpenCL vendor's GPUs play NVIDIA's at the fake CUDA driver's PCI addresses (tests/fakes/cl/fakecl.c):
 * the face of the GPU CUDA no longer shows goes, the other vendors' devices stay. */
START_TEST(cuda_visible_devices_hides_opencl_faces) {
  cuda_and_vulkan(2, 0);
  setenv("FAKECUDA_PCI_BUS_IDS", "0000:3b:00.0,0000:af:00.0", 1);
  char vendors[4200];
  snprintf(vendors, sizeof vendors, "%s/fake", getenv("HDAL_TEST_ICD"));
  setenv("OCL_ICD_VENDORS", vendors, 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  hdal_context *ctx = context("cpu,cuda,opencl", NULL);
  ck_assert_str_eq(listing(ctx, "cuda", UUIDS), "01");
  ck_assert_str_eq(listing(ctx, "opencl", IDS), "1,2,3"); /* 0 is the GPU at 3b */
  ck_assert_str_eq(test_backend_status(ctx, "opencl"), "ok: 3 devices" HIDDEN_BY_CUDA);
  hdal_context_destroy(ctx);
  setenv("HDAL_HIDE_FACES", "0", 1);
  expect_platform("cpu,cuda,opencl", NULL, "opencl", IDS, "0,1,2,3", "ok: 4 devices");
}
END_TEST

/* AMD: the Vulkan faces (vendor 0x1002) of the fake HIP GPUs, linked by PCI bus id only, as RADV's UUIDs
 * are not ROCm's. */
static const struct {
  const char *variable, *value, *vulkan;
} amd_cases[] = {{"HIP_VISIBLE_DEVICES", "1", "01"}, {"ROCR_VISIBLE_DEVICES", "0", "00"}, {"CUDA_VISIBLE_DEVICES", "1", "01"}};

static bool amd_case(size_t i) {
  cuda_and_vulkan(0, 2);
  use_hip(2);
  setenv("FAKEVK_VENDOR_IDS", "0x1002,0x1002", 1);
  setenv("FAKEVK_PCI_BUS_IDS", "0000:c1:00.0,0000:c2:00.0", 1);
  setenv(amd_cases[i].variable, amd_cases[i].value, 1);
  hdal_context *ctx = context("cpu,rocm,vulkan", NULL);
  char want[160];
  snprintf(want, sizeof want, "ok: 1 device; 1 hidden: not shown by rocm (%s)", amd_cases[i].variable);
  bool ok = !strcmp(listing(ctx, "vulkan", FACES), amd_cases[i].vulkan) && !strcmp(test_backend_status(ctx, "vulkan"), want);
  if (!ok) fprintf(stderr, "%s=%s: vulkan %s: %s\n", amd_cases[i].variable, amd_cases[i].value,
                   listing(ctx, "vulkan", FACES), test_backend_status(ctx, "vulkan"));
  hdal_context_destroy(ctx);
  setenv("HDAL_HIDE_FACES", "0", 1);
  ctx = context("cpu,rocm,vulkan", NULL);
  ok = ok && !strcmp(listing(ctx, "vulkan", FACES), "00,01");
  hdal_context_destroy(ctx);
  return ok;
}

START_TEST(hip_variables_hide_vulkan_faces) { EACH_CASE_IN_A_PROCESS(amd_cases, amd_case, "AMD's variables"); }
END_TEST

/* Both vendors narrowed at once: each count says whose. */
START_TEST(two_runtimes_narrowed) {
  cuda_and_vulkan(2, 4);
  use_hip(2);
  setenv("FAKEVK_VENDOR_IDS", "0x10de,0x10de,0x1002,0x1002", 1);
  setenv("FAKEVK_PCI_BUS_IDS", "0000:10:00.0,0000:11:00.0,0000:c1:00.0,0000:c2:00.0", 1);
  setenv("HIP_VISIBLE_DEVICES", "0", 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1); /* CUDA's; HIP reads its own */
  expect_platform("cpu,cuda,rocm,vulkan", NULL, "vulkan", FACES, "01,02",
                  "ok: 2 devices; 2 hidden: 1 not shown by cuda (CUDA_VISIBLE_DEVICES), "
                  "1 not shown by rocm (HIP_VISIBLE_DEVICES)");
}
END_TEST

/* Intel: ZE_AFFINITY_MASK narrows Level Zero; the Vulkan faces (vendor 0x8086) go by PCI bus id. */
START_TEST(ze_affinity_mask_hides_vulkan_faces) {
  cuda_and_vulkan(0, 2);
  use_ze(2);
  setenv("FAKEVK_VENDOR_IDS", "0x8086,0x8086", 1);
  setenv("FAKEVK_PCI_BUS_IDS", "0000:3a:00.0,0000:3b:00.0", 1);
  setenv("ZE_AFFINITY_MASK", "1", 1);
  hdal_context *ctx = context("cpu,levelzero,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "levelzero", UUIDS), "01");
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "01");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 1 device; 1 hidden: not shown by levelzero (ZE_AFFINITY_MASK)");
  hdal_context_destroy(ctx);
  setenv("HDAL_HIDE_FACES", "0", 1);
  expect_platform("cpu,levelzero,vulkan", NULL, "vulkan", FACES, "00,01", NULL);
}
END_TEST

/* ---- GPUs per local rank ---- */

#define OWNED(n, who, r, l) "; " #n " owned by other local ranks (" who ": local rank " #r " of " #l ")"

/* Open MPI's variables: rank 1 of 2 on 4 GPUs keeps the second block, every face. */
START_TEST(binding_from_open_mpi) {
  cuda_and_vulkan(4, 0);
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "cuda", IDS), "2,3");
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "02,03");
  ck_assert_str_eq(listing(ctx, "cpu", IDS), "0"); /* the host is every rank's */
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 2 devices" OWNED(2, "HDAL_GPU_BINDING", 1, 2));
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices" OWNED(2, "HDAL_GPU_BINDING", 1, 2));
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_backend_state st = test_backend_state(ctx, "cuda");
  ck_assert_uint_eq(st.device_count, 2);
  ck_assert_uint_eq(st.owned_elsewhere_count, 2);
  ck_assert_uint_eq(st.hidden_count, 0);
  /* Another rank's GPU is not there to route to; the refusal says why, and nothing is made. */
  hdal_device *d = (hdal_device *)ctx;
  ck_assert_error(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 0}, &d), HDAL_INVALID_ARGUMENT,
                  "DLPack device (kDLCUDA, 0) is out of range: backend 'cuda' has 2 devices: HDAL_GPU_BINDING left 2 "
                  "of the 4 it found to other local ranks (this is local rank 1 of 2)");
  ck_assert_ptr_null(d);
  ck_assert_ok(hdal_context_device_for_dlpack(ctx, (DLDevice){kDLCUDA, 3}, &d));
  ck_assert_int_eq(hdal_device_local_hardware_id(d), 3);
  hdal_context_destroy(ctx);
}
END_TEST

/* Every split the documentation gives: blocks as even as can be, the first ranks one more; fewer GPUs
 * than ranks, GPU r mod G. */
static const struct {
  int gpus, rank, size;
  const char *cuda;
} split_cases[] = {
    {2, 0, 2, "0"},   {2, 1, 2, "1"},   {2, 0, 3, "0"},   {2, 1, 3, "1"}, {2, 2, 3, "0"},
    {4, 0, 2, "0,1"}, {4, 1, 2, "2,3"}, {4, 0, 3, "0,1"}, {4, 1, 3, "2"}, {4, 2, 3, "3"},
    {3, 0, 1, "0,1,2"}, {1, 4, 5, "0"}, {5, 1, 3, "2,3"},
};

static bool split_case(size_t i) {
  cuda_and_vulkan(split_cases[i].gpus, 0);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.gpu_binding = "local-rank";
  o.local_rank = split_cases[i].rank;
  o.local_size = split_cases[i].size;
  hdal_context *ctx = context("cpu,cuda,vulkan", &o);
  /* Every face of each: the Vulkan faces are the CUDA devices' (by UUID). */
  bool ok = !strcmp(listing(ctx, "cuda", IDS), split_cases[i].cuda) &&
            !strcmp(listing(ctx, "vulkan", FACES), listing(ctx, "cuda", FACES));
  if (!ok) fprintf(stderr, "%d GPUs, rank %d of %d: cuda %s, vulkan %s, expected %s\n", split_cases[i].gpus,
                   split_cases[i].rank, split_cases[i].size, listing(ctx, "cuda", IDS), listing(ctx, "vulkan", FACES),
                   split_cases[i].cuda);
  hdal_context_destroy(ctx);
  return ok;
}

START_TEST(binding_splits) { EACH_CASE_IN_A_PROCESS(split_cases, split_case, "binding splits"); }
END_TEST

/* MPICH's hydra. */
START_TEST(binding_from_mpich) {
  cuda_and_vulkan(2, 0);
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  setenv("MPI_LOCALRANKID", "2", 1);
  setenv("MPI_LOCALNRANKS", "3", 1);
  /* GPU 0, shared with local rank 0. */
  expect_platform("cpu,cuda,vulkan", NULL, "cuda", IDS, "0", "ok: 1 device" OWNED(1, "HDAL_GPU_BINDING", 2, 3));
}
END_TEST

/* Slurm's srun: the local size from the step's tasks per node, on this node. */
START_TEST(binding_from_slurm) {
  cuda_and_vulkan(4, 0);
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2),3", 1); /* node 2 runs 3 */
  hdal_context *ctx = context("cpu,cuda,vulkan", NULL);
  ck_assert_str_eq(listing(ctx, "cuda", IDS), "2");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 1 device" OWNED(3, "HDAL_GPU_BINDING", 1, 3));
  hdal_context_destroy(ctx);
  /* Open MPI's variables win over Slurm's (mpirun inside an allocation inherits the batch step's). */
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  expect_platform("cpu,cuda,vulkan", NULL, "cuda", IDS, "0", NULL);
}
END_TEST

/* Without a launcher's word, one local rank keeps everything; "none" (the default) binds nothing. */
START_TEST(binding_without_launcher_or_none) {
  cuda_and_vulkan(2, 0);
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x", 1); /* malformed: not a launcher's word */
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  expect_platform("cpu,cuda,vulkan", NULL, "cuda", IDS, "0,1", "ok: 2 devices");
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("HDAL_GPU_BINDING", "none", 1);
  expect_platform("cpu,cuda,vulkan", NULL, "cuda", IDS, "0,1", NULL);
  unsetenv("HDAL_GPU_BINDING");
  expect_platform("cpu,cuda,vulkan", NULL, "vulkan", FACES, "00,01", NULL);
  /* The option wins over the variable. */
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.gpu_binding = "none";
  expect_platform("cpu,cuda,vulkan", &o, "cuda", IDS, "0,1", NULL);
}
END_TEST

START_TEST(binding_refusals) {
  clean_environment();
  setenv("HWLOC_SYNTHETIC", "numa:1 pu:1", 1);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  hdal_context *ctx = (hdal_context *)&o;
  o.gpu_binding = "round-robin";
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: gpu_binding: unknown GPU binding 'round-robin'; known: none, local-rank");
  ck_assert_ptr_null(ctx);
  setenv("HDAL_GPU_BINDING", "Local-Rank", 1);
  ck_assert_error(hdal_context_create(NULL, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_GPU_BINDING: unknown GPU binding 'Local-Rank'; known: none, local-rank");
  unsetenv("HDAL_GPU_BINDING");
  o = (hdal_context_options)HDAL_CONTEXT_OPTIONS_INIT;
  o.local_rank = 3;
  o.local_size = 3;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: local_rank 3 is not in [0, local_size 3)");
  o.local_rank = 0;
  o.local_size = -1;
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "hdal_context_options: local_rank 0 is not in [0, local_size -1)");
  /* A caller compiled before these fields: its struct ends at device_selector, and they are read as unset. */
  setenv("HDAL_GPU_BINDING", "bogus", 1);
  o.struct_size = offsetof(hdal_context_options, gpu_binding);
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_GPU_BINDING: unknown GPU binding 'bogus'; known: none, local-rank");
  unsetenv("HDAL_GPU_BINDING");
  ck_assert_ok(hdal_context_create(&o, &ctx));
  hdal_context_destroy(ctx);
}
END_TEST

/* Binding after hiding and selection: the scheduler's GPUs, then the user's choice, are what is shared. */
START_TEST(binding_after_hiding) {
  cuda_and_vulkan(4, 0);
  setenv("CUDA_VISIBLE_DEVICES", "1,2,3", 1);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.gpu_binding = "local-rank";
  o.local_rank = 1;
  o.local_size = 2;
  hdal_context *ctx = context("cpu,cuda,vulkan", &o);
  /* Three GPUs (1, 2, 3 by PCI bus id): rank 1 of 2 keeps the third. */
  ck_assert_str_eq(listing(ctx, "cuda", UUIDS), "03");
  ck_assert_str_eq(listing(ctx, "vulkan", FACES), "03");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"),
                   "ok: 1 device" OWNED(2, "hdal_context_options: gpu_binding", 1, 2) HIDDEN_BY_CUDA);
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  snprintf(modules, sizeof modules, "%s", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".libs");
  bool vulkan = have("../fakevk_icd.json") && have("fakevk.so"), hip = have("fakehip6.so"), ze = have("fakeze.so");
  bool loader = test_library_loads("libze_loader.so.1"), icd = getenv("HDAL_TEST_ICD") != NULL;
  if (icd) {
    char fake[4300];
    snprintf(fake, sizeof fake, "%s/fake/fake.icd", getenv("HDAL_TEST_ICD"));
    icd = access(fake, R_OK) == 0;
  }
  if (!have("fakecuda.so")) {
    printf("SKIP: no fake CUDA driver in this build\n");
    return 77;
  }
  Suite *s = suite_create("faces");
  TCase *fakes = tcase_create("fakes"), *hiding = tcase_create("hiding"), *binding = tcase_create("binding");
  tcase_add_test(fakes, fake_cuda_visible_devices);
  tcase_add_test(fakes, fake_cuda_none_visible);
  if (hip) tcase_add_test(fakes, fake_hip_visible_devices);
  if (ze && loader) tcase_add_test(fakes, fake_ze_affinity_mask);
  tcase_add_test(binding, binding_refusals);
  if (vulkan) {
    tcase_add_test(hiding, every_face_without_variables);
    tcase_add_test(hiding, cuda_visible_devices_hides_vulkan_faces);
    tcase_add_test(hiding, hide_faces_off);
    tcase_add_test(hiding, hidden_by_uuid);
    tcase_add_test(hiding, other_vendors_kept);
    tcase_add_test(hiding, runtime_without_gpus);
    tcase_add_test(hiding, hidden_before_selection);
    if (hip) tcase_add_test(hiding, hip_variables_hide_vulkan_faces);
    if (hip) tcase_add_test(hiding, two_runtimes_narrowed);
    if (ze && loader) tcase_add_test(hiding, ze_affinity_mask_hides_vulkan_faces);
    tcase_add_test(binding, binding_from_open_mpi);
    tcase_add_test(binding, binding_splits);
    tcase_add_test(binding, binding_from_mpich);
    tcase_add_test(binding, binding_from_slurm);
    tcase_add_test(binding, binding_without_launcher_or_none);
    tcase_add_test(binding, binding_after_hiding);
  } else {
    printf("no fake Vulkan driver in this build: the hiding and binding cases over faces are left out\n");
  }
  if (icd) tcase_add_test(hiding, cuda_visible_devices_hides_opencl_faces);
  else printf("no fake OpenCL vendor in this build: the OpenCL face case is left out\n");
  if (!hip) printf("no fake HIP runtime in this build: the AMD cases are left out\n");
  if (!ze || !loader) printf("no fake Level Zero driver or no loader: the Intel cases are left out\n");
  suite_add_tcase(s, fakes);
  suite_add_tcase(s, hiding);
  suite_add_tcase(s, binding);
  return test_run_suite_forking(s, CK_FORK);
}
