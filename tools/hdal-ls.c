/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — lists the compute devices hdal finds (contract section 10).
 *
 * Exit status: 0 success (a machine without GPUs included), 1 hdal could not
 * create its context, 2 bad usage.
 */
#include "config.h"
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdal.h>
#include "json.h"
#include "ls_context.h"

enum { EXIT_USAGE = 2 };

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s [OPTION]...\n"
          "List the compute devices hdal finds: CPUs (hwloc), CUDA GPUs and OpenCL devices.\n"
          "\n"
          "  -j, --json             print one JSON document instead of a table\n"
          "  -p, --platform LIST    only devices of these platforms (comma-separated: cpu,cuda,opencl,...)\n"
          "  -t, --topology         also show NUMA nodes with their cores and the devices near them\n"
          "  -b, --backends LIST    backends to use, as HDAL_BACKENDS (e.g. cpu,opencl or -cuda)\n"
          HDAL_LS_EXTRA_HELP
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and exit\n"
          "\n"
          "Environment: HDAL_BACKENDS, HDAL_BACKEND_PATH, HDAL_CUDA_LIBRARY, HDAL_DEBUG;\n"
          "hwloc's HWLOC_XMLFILE and HWLOC_SYNTHETIC; the ICD loader's OCL_ICD_VENDORS.\n"
          "Exit status: 0 on success (also with no GPU), 1 if hdal fails, 2 on bad usage.\n",
          HDAL_LS_NAME);
}

static const char *dl_type_name(int t) {
  switch (t) {
  case kDLCPU: return "kDLCPU";
  case kDLCUDA: return "kDLCUDA";
  case kDLCUDAHost: return "kDLCUDAHost";
  case kDLOpenCL: return "kDLOpenCL";
  case kDLVulkan: return "kDLVulkan";
  case kDLMetal: return "kDLMetal";
  case kDLVPI: return "kDLVPI";
  case kDLROCM: return "kDLROCM";
  case kDLROCMHost: return "kDLROCMHost";
  case kDLExtDev: return "kDLExtDev";
  case kDLCUDAManaged: return "kDLCUDAManaged";
  case kDLOneAPI: return "kDLOneAPI";
  case kDLWebGPU: return "kDLWebGPU";
  case kDLHexagon: return "kDLHexagon";
  case kDLMAIA: return "kDLMAIA";
  default: return "unknown";
  }
}

static const char *class_name(hdal_runtime_class c) { return c == HDAL_RUNTIME_PJRT ? "pjrt" : "ifrt-native"; }

static bool platform_selected(const char *list, const char *platform) {
  if (!list) return true;
  size_t n = strlen(platform);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, platform, n)) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static void human_bytes(uint64_t b, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)b;
  unsigned u = 0;
  while (v >= 1024 && u < 5) v /= 1024, u++;
  if (b == 0) snprintf(buf, size, "-");
  else if (u == 0) snprintf(buf, size, "%" PRIu64 " B", b);
  else snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* ---- table ---- */

enum { NCOLS = 9 };
static const char *const headers[NCOLS] = {"ID", "PROC", "PLATFORM", "KIND", "CLASS", "ADDR", "MEMORY", "NUMA", "DLPACK"};

static void device_cells(const hdal_device *d, char cells[NCOLS][160]) {
  DLDevice dl = hdal_device_dlpack_device(d);
  snprintf(cells[0], 160, "%d", hdal_device_id(d));
  snprintf(cells[1], 160, "%d", hdal_device_process_index(d));
  snprintf(cells[2], 160, "%s", hdal_device_platform(d));
  snprintf(cells[3], 160, "%s", hdal_device_kind(d));
  snprintf(cells[4], 160, "%s", class_name(hdal_device_runtime_class(d)));
  snprintf(cells[5], 160, "%s", hdal_device_is_addressable(d) ? "yes" : "no");
  human_bytes(hdal_device_memory_bytes(d), cells[6], 160);
  if (hdal_device_numa_node(d) < 0) snprintf(cells[7], 160, "-");
  else snprintf(cells[7], 160, "%d", hdal_device_numa_node(d));
  snprintf(cells[8], 160, "%s:%d", dl_type_name(dl.device_type), dl.device_id);
}

static void print_row(const char *const cells[NCOLS], const int width[NCOLS]) {
  for (int c = 0; c + 1 < NCOLS; c++) printf("%-*s  ", width[c], cells[c]);
  printf("%s\n", cells[NCOLS - 1]);
}

static void print_table(hdal_context *ctx, const char *platforms) {
  size_t n = hdal_context_device_count(ctx);
  int width[NCOLS];
  for (int c = 0; c < NCOLS; c++) width[c] = (int)strlen(headers[c]);
  char cells[NCOLS][160];
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!platform_selected(platforms, hdal_device_platform(d))) continue;
    device_cells(d, cells);
    for (int c = 0; c < NCOLS; c++)
      if ((int)strlen(cells[c]) > width[c]) width[c] = (int)strlen(cells[c]);
  }
  print_row(headers, width);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!platform_selected(platforms, hdal_device_platform(d))) continue;
    device_cells(d, cells);
    const char *row[NCOLS];
    for (int c = 0; c < NCOLS; c++) row[c] = cells[c];
    print_row(row, width);
    if (hdal_device_runtime_class_reason(d)) printf("    (%s)\n", hdal_device_runtime_class_reason(d));
  }
  printf("\nBackends:\n");
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    printf("  %-8s %s\n", hdal_context_backend_name(ctx, i), hdal_context_backend_status(ctx, i));
}

/* ---- topology: the CPU devices are the NUMA nodes ---- */

static int max_numa_node(hdal_context *ctx) {
  int max = -1;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    int node = hdal_device_numa_node(hdal_context_device(ctx, i));
    if (node > max) max = node;
  }
  return max;
}

static const hdal_device *numa_cpu_device(hdal_context *ctx, int node) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_is_addressable(d) && !strcmp(hdal_device_platform(d), "cpu") && hdal_device_numa_node(d) == node)
      return d;
  }
  return NULL;
}

static void print_topology(hdal_context *ctx, const char *platforms) {
  printf("\nTopology:\n");
  for (int node = 0; node <= max_numa_node(ctx) + 1; node++) {
    int key = node <= max_numa_node(ctx) ? node : -1; /* last: devices with no known node */
    const hdal_device *cpu = key >= 0 ? numa_cpu_device(ctx, key) : NULL;
    bool any = false;
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_numa_node(d) == key && platform_selected(platforms, hdal_device_platform(d))) any = true;
    }
    if (!cpu && !any) continue;
    if (key < 0) printf("  no NUMA affinity\n");
    else if (cpu)
      printf("  NUMA node %d: cpuset %s, %s cores, %s PUs\n", key, hdal_device_attribute_get(cpu, "cpuset"),
             hdal_device_attribute_get(cpu, "cores"), hdal_device_attribute_get(cpu, "pus"));
    else printf("  NUMA node %d\n", key);
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_numa_node(d) == key && platform_selected(platforms, hdal_device_platform(d)))
        printf("    device %d: %s %s\n", hdal_device_id(d), hdal_device_platform(d), hdal_device_kind(d));
    }
  }
}

/* ---- JSON ---- */

static void device_json(json_writer *w, const hdal_device *d) {
  DLDevice dl = hdal_device_dlpack_device(d);
  json_open(w, NULL, '{');
  json_int(w, "id", hdal_device_id(d));
  json_int(w, "process_index", hdal_device_process_index(d));
  json_string(w, "platform", hdal_device_platform(d));
  json_string(w, "kind", hdal_device_kind(d));
  json_int(w, "local_hardware_id", hdal_device_local_hardware_id(d));
  json_string(w, "runtime_class", class_name(hdal_device_runtime_class(d)));
  json_string(w, "runtime_class_reason", hdal_device_runtime_class_reason(d));
  json_bool(w, "addressable", hdal_device_is_addressable(d));
  json_int(w, "memory_bytes", (long long)hdal_device_memory_bytes(d));
  json_int(w, "numa_node", hdal_device_numa_node(d));
  json_open(w, "dlpack_device", '{');
  json_int(w, "device_type", dl.device_type);
  json_string(w, "device_type_name", dl_type_name(dl.device_type));
  json_int(w, "device_id", dl.device_id);
  json_close(w, '}');
  json_open(w, "attributes", '{');
  const char *k, *v;
  for (size_t i = 0; hdal_device_attribute(d, i, &k, &v); i++) json_string(w, k, v);
  json_close(w, '}');
  json_close(w, '}');
}

static void topology_json(json_writer *w, hdal_context *ctx, const char *platforms) {
  json_open(w, "topology", '[');
  for (int node = 0; node <= max_numa_node(ctx); node++) {
    const hdal_device *cpu = numa_cpu_device(ctx, node);
    json_open(w, NULL, '{');
    json_int(w, "numa_node", node);
    json_open(w, "devices", '[');
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_numa_node(d) == node && platform_selected(platforms, hdal_device_platform(d)))
        json_int(w, NULL, hdal_device_id(d));
    }
    json_close(w, ']');
    if (cpu) {
      json_string(w, "cpuset", hdal_device_attribute_get(cpu, "cpuset"));
      json_int(w, "cores", atoll(hdal_device_attribute_get(cpu, "cores")));
      json_int(w, "pus", atoll(hdal_device_attribute_get(cpu, "pus")));
    }
    json_close(w, '}');
  }
  json_close(w, ']');
}

static int print_json(hdal_context *ctx, const char *platforms, bool topology) {
  json_writer w;
  json_begin(&w, stdout);
  json_string(&w, "hdal_version", hdal_version_string());
  json_int(&w, "process_index", hdal_context_process_index(ctx));
  json_int(&w, "process_count", hdal_context_process_count(ctx));
  json_open(&w, "devices", '[');
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (platform_selected(platforms, hdal_device_platform(d))) device_json(&w, d);
  }
  json_close(&w, ']');
  json_open(&w, "backends", '[');
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++) {
    json_open(&w, NULL, '{');
    json_string(&w, "name", hdal_context_backend_name(ctx, i));
    json_string(&w, "status", hdal_context_backend_status(ctx, i));
    json_close(&w, '}');
  }
  json_close(&w, ']');
  if (topology) topology_json(&w, ctx, platforms);
  return json_end(&w) == 0 ? 0 : 1;
}

/* hwloc dlopens all its plugins at its first topology, even those hdal keeps
 * from running (the GPU ones, libpciaccess) and libxml2's, whose libraries
 * (X11, ICU, ...) cost more than the whole CPU discovery.  The tool owns its
 * process, so it tells hwloc before anything starts; a user's own setting
 * wins.  hwloc reads its XML exports without libxml2. */
static void skip_unused_hwloc_plugins(void) {
  setenv("HWLOC_PLUGINS_BLACKLIST",
         "hwloc_gl,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero,hwloc_pci,hwloc_xml_libxml", 0);
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},         {"platform", required_argument, NULL, 'p'},
      {"topology", no_argument, NULL, 't'},     {"backends", required_argument, NULL, 'b'},
      {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
      HDAL_LS_EXTRA_OPTIONS {NULL, 0, NULL, 0},
  };
  bool json = false, topology = false;
  const char *platforms = NULL, *backends = NULL;
  hdal_ls_init(&argc, &argv);
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":jp:tb:hV", longopts, NULL)) != -1;) {
    switch (c) {
    case 'j': json = true; break;
    case 'p': platforms = optarg; break;
    case 't': topology = true; break;
    case 'b': backends = optarg; break;
    case 'h': usage(stdout); return hdal_ls_exit(0);
    case 'V': printf("%s (hdal) %s\n", HDAL_LS_NAME, hdal_version_string()); return hdal_ls_exit(0);
    case ':':
      fprintf(stderr, "%s: option '%s' needs an argument\nTry '%s --help' for more information.\n", HDAL_LS_NAME,
              argv[optind - 1], HDAL_LS_NAME);
      return hdal_ls_exit(EXIT_USAGE);
    default:
      if (hdal_ls_option(c, optarg)) break;
      fprintf(stderr, "%s: unknown option '%s'\nTry '%s --help' for more information.\n", HDAL_LS_NAME,
              argv[optind - 1], HDAL_LS_NAME);
      return hdal_ls_exit(EXIT_USAGE);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\nTry '%s --help' for more information.\n", HDAL_LS_NAME,
            argv[optind], HDAL_LS_NAME);
    return hdal_ls_exit(EXIT_USAGE);
  }

  skip_unused_hwloc_plugins();
  hdal_context_options opts = {.struct_size = sizeof opts, .backends = backends};
  hdal_context *ctx;
  hdal_error *err = hdal_ls_context_create(&opts, &ctx);
  if (err) {
    fprintf(stderr, "%s: %s (%s)\n", HDAL_LS_NAME, hdal_error_message(err), hdal_code_name(hdal_error_code(err)));
    hdal_error_destroy(err);
    return hdal_ls_exit(1);
  }
  int rc = 0;
  if (hdal_ls_should_print(ctx)) {
    if (json) rc = print_json(ctx, platforms, topology);
    else {
      print_table(ctx, platforms);
      if (topology) print_topology(ctx, platforms);
    }
    if (fflush(stdout) != 0) rc = 1;
  }
  hdal_context_destroy(ctx);
  return hdal_ls_exit(rc);
}
