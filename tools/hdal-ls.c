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
#include "text.h"

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

/* The row's cells, escaped (text.h) and malloc'ed; false when out of memory. */
static bool device_cells(const hdal_device *d, char *cells[NCOLS]) {
  DLDevice dl = hdal_device_dlpack_device(d);
  char raw[NCOLS][64];
  snprintf(raw[0], 64, "%d", hdal_device_id(d));
  snprintf(raw[1], 64, "%d", hdal_device_process_index(d));
  snprintf(raw[4], 64, "%s", class_name(hdal_device_runtime_class(d)));
  snprintf(raw[5], 64, "%s", hdal_device_is_addressable(d) ? "yes" : "no");
  human_bytes(hdal_device_memory_bytes(d), raw[6], 64);
  if (hdal_device_numa_node(d) < 0) snprintf(raw[7], 64, "-");
  else snprintf(raw[7], 64, "%d", hdal_device_numa_node(d));
  snprintf(raw[8], 64, "%s:%d", dl_type_name(dl.device_type), dl.device_id);
  bool ok = true;
  for (int c = 0; c < NCOLS; c++) {
    const char *text = c == 2 ? hdal_device_platform(d) : c == 3 ? hdal_device_kind(d) : raw[c];
    ok &= (cells[c] = text_escape(text)) != NULL;
  }
  return ok;
}

static void cells_free(char *cells[NCOLS]) {
  for (int c = 0; c < NCOLS; c++) free(cells[c]), cells[c] = NULL;
}

static void print_row(char *const cells[NCOLS], const size_t width[NCOLS]) {
  for (int c = 0; c + 1 < NCOLS; c++) printf("%s%*s  ", cells[c], (int)(width[c] - text_width(cells[c])), "");
  printf("%s\n", cells[NCOLS - 1]);
}

static int print_table(hdal_context *ctx, const char *platforms) {
  size_t n = hdal_context_device_count(ctx);
  size_t width[NCOLS];
  for (int c = 0; c < NCOLS; c++) width[c] = strlen(headers[c]);
  char *cells[NCOLS] = {NULL};
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!platform_selected(platforms, hdal_device_platform(d))) continue;
    bool ok = device_cells(d, cells);
    for (int c = 0; ok && c < NCOLS; c++)
      if (text_width(cells[c]) > width[c]) width[c] = text_width(cells[c]);
    cells_free(cells);
    if (!ok) return -1;
  }
  print_row((char *const *)headers, width);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!platform_selected(platforms, hdal_device_platform(d))) continue;
    bool ok = device_cells(d, cells);
    if (ok) print_row(cells, width);
    cells_free(cells);
    if (!ok) return -1;
    if (hdal_device_runtime_class_reason(d)) {
      printf("    (");
      text_print(stdout, hdal_device_runtime_class_reason(d));
      printf(")\n");
    }
  }
  printf("\nBackends:\n");
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++) {
    char *name = text_escape(hdal_context_backend_name(ctx, i));
    printf("  %-8s ", name ? name : "?");
    text_print(stdout, hdal_context_backend_status(ctx, i));
    printf("\n");
    free(name);
  }
  return 0;
}

/* ---- topology: the CPU devices are the NUMA nodes ----
 * The groups are the NUMA nodes that devices name, in order: the tool never
 * indexes or allocates by a node number, which a module chooses. */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static const hdal_device *numa_cpu_device(hdal_context *ctx, int node) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_is_addressable(d) && !strcmp(hdal_device_platform(d), "cpu") && hdal_device_numa_node(d) == node)
      return d;
  }
  return NULL;
}

/* Is device d shown under node `key` (-1: no NUMA affinity, any negative node)? */
static bool in_group(const hdal_device *d, int key) {
  int node = hdal_device_numa_node(d);
  return key < 0 ? node < 0 : node == key;
}

/* The NUMA nodes to show: each that holds a CPU device of this process or a
 * selected device, ascending, then -1 when a selected device has none.  *n is
 * their count; NULL when out of memory. */
static int *topology_groups(hdal_context *ctx, const char *platforms, size_t *n) {
  size_t count = hdal_context_device_count(ctx), k = 0;
  int *nodes = malloc((count + 1) * sizeof *nodes);
  if (!nodes) return NULL;
  bool unknown = false;
  for (size_t i = 0; i < count; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    bool selected = platform_selected(platforms, hdal_device_platform(d));
    int node = hdal_device_numa_node(d);
    if (node < 0) unknown |= selected;
    else if (selected || (hdal_device_is_addressable(d) && !strcmp(hdal_device_platform(d), "cpu")))
      nodes[k++] = node;
  }
  qsort(nodes, k, sizeof *nodes, cmp_int);
  size_t m = 0;
  for (size_t i = 0; i < k; i++)
    if (m == 0 || nodes[m - 1] != nodes[i]) nodes[m++] = nodes[i];
  if (unknown) nodes[m++] = -1;
  *n = m;
  return nodes;
}

/* A CPU device's count attribute ("cores", "pus") as a number, -1 when absent
 * or not a decimal number (a module may set anything). */
static long long count_attribute(const hdal_device *cpu, const char *key) {
  const char *v = hdal_device_attribute_get(cpu, key);
  if (!v || !*v || strlen(v) > 18 || strspn(v, "0123456789") != strlen(v)) return -1;
  return atoll(v);
}

static int print_topology(hdal_context *ctx, const char *platforms) {
  size_t ngroups;
  int *groups = topology_groups(ctx, platforms, &ngroups);
  if (!groups) return -1;
  printf("\nTopology:\n");
  for (size_t g = 0; g < ngroups; g++) {
    int key = groups[g];
    const hdal_device *cpu = key >= 0 ? numa_cpu_device(ctx, key) : NULL;
    if (key < 0) printf("  no NUMA affinity\n");
    else {
      printf("  NUMA node %d", key);
      const char *cpuset = cpu ? hdal_device_attribute_get(cpu, "cpuset") : NULL;
      long long cores = cpu ? count_attribute(cpu, "cores") : -1, pus = cpu ? count_attribute(cpu, "pus") : -1;
      const char *sep = ": ";
      if (cpuset) printf("%scpuset ", sep), text_print(stdout, cpuset), sep = ", ";
      if (cores >= 0) printf("%s%lld cores", sep, cores), sep = ", ";
      if (pus >= 0) printf("%s%lld PUs", sep, pus);
      printf("\n");
    }
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (!in_group(d, key) || !platform_selected(platforms, hdal_device_platform(d))) continue;
      printf("    device %d: ", hdal_device_id(d));
      text_print(stdout, hdal_device_platform(d));
      printf(" ");
      text_print(stdout, hdal_device_kind(d));
      printf("\n");
    }
  }
  free(groups);
  return 0;
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
  json_uint(w, "memory_bytes", hdal_device_memory_bytes(d));
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

static int topology_json(json_writer *w, hdal_context *ctx, const char *platforms) {
  size_t ngroups;
  int *groups = topology_groups(ctx, platforms, &ngroups);
  if (!groups) return -1;
  json_open(w, "topology", '[');
  for (size_t g = 0; g < ngroups && groups[g] >= 0; g++) {
    int node = groups[g];
    const hdal_device *cpu = numa_cpu_device(ctx, node);
    json_open(w, NULL, '{');
    json_int(w, "numa_node", node);
    json_open(w, "devices", '[');
    for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
      const hdal_device *d = hdal_context_device(ctx, i);
      if (in_group(d, node) && platform_selected(platforms, hdal_device_platform(d))) json_int(w, NULL, hdal_device_id(d));
    }
    json_close(w, ']');
    if (cpu) {
      const char *cpuset = hdal_device_attribute_get(cpu, "cpuset");
      long long cores = count_attribute(cpu, "cores"), pus = count_attribute(cpu, "pus");
      if (cpuset) json_string(w, "cpuset", cpuset);
      if (cores >= 0) json_int(w, "cores", cores);
      if (pus >= 0) json_int(w, "pus", pus);
    }
    json_close(w, '}');
  }
  json_close(w, ']');
  free(groups);
  return 0;
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
  int rc = topology ? topology_json(&w, ctx, platforms) : 0;
  return json_end(&w) == 0 && rc == 0 ? 0 : 1;
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

/* Bad usage: the message, the hint, exit status 2. */
static int usage_error(const char *fmt, const char *what) __attribute__((format(printf, 1, 0)));
static int usage_error(const char *fmt, const char *what) {
  fprintf(stderr, "%s: ", HDAL_LS_NAME);
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\nTry '%s --help' for more information.\n", HDAL_LS_NAME);
  return hdal_ls_exit(EXIT_USAGE);
}

/* getopt_long answered '?': optopt is the short option it did not know, or
 * the long option given an argument it does not take, or 0 for a long option
 * it did not know (then `arg`, the element it skipped, names it).  A short
 * option inside a group (-xj) has no element of its own, hence optopt. */
static int unknown_option(const struct option *longopts, const char *arg) {
  if (optopt == 0) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    char *shown = text_escape(name);
    int rc = usage_error("unknown option '%s'", shown ? shown : "?");
    free(shown);
    return rc;
  }
  for (const struct option *o = longopts; o->name; o++)
    if (o->val == optopt && o->has_arg == no_argument && !strncmp(arg, "--", 2)) {
      char name[64];
      snprintf(name, sizeof name, "--%s", o->name);
      return usage_error("option '%s' takes no argument", name);
    }
  char name[8];
  if (optopt > 0x20 && optopt < 0x7f) snprintf(name, sizeof name, "-%c", optopt);
  else snprintf(name, sizeof name, "-\\x%02x", optopt & 0xff);
  return usage_error("unknown option '%s'", name);
}

/* getopt_long answered ':' for `arg`, the last element of argv: a long option
 * as the user wrote it, or a group of short ones ending with optopt. */
static int missing_argument(const char *arg) {
  char name[64];
  if (!strncmp(arg, "--", 2)) snprintf(name, sizeof name, "%s", arg);
  else snprintf(name, sizeof name, "-%c", optopt);
  char *shown = text_escape(name);
  int rc = usage_error("option '%s' needs an argument", shown ? shown : "?");
  free(shown);
  return rc;
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
      return missing_argument(argv[optind - 1]);
    default:
      if (hdal_ls_option(c, optarg)) break;
      return unknown_option(longopts, argv[optind - 1]);
    }
  }
  if (optind < argc) {
    char *shown = text_escape(argv[optind]);
    int rc = usage_error("unexpected argument '%s'", shown ? shown : "?");
    free(shown);
    return rc;
  }

  skip_unused_hwloc_plugins();
  hdal_context_options opts = {.struct_size = sizeof opts, .backends = backends};
  hdal_context *ctx;
  hdal_error *err = hdal_ls_context_create(&opts, &ctx);
  if (err && backends && hdal_error_code(err) == HDAL_INVALID_ARGUMENT) {
    /* --backends LIST that hdal refuses is bad usage; HDAL_BACKENDS is not. */
    char *shown = text_escape(hdal_error_message(err));
    hdal_error_destroy(err);
    int rc = usage_error("%s", shown ? shown : "invalid backend list");
    free(shown);
    return rc;
  }
  if (err) {
    fprintf(stderr, "%s: %s (%s)\n", HDAL_LS_NAME, hdal_error_message(err), hdal_code_name(hdal_error_code(err)));
    hdal_error_destroy(err);
    return hdal_ls_exit(1);
  }
  int rc = 0;
  if (hdal_ls_should_print(ctx)) {
    if (json) rc = print_json(ctx, platforms, topology);
    else if (print_table(ctx, platforms) != 0 || (topology && print_topology(ctx, platforms) != 0)) {
      fprintf(stderr, "%s: out of memory\n", HDAL_LS_NAME);
      rc = 1;
    }
    if (fflush(stdout) != 0) rc = 1;
  }
  hdal_context_destroy(ctx);
  return hdal_ls_exit(rc);
}
