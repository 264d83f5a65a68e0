/* SPDX-License-Identifier: BSD-3-Clause */
/* The Vulkan backend (docs/vulkan.md): through Debian's real Vulkan loader,
 * with the fake driver of tests/fakes/vk/ (two NVIDIA-like GPUs with the fake
 * CUDA driver's UUIDs and PCI ids), with no driver, with hostile manifests,
 * and for real on Mesa's lavapipe where it is installed.  Every refusal of an
 * IFRT-native device's, byte for byte, with the capsule untouched. */
#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dlpack_testutil.h"
#include "testgpu.h"
#include "../../backends/vulkan/vk_api.h"

#define REASON "Vulkan memory has no DLPack convention (kDLVulkan); hdal lists this device but does not create buffers on it"
#define MSG_NOT_PJRT "DLPack is supported for PjRt-compatible backends only."
#define MSG_OP_NOT_PJRT "This operation is implemented for a PjRt-compatible backend only."
#define NO_NODE                                                                                                       \
  "unavailable: no GPU device node (/dev/dri/renderD*, /dev/nvidiactl, /dev/dxg); CPU drivers such as lavapipe are " \
  "listed when HDAL_BACKENDS names vulkan"
#define NO_DRIVER "unavailable: no Vulkan driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)"

#ifdef __SANITIZE_ADDRESS__
/* Lavapipe's frames have no frame pointers: only the slow unwinder reaches the
 * loader's call that tests/vulkan/lsan-vulkan.supp names (ASAN_OPTIONS still wins). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
#endif

static char tmp[64];

static void setup(void) {
  /* The drivers are always chosen by the test: none of the machine's leaks in. */
  unsetenv("VK_DRIVER_FILES");
  unsetenv("VK_ICD_FILENAMES");
  unsetenv("VK_ADD_DRIVER_FILES");
  unsetenv("HDAL_VULKAN_LIBRARY");
  unsetenv("HDAL_FSROOT");
  snprintf(tmp, sizeof tmp, "/tmp/hdal-vulkan-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  ck_assert_int_eq(system(cmd), 0);
}

static const char *fake_manifest(void) {
  static char path[4200];
  snprintf(path, sizeof path, "%s/../fakevk_icd.json", getenv("HDAL_TEST_MODULES"));
  return path;
}

static void use_fake(void) { setenv("VK_DRIVER_FILES", fake_manifest(), 1); }

/* A context with the fake driver, one of its settings (FAKEVK_*) set when `name` is not NULL. */
static hdal_context *fake_context(const char *name, const char *value, const char *backends) {
  use_fake();
  if (name) setenv(name, value, 1);
  return test_context_with(backends);
}

/* Mesa's lavapipe manifest, NULL when it is not installed. */
static const char *lavapipe_manifest(void) {
  static char path[4200];
  glob_t g;
  const char *patterns[] = {"/usr/share/vulkan/icd.d/lvp_icd*.json", "/etc/vulkan/icd.d/lvp_icd*.json"};
  for (size_t i = 0; i < 2; i++)
    if (glob(patterns[i], 0, NULL, &g) == 0) {
      snprintf(path, sizeof path, "%s", g.gl_pathv[0]);
      globfree(&g);
      return path;
    }
  return NULL;
}

static hdal_device *vulkan_device(hdal_context *ctx, int local_id) { return test_platform_device(ctx, "vulkan", local_id); }

static size_t vulkan_count(hdal_context *ctx) { return test_platform_device_count(ctx, "vulkan"); }

static bool loader_loaded(void) {
  void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static hdal_backend_state vulkan_state(hdal_context *ctx) { return test_backend_state(ctx, "vulkan"); }

/* Every DLPack path refuses an IFRT-native device, with the documented messages. */
static void refusals(hdal_context *ctx, hdal_device *vk) {
  ck_assert_int_eq(hdal_device_runtime_class(vk), HDAL_RUNTIME_IFRT_NATIVE);
  ck_assert_str_eq(hdal_device_runtime_class_reason(vk), REASON);
  ck_assert_int_eq(hdal_device_dlpack_device(vk).device_type, kDLVulkan);
  /* Import onto it: check 1, before the capsule is looked at. */
  int64_t shape[1] = {4};
  tt_tensor *t = tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu);
  hdal_capsule *c = tt_versioned(t, 0);
  hdal_buffer *b = (hdal_buffer *)1;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, vk, NULL, &b), HDAL_FAILED_PRECONDITION, MSG_NOT_PJRT);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor_versioned"); /* untouched, still the caller's */
  ck_assert_int_eq(tt_deleted, 0);
  /* A tensor that names kDLVulkan, with no target: no backend serves the type. */
  t->versioned.dl_tensor.device = hdal_device_dlpack_device(vk);
  char msg[128];
  snprintf(msg, sizeof msg, "No hdal backend serves DLPack device type kDLVulkan (7), device id %d",
           hdal_device_dlpack_device(vk).device_id);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor_versioned");
  ck_assert_int_eq(tt_deleted, 0);
  /* Export and copy of a CPU buffer to it. */
  t->versioned.dl_tensor.device = tt_cpu;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  hdal_buffer *copy = (hdal_buffer *)1;
  ck_assert_error(hdal_buffer_copy_to_device(b, vk, &copy), HDAL_FAILED_PRECONDITION, MSG_OP_NOT_PJRT);
  ck_assert_ptr_null(copy);
  hdal_export_options o = HDAL_EXPORT_OPTIONS_INIT;
  o.has_dl_device = true;
  o.dl_device = hdal_device_dlpack_device(vk);
  hdal_capsule *out = (hdal_capsule *)1;
  ck_assert_error(hdal_buffer_to_dlpack(b, &o, &out), HDAL_INVALID_ARGUMENT, msg);
  ck_assert_ptr_null(out);
  ck_assert_error(hdal_buffer_allocate(vk, 1, shape, tt_f32, &copy), HDAL_FAILED_PRECONDITION, MSG_OP_NOT_PJRT);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1); /* once, by the release of the view */
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor_versioned"); /* consumed by the import */
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
}

/* ---- the fake driver ---- */

START_TEST(two_fake_gpus) {
  hdal_context *ctx = fake_context(NULL, NULL, "cpu,vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices");
  ck_assert_uint_eq(vulkan_count(ctx), 2);
  for (int i = 0; i < 2; i++) {
    hdal_device *d = vulkan_device(ctx, i);
    char text[64];
    ck_assert_ptr_nonnull(d);
    snprintf(text, sizeof text, "Fake GPU %d", i);
    ck_assert_str_eq(hdal_device_kind(d), text);
    ck_assert_str_eq(hdal_device_attribute_get(d, "name"), text);
    ck_assert_int_eq(hdal_device_runtime_class(d), HDAL_RUNTIME_IFRT_NATIVE);
    ck_assert_str_eq(hdal_device_runtime_class_reason(d), REASON);
    ck_assert(hdal_device_is_addressable(d));
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_type, kDLVulkan);
    ck_assert_int_eq(hdal_device_dlpack_device(d).device_id, i);
    ck_assert_uint_eq(hdal_device_memory_bytes(d), UINT64_C(17179869184));
    ck_assert_int_eq(hdal_device_numa_node(d), -1); /* no such PCI device on this machine */
    ck_assert_str_eq(hdal_device_attribute_get(d, "device_type"), "gpu");
    ck_assert_str_eq(hdal_device_attribute_get(d, "vulkan_device_type"), "discrete");
    ck_assert_str_eq(hdal_device_attribute_get(d, "vendor_id"), "0x10de");
    snprintf(text, sizeof text, "0x%04x", 0x2330 + i);
    ck_assert_str_eq(hdal_device_attribute_get(d, "device_id"), text);
    /* The fake CUDA driver's UUID, spelled as CUDA's backend spells it. */
    snprintf(text, sizeof text, "GPU-facec0da-0001-4000-8000-0000000000%02x", i);
    ck_assert_str_eq(hdal_device_attribute_get(d, "uuid"), text);
    snprintf(text, sizeof text, "0000:%02x:00.0", 0x10 + i);
    ck_assert_str_eq(hdal_device_attribute_get(d, "pci_bus_id"), text);
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_name"), "fakevk");
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_info"), "hdal test driver");
    ck_assert_str_eq(hdal_device_attribute_get(d, "driver_version"), "550.54.14");
    ck_assert_str_eq(hdal_device_attribute_get(d, "vulkan_version"), "1.3.0");
    ck_assert_str_eq(hdal_device_attribute_get(d, "memory_bytes"), "17179869184");
    ck_assert_str_eq(hdal_device_attribute_get(d, "compute_queue_families"), "2");
    ck_assert_str_eq(hdal_device_attribute_get(d, "compute_queues"), "24");
    ck_assert_ptr_null(hdal_device_attribute_get(d, "cpuset"));
  }
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(refused_on_a_fake_gpu) {
  hdal_context *ctx = fake_context(NULL, NULL, "cpu,vulkan");
  refusals(ctx, vulkan_device(ctx, 1));
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(selected_as_gpus) {
  use_fake();
  setenv("HDAL_DEVICE_SELECTOR", "vulkan:gpu", 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 0)), "vulkan");
  hdal_context_destroy(ctx);
  setenv("HDAL_DEVICE_SELECTOR", "vulkan:cpu", 1);
  ctx = test_context_with("cpu,vulkan");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 0);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(without_pci_bus_info) {
  hdal_context *ctx = fake_context("FAKEVK_NO_PCI", "1", "vulkan");
  hdal_device *d = vulkan_device(ctx, 0);
  ck_assert_ptr_nonnull(d);
  ck_assert_ptr_null(hdal_device_attribute_get(d, "pci_bus_id"));
  ck_assert_str_eq(hdal_device_attribute_get(d, "uuid"), "GPU-facec0da-0001-4000-8000-000000000000");
  ck_assert_int_eq(hdal_device_numa_node(d), -1);
  hdal_context_destroy(ctx);
}
END_TEST

/* A CPU driver's device, listed when the user chose the drivers: paired with the host's CPUs. */
START_TEST(cpu_device_when_drivers_chosen) {
  use_fake();
  setenv("FAKEVK_TYPES", "cpu,integrated", 1);
  setenv("FAKEVK_NO_PCI", "1", 1);
  hdal_context *ctx = test_context_with("-cuda,-opencl,-rocm,-levelzero"); /* not named */
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 2 devices");
  /* The loader lists GPUs before CPUs, whatever the driver's order. */
  hdal_device *igpu = vulkan_device(ctx, 0), *cpu = vulkan_device(ctx, 1);
  ck_assert_str_eq(hdal_device_kind(cpu), "Fake GPU 0");
  ck_assert_str_eq(hdal_device_attribute_get(cpu, "device_type"), "cpu");
  ck_assert_str_eq(hdal_device_attribute_get(cpu, "vulkan_device_type"), "cpu");
  ck_assert_ptr_nonnull(hdal_device_attribute_get(cpu, "cpuset"));
  ck_assert_str_eq(hdal_device_attribute_get(igpu, "device_type"), "gpu");
  ck_assert_str_eq(hdal_device_attribute_get(igpu, "vulkan_device_type"), "integrated");
  ck_assert_ptr_null(hdal_device_attribute_get(igpu, "cpuset"));
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(zero_devices_unavailable) {
  hdal_context *ctx = fake_context("FAKEVK_DEVICES", "0", "cpu,vulkan");
  /* The loader fails the enumeration rather than count none. */
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"),
                   "unavailable: no Vulkan device (vkEnumeratePhysicalDevices: VK_ERROR_INITIALIZATION_FAILED)");
  ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_UNAVAILABLE);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* What the system's loader itself answers to vkEnumeratePhysicalDevices on an
 * instance made as hdal makes it (Vulkan 1.1), in this environment. */
static VkResult loader_enumerate_result(void) {
  void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(lib != NULL, "%s", dlerror());
  PFN_vkGetInstanceProcAddr gipa;
  *(void **)&gipa = dlsym(lib, "vkGetInstanceProcAddr");
  ck_assert_ptr_nonnull(gipa);
  VkResult(HDAL__VK_CALL * create)(const VkInstanceCreateInfo *, const void *, VkInstance *);
  VkResult(HDAL__VK_CALL * enumerate)(VkInstance, uint32_t *, VkPhysicalDevice *);
  void(HDAL__VK_CALL * destroy)(VkInstance, const void *);
  PFN_vkVoidFunction fn = gipa(NULL, "vkCreateInstance");
  memcpy(&create, &fn, sizeof fn);
  ck_assert_ptr_nonnull(create);
  const VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
  const VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkInstance instance;
  ck_assert_int_eq(create(&info, NULL, &instance), VK_SUCCESS);
  fn = gipa(instance, "vkEnumeratePhysicalDevices");
  memcpy(&enumerate, &fn, sizeof fn);
  fn = gipa(instance, "vkDestroyInstance");
  memcpy(&destroy, &fn, sizeof fn);
  ck_assert(enumerate && destroy);
  uint32_t n = 0;
  VkResult r = enumerate(instance, &n, NULL);
  destroy(instance, NULL);
  dlclose(lib);
  return r;
}

START_TEST(driver_failures) {
  /* The status names what the loader answers (docs/vulkan.md): the Vulkan
   * loader 1.3 (Debian 12) passes the driver's error on, hdal's failure; 1.4
   * (Debian 13) leaves the failing driver out and, no device left, reports
   * VK_ERROR_INITIALIZATION_FAILED, which is "no device". */
  hdal_context *ctx = fake_context("FAKEVK_ENUMERATE_RESULT", "-4", "cpu,vulkan");
  VkResult said = loader_enumerate_result();
  if (said == VK_ERROR_DEVICE_LOST) {
    ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "unavailable: vkEnumeratePhysicalDevices: VK_ERROR_DEVICE_LOST (-4)");
    ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_FAILED);
  } else {
    ck_assert_msg(said == VK_ERROR_INITIALIZATION_FAILED, "the loader answered %d, neither the driver's -4 nor -3", said);
    ck_assert_str_eq(test_backend_status(ctx, "vulkan"),
                     "unavailable: no Vulkan device (vkEnumeratePhysicalDevices: VK_ERROR_INITIALIZATION_FAILED)");
    ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_UNAVAILABLE);
  }
  ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
  hdal_context_destroy(ctx);
  /* A driver whose vkCreateInstance fails is dropped by the loader: no driver is left. */
  unsetenv("FAKEVK_ENUMERATE_RESULT");
  setenv("FAKEVK_CREATE_RESULT", "-3", 1);
  ctx = test_context_with("cpu,vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), NO_DRIVER);
  ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_UNAVAILABLE);
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- no driver, hostile drivers, the loader ---- */

START_TEST(empty_driver_directory) {
  setenv("VK_DRIVER_FILES", tmp, 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), NO_DRIVER);
  ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_UNAVAILABLE);
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
  hdal_context_destroy(ctx);
}
END_TEST

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(hostile_manifests) {
  char garbage[128], manifest[128], text[512];
  snprintf(garbage, sizeof garbage, "%s/libgarbage.so", tmp);
  write_file(garbage, "\177ELF this is not a shared object\n");
  snprintf(manifest, sizeof manifest, "%s/garbage.json", tmp);
  snprintf(text, sizeof text,
           "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"%s\", \"api_version\": \"1.3.0\"}}", garbage);
  write_file(manifest, text);
  setenv("VK_DRIVER_FILES", manifest, 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), NO_DRIVER);
  hdal_context_destroy(ctx);
  /* Not JSON at all, and JSON of the wrong shape: the loader's answer (Debian 12's
   * says VK_ERROR_OUT_OF_HOST_MEMORY for the first) is passed on; nothing else breaks. */
  const char *bad[] = {"{\"file_format_version\": [[[[[[[[ \377\376", "{\"ICD\": 42}", ""};
  for (size_t i = 0; i < 3; i++) {
    write_file(manifest, bad[i]);
    ctx = test_context_with("cpu,vulkan");
    const char *st = test_backend_status(ctx, "vulkan");
    ck_assert_msg(!strncmp(st, "unavailable: ", 13) && strstr(st, "vkCreateInstance: VK_ERROR_"), "%s", st);
    ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 1 device");
    ck_assert_uint_eq(hdal_context_device_count(ctx), 1);
    hdal_context_destroy(ctx);
  }
}
END_TEST

START_TEST(hostile_loader_files) {
  char path[128], want[256];
  snprintf(path, sizeof path, "%s/fifo.so", tmp);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  setenv("HDAL_VULKAN_LIBRARY", path, 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  snprintf(want, sizeof want, "unavailable: %s: not a regular file", path);
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), want);
  hdal_context_destroy(ctx);
  /* A shared object that is not a loader: the fake driver itself. */
  snprintf(path, sizeof path, "%s/fakevk.so", getenv("HDAL_TEST_MODULES"));
  setenv("HDAL_VULKAN_LIBRARY", path, 1);
  ctx = test_context_with("cpu,vulkan");
  snprintf(want, sizeof want, "unavailable: %s: not a Vulkan loader (no vkGetInstanceProcAddr)", path);
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), want);
  hdal_context_destroy(ctx);
}
END_TEST

/* By default, without a GPU node, the loader is not even opened. */
START_TEST(loader_not_started_without_a_gpu_node) {
  setenv("HDAL_FSROOT", tmp, 1);
  hdal_context *ctx = test_context_with("-cuda,-opencl,-rocm,-levelzero");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), NO_NODE);
  ck_assert_int_eq(vulkan_state(ctx).state, HDAL_BACKEND_UNAVAILABLE);
  ck_assert(!loader_loaded());
  hdal_context_destroy(ctx);
}
END_TEST

/* With a render node the system's drivers are asked; a CPU driver's device is left out. */
START_TEST(gpu_node_starts_the_loader) {
  char dri[128];
  snprintf(dri, sizeof dri, "%s/dev", tmp);
  ck_assert_int_eq(mkdir(dri, 0700), 0);
  snprintf(dri, sizeof dri, "%s/dev/dri", tmp);
  ck_assert_int_eq(mkdir(dri, 0700), 0);
  snprintf(dri, sizeof dri, "%s/dev/dri/renderD128", tmp);
  write_file(dri, "");
  setenv("HDAL_FSROOT", tmp, 1);
  hdal_context *ctx = test_context_with("-cuda,-opencl,-rocm,-levelzero");
  ck_assert(loader_loaded());
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), "vulkan"))
      ck_assert_str_ne(hdal_device_attribute_get(d, "vulkan_device_type"), "cpu");
  }
  if (lavapipe_manifest() && !vulkan_count(ctx)) /* this machine's GPUs have no Vulkan driver */
    ck_assert_msg(strstr(test_backend_status(ctx, "vulkan"), "CPU driver device") ||
                      strstr(test_backend_status(ctx, "vulkan"), "no Vulkan"),
                  "%s", test_backend_status(ctx, "vulkan"));
  hdal_context_destroy(ctx);
}
END_TEST

/* ---- Mesa's lavapipe, for real ---- */

static hdal_device *lavapipe_device(hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    const char *drv = hdal_device_attribute_get(d, "driver_name");
    if (!strcmp(hdal_device_platform(d), "vulkan") && drv && !strcmp(drv, "llvmpipe")) return d;
  }
  return NULL;
}

START_TEST(lavapipe_listed) {
  setenv("VK_DRIVER_FILES", lavapipe_manifest(), 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  ck_assert_str_eq(test_backend_status(ctx, "vulkan"), "ok: 1 device");
  hdal_device *d = lavapipe_device(ctx);
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(hdal_device_attribute_get(d, "device_type"), "cpu");
  ck_assert_str_eq(hdal_device_attribute_get(d, "vulkan_device_type"), "cpu");
  ck_assert(!strncmp(hdal_device_kind(d), "llvmpipe", 8));
  ck_assert_ptr_nonnull(hdal_device_attribute_get(d, "cpuset"));
  ck_assert_uint_gt(hdal_device_memory_bytes(d), 0);
  refusals(ctx, d);
  hdal_context_destroy(ctx);
}
END_TEST

/* Named in the backend list, the system's drivers are asked with no GPU node, CPU drivers included. */
START_TEST(lavapipe_listed_when_named) {
  setenv("HDAL_FSROOT", tmp, 1);
  hdal_context *ctx = test_context_with("cpu,vulkan");
  ck_assert_ptr_nonnull(lavapipe_device(ctx));
  hdal_context_destroy(ctx);
}
END_TEST

/* The module opens the loader at run time: it links nothing of Vulkan. */
START_TEST(module_links_nothing_of_vulkan) {
  static const char *const foreign[] = {"vulkan", NULL};
  test_assert_module_links_none_of("vulkan", foreign);
}
END_TEST

int main(void) {
  if (!test_library_loads("libvulkan.so.1")) {
    printf("SKIP: no Vulkan loader (libvulkan.so.1; Debian's libvulkan1)\n");
    return 77;
  }
  Suite *s = suite_create("vulkan");
  TCase *tc = tcase_create("vulkan");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, module_links_nothing_of_vulkan);
  tcase_add_test(tc, two_fake_gpus);
  tcase_add_test(tc, refused_on_a_fake_gpu);
  tcase_add_test(tc, selected_as_gpus);
  tcase_add_test(tc, without_pci_bus_info);
  tcase_add_test(tc, cpu_device_when_drivers_chosen);
  tcase_add_test(tc, zero_devices_unavailable);
  tcase_add_test(tc, driver_failures);
  tcase_add_test(tc, empty_driver_directory);
  tcase_add_test(tc, hostile_manifests);
  tcase_add_test(tc, hostile_loader_files);
  tcase_add_test(tc, loader_not_started_without_a_gpu_node);
  tcase_add_test(tc, gpu_node_starts_the_loader);
  if (lavapipe_manifest()) {
    tcase_add_test(tc, lavapipe_listed);
    tcase_add_test(tc, lavapipe_listed_when_named);
  } else {
    printf("SKIP: lavapipe cases (no lvp_icd*.json: install mesa-vulkan-drivers)\n");
  }
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
