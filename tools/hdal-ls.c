/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — lists the compute devices hdal finds: a table (with the NUMA
 * nodes near them: --topology), one line per device (--list), a JSON document
 * (--json, format 1), CSV rows of chosen fields (--query), the machine's hwloc
 * topology with the devices attached (--of xml), or the scheduler's and
 * container runtime's views of the GPUs (--of gres, cdi, nfd).  Its output
 * code is in ls_*.c (the table's part shared with the Python package:
 * tools/table-sources.am).
 *
 * Exit status: 0 success (a machine without GPUs included), 1 hdal could not
 * create its context, 2 bad usage.
 */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hdal.h>
#include "hwloc_policy.h"
#include "ls.h"
#include "ls_context.h"
#include "text.h"

enum { EXIT_USAGE = 2 };
enum { OPT_OF = 0x200, OPT_SELECT, OPT_QUERY, OPT_FORMAT, OPT_HELP_QUERY };

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s [OPTION]...\n"
          "List the compute devices hdal finds: CPUs (hwloc), CUDA, ROCm and Level Zero GPUs, OpenCL devices,\n"
          "and Vulkan devices (listed only: IFRT-native).\n"
          "\n"
          "  -L, --list             one line per device: id, platform, kind, class, DLPack device, identity\n"
          "  -j, --json             print one JSON document (format 1, see hdal-ls(1)) instead of a table\n"
          "      --of FORMAT        output format: table (default), list, json, or xml (hwloc XML with the\n"
          "                         devices attached, for lstopo: hdal-ls --of xml >m.xml; lstopo -i m.xml m.svg),\n"
          "                         gres (Slurm gres.conf lines for this node's GPUs), cdi (a Container\n"
          "                         Device Interface spec of them) or nfd (Node Feature Discovery features)\n"
          "  -p, --platform LIST    only devices of these platforms (comma-separated: cpu,cuda,opencl,...)\n"
          "  -t, --topology         also show NUMA nodes with their cores and the devices near them\n"
          "  -b, --backends LIST    backends to use, as HDAL_BACKENDS (e.g. cpu,opencl or -cuda)\n"
          "      --select SEL       devices to keep, as HDAL_DEVICE_SELECTOR (e.g. 'cuda:0,1;!opencl:cpu')\n"
          "      --query=FIELD,...  one CSV row per device with these fields (--help-query lists them)\n"
          "      --format=csv[,noheader][,nounits]  how --query prints (default csv)\n"
          HDAL_LS_EXTRA_HELP
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and exit\n"
          "\n"
          "Environment: HDAL_BACKENDS, HDAL_DEVICE_SELECTOR, HDAL_BACKEND_PATH, HDAL_CUDA_LIBRARY, HDAL_ROCM_LIBRARY,\n"
          "HDAL_LEVELZERO_LIBRARY, HDAL_VULKAN_LIBRARY, HDAL_DEBUG; hwloc's HWLOC_XMLFILE and HWLOC_SYNTHETIC;\n"
          "the ICD loader's OCL_ICD_VENDORS; the Vulkan loader's VK_DRIVER_FILES.\n"
          "Exit status: 0 on success (also with no GPU), 1 if hdal fails, 2 on bad usage.\n",
          HDAL_LS_NAME);
}

typedef enum { OUT_TABLE, OUT_LIST, OUT_JSON, OUT_XML, OUT_GRES, OUT_CDI, OUT_NFD } output_format;

static bool parse_format(const char *s, output_format *f) {
  static const char *const names[] = {"table", "list", "json", "xml", "gres", "cdi", "nfd"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcasecmp(s, names[i])) return *f = (output_format)i, true;
  return false;
}

/* Bad usage: the message, the hint, exit status 2. */
static int usage_error(const char *fmt, const char *what) __attribute__((format(printf, 1, 0)));
static int usage_error(const char *fmt, const char *what) {
  /* One write where memory allows: stderr is unbuffered, and mpirun --tag-output tags each piece it reads of a
   * rank's output, which split the line. */
  char *msg = NULL;
  if (asprintf(&msg, fmt, what) < 0) msg = NULL;
  fprintf(hdal_ls_stderr(), "%s: %s\nTry '%s --help' for more information.\n", HDAL_LS_NAME, msg ? msg : fmt,
          HDAL_LS_NAME);
  free(msg);
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

/* The platforms this context knows: its backends' names and its devices'
 * platforms, each once, in that order; a NULL-terminated malloc'ed array. */
static const char **known_platforms(hdal_context *ctx) {
  size_t nb = hdal_context_backend_count(ctx), nd = hdal_context_device_count(ctx), n = 0;
  const char **known = calloc(nb + nd + 1, sizeof *known);
  if (!known) return NULL;
  for (size_t i = 0; i < nb + nd; i++) {
    const char *p = i < nb ? hdal_context_backend_name(ctx, i) : hdal_device_platform(hdal_context_device(ctx, i - nb));
    size_t k = 0;
    while (k < n && strcmp(known[k], p)) k++;
    if (k == n) known[n++] = p;
  }
  return known;
}

/* --platform LIST, as the backends spell the names: each name is a known
 * platform, matched exactly or else case-insensitively when only one matches.
 * 0 and *out (malloc'ed), or EXIT_USAGE after saying why, or 1 when out of memory. */
static int resolve_platforms(hdal_context *ctx, const char *list, char **out) {
  const char **known = known_platforms(ctx);
  char *canon = malloc(strlen(list) + 1), *end = canon;
  int rc = known && canon ? 0 : 1;
  if (rc) fprintf(hdal_ls_stderr(), "%s: out of memory\n", HDAL_LS_NAME);
  if (canon) *canon = '\0';
  for (const char *p = list; !rc && *p;) {
    size_t len = strcspn(p, ",");
    const char *match = NULL;
    int nocase = 0;
    for (size_t k = 0; known[k] && !match; k++)
      if (strlen(known[k]) == len && !strncmp(known[k], p, len)) match = known[k];
    for (size_t k = 0; known[k] && !match; k++)
      if (strlen(known[k]) == len && !strncasecmp(known[k], p, len)) nocase++;
    for (size_t k = 0; known[k] && !match && nocase == 1; k++)
      if (strlen(known[k]) == len && !strncasecmp(known[k], p, len)) match = known[k];
    if (!match && len) { /* an empty name (a stray comma) selects nothing and harms nothing */
      char *name = strndup(p, len), *shown = name ? text_escape(name) : NULL;
      fprintf(hdal_ls_stderr(), "%s: %s platform '%s' in --platform; known platforms:", HDAL_LS_NAME,
              nocase > 1 ? "ambiguous" : "unknown", shown ? shown : "?");
      for (size_t k = 0; known[k]; k++) {
        fputs(k ? ", " : " ", hdal_ls_stderr());
        text_print(hdal_ls_stderr(), known[k]);
      }
      fprintf(hdal_ls_stderr(), "\nTry '%s --help' for more information.\n", HDAL_LS_NAME);
      free(name);
      free(shown);
      rc = EXIT_USAGE;
    } else if (match) {
      if (end != canon) *end++ = ',';
      end = stpcpy(end, match);
    }
    p += len + (p[len] == ',');
  }
  if (!rc && end == canon) {
    fprintf(hdal_ls_stderr(), "%s: --platform '%s' names no platform\nTry '%s --help' for more information.\n", HDAL_LS_NAME,
            list, HDAL_LS_NAME);
    rc = EXIT_USAGE;
  }
  free(known);
  if (rc) free(canon);
  else *out = canon;
  return rc;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},         {"list", no_argument, NULL, 'L'},
      {"of", required_argument, NULL, OPT_OF},  {"platform", required_argument, NULL, 'p'},
      {"topology", no_argument, NULL, 't'},     {"backends", required_argument, NULL, 'b'},
      {"select", required_argument, NULL, OPT_SELECT},  {"query", required_argument, NULL, OPT_QUERY},
      {"format", required_argument, NULL, OPT_FORMAT},  {"help-query", no_argument, NULL, OPT_HELP_QUERY},
      {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
      HDAL_LS_EXTRA_OPTIONS {NULL, 0, NULL, 0},
  };
  output_format format = OUT_TABLE; /* the last of -j, -L, --of wins */
  bool topology = false;
  const char *platforms = NULL, *backends = NULL, *selector = NULL, *query = NULL, *csv_format = "csv";
  bool format_given = false;
  hdal_ls_init(&argc, &argv);
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":jLp:tb:hV", longopts, NULL)) != -1;) {
    switch (c) {
    case 'j': format = OUT_JSON; break;
    case 'L': format = OUT_LIST; break;
    case OPT_OF:
      if (!parse_format(optarg, &format)) {
        char *shown = text_escape(optarg);
        int rc = usage_error("--of '%s': expected table, list, json, xml, gres, cdi or nfd", shown ? shown : "?");
        free(shown);
        return rc;
      }
      break;
    case 'p': platforms = optarg; break;
    case 't': topology = true; break;
    case 'b': backends = optarg; break;
    case OPT_SELECT: selector = optarg; break;
    case OPT_QUERY: query = optarg; break;
    case OPT_FORMAT: csv_format = optarg, format_given = true; break;
    case OPT_HELP_QUERY: ls_query_help(stdout); return hdal_ls_exit(0);
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

  ls_query q;
  if (format_given && !query) return usage_error("--format%s applies to --query", "");
  if (query) {
    char *bad = NULL, known[512], message[1024];
    int r = ls_query_parse(query, &q, &bad);
    if (r != 0) {
      char *shown = bad ? text_escape(bad) : NULL;
      ls_query_field_names(known, sizeof known);
      snprintf(message, sizeof message, "--query: unknown field '%.256s' (known: %s)", shown ? shown : "?", known);
      free(shown);
      free(bad);
      return usage_error("%s", message);
    }
    if (!ls_query_format(csv_format, &q)) {
      char *shown = text_escape(csv_format);
      int rc = usage_error("--format '%s': expected csv, csv,noheader, csv,nounits or csv,noheader,nounits",
                           shown ? shown : "?");
      free(shown);
      return rc;
    }
  }

  /* The library's hwloc policy, and libxml2's plugin left out too: its
   * libraries (ICU, ...) cost more than the whole CPU discovery, and hwloc
   * reads its own XML exports without it (docs/hwloc.md).  Held until exit. */
  hdal__hwloc_hold(HDAL__HWLOC_NO_LIBXML);
  hdal__hwloc_settled();
  hdal_context_options opts = {.struct_size = sizeof opts, .backends = backends, .device_selector = selector};
  hdal_context *ctx;
  hdal_error *err = hdal_ls_context_create(&opts, &ctx);
  if (err && (backends || selector) && hdal_error_code(err) == HDAL_INVALID_ARGUMENT) {
    /* --backends LIST or --select SEL that hdal refuses is bad usage; the variables are not. */
    char *shown = text_escape(hdal_error_message(err));
    hdal_error_destroy(err);
    int rc = usage_error("%s", shown ? shown : "invalid backend list");
    free(shown);
    return rc;
  }
  if (err) {
    fprintf(hdal_ls_stderr(), "%s: %s (%s)\n", HDAL_LS_NAME, hdal_error_message(err), hdal_code_name(hdal_error_code(err)));
    hdal_error_destroy(err);
    return hdal_ls_exit(1);
  }
  ls_view view = {.program = HDAL_LS_NAME, .ctx = ctx, .topology = topology};
  /* hdal-ls-mpi: every rank's binding, gathered by the printing rank (every rank takes part). */
  ls_binding *bindings = hdal_ls_bindings(&view.nbindings);
  view.bindings = bindings;
  char *selected = NULL;
  int rc = platforms ? resolve_platforms(ctx, platforms, &selected) : 0;
  view.platforms = selected;
  if (rc == 0 && hdal_ls_should_print(ctx)) {
    int out = 0;
    if (query) out = ls_print_csv(&view, &q);
    else switch (format) {
    case OUT_TABLE: out = ls_print_table(&view, stdout) != 0 || (topology && (ls_print_topology(&view) != 0 || ls_print_links(&view) != 0)) ? -1 : 0; break;
    case OUT_LIST: out = ls_print_list(&view); break;
    case OUT_JSON: out = ls_print_json(&view); break;
    case OUT_XML: out = ls_print_xml(&view); break;
    case OUT_GRES: out = ls_print_gres(&view); break;
    case OUT_CDI: out = ls_print_cdi(&view); break;
    case OUT_NFD: out = ls_print_nfd(&view); break;
    }
    if (out != 0 && format != OUT_XML && !ferror(stdout)) fprintf(hdal_ls_stderr(), "%s: out of memory\n", HDAL_LS_NAME);
    if (out != 0 || fflush(stdout) != 0) rc = 1;
  }
  free(selected);
  hdal_ls_bindings_free(bindings, view.nbindings);
  hdal_context_destroy(ctx);
  return hdal_ls_exit(rc);
}
