/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --query=FIELD,... --format=csv[,noheader][,nounits]: one CSV row per
 * device, as nvidia-smi --query-gpu prints them (", " between values, "[N/A]"
 * for what a device does not say, units in the header and after numbers). */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ls.h"
#include "text.h"

typedef enum {
  F_ID, F_PROCESS, F_PLATFORM, F_KIND, F_LOCAL_ID, F_UUID, F_PCI, F_MEMORY, F_NUMA, F_CLASS, F_ADDRESSABLE,
  F_DLPACK
} field_id;

static const struct {
  const char *name, *unit, *help;
  field_id id;
} fields[] = {
    {"id", NULL, "the device's id in the context (hdal_device_id)", F_ID},
    {"process", NULL, "the index of the process that owns it (hdal-ls-mpi: the rank)", F_PROCESS},
    {"platform", NULL, "its backend: cpu, cuda, opencl, rocm, a module's name", F_PLATFORM},
    {"kind", NULL, "the model name (hdal_device_kind)", F_KIND},
    {"name", NULL, "the same as kind (nvidia-smi's name)", F_KIND},
    {"local_id", NULL, "its number inside its backend (the selector's ordinal)", F_LOCAL_ID},
    {"uuid", NULL, "the UUID its runtime reports", F_UUID},
    {"pci.bus_id", NULL, "the PCI address, dddd:bb:dd.f", F_PCI},
    {"memory.total", "MiB", "its memory, in MiB (rounded down)", F_MEMORY},
    {"numa_node", NULL, "the nearest NUMA node (hwloc logical index)", F_NUMA},
    {"runtime_class", NULL, "pjrt or ifrt-native", F_CLASS},
    {"addressable", NULL, "yes when this process can use it", F_ADDRESSABLE},
    {"dlpack", NULL, "its DLPack device, type:id", F_DLPACK},
};
enum { NFIELDS = sizeof fields / sizeof *fields };

void ls_query_help(FILE *out) {
  fprintf(out, "Fields of --query (comma-separated; printed as CSV, see --format):\n");
  for (size_t i = 0; i < NFIELDS; i++) fprintf(out, "  %-14s %s\n", fields[i].name, fields[i].help);
}

void ls_query_field_names(char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NFIELDS && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", fields[i].name);
}

int ls_query_parse(const char *list, ls_query *q, char **bad) {
  *bad = NULL;
  q->n = 0;
  for (const char *p = list;; p++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    size_t i = 0;
    while (i < NFIELDS && (strlen(fields[i].name) != len || strncmp(fields[i].name, p, len))) i++;
    if (i == NFIELDS || q->n == LS_QUERY_MAX) {
      *bad = strndup(p, len);
      return *bad ? 1 : -1;
    }
    q->fields[q->n++] = i;
    if (!e) return 0;
    p = e;
  }
}

bool ls_query_format(const char *format, ls_query *q) {
  q->header = q->units = true;
  if (strncmp(format, "csv", 3) || (format[3] && format[3] != ',')) return false;
  for (const char *p = format + 3; *p == ',';) {
    p++;
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 8 && !strncmp(p, "noheader", 8)) q->header = false;
    else if (len == 7 && !strncmp(p, "nounits", 7)) q->units = false;
    else return false;
    p += len;
  }
  return true;
}

/* A value as CSV: escaped for the terminal (text.h), then quoted when it holds
 * what a CSV reader would split or trim on. */
static int put_value(FILE *out, const char *s) {
  char *e = text_escape(s);
  if (!e) return -1;
  size_t n = strlen(e);
  bool quote = strpbrk(e, ",\"") || (n && (e[0] == ' ' || e[n - 1] == ' '));
  if (!quote) fputs(e, out);
  else {
    fputc('"', out);
    for (const char *p = e; *p; p++) {
      if (*p == '"') fputc('"', out);
      fputc(*p, out);
    }
    fputc('"', out);
  }
  free(e);
  return 0;
}

static const char *na(const char *s) { return s ? s : "[N/A]"; }

static int put_field(FILE *out, const ls_query *q, size_t f, const hdal_device *d) {
  char buf[96];
  const char *s = buf;
  switch (fields[f].id) {
  case F_ID: snprintf(buf, sizeof buf, "%d", hdal_device_id(d)); break;
  case F_PROCESS: snprintf(buf, sizeof buf, "%d", hdal_device_process_index(d)); break;
  case F_PLATFORM: s = hdal_device_platform(d); break;
  case F_KIND: s = hdal_device_kind(d); break;
  case F_LOCAL_ID: snprintf(buf, sizeof buf, "%d", hdal_device_local_hardware_id(d)); break;
  case F_UUID: s = na(hdal_device_attribute_get(d, HDAL_ATTRIBUTE_UUID)); break;
  case F_PCI: s = na(hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID)); break;
  case F_MEMORY:
    if (!hdal_device_memory_bytes(d)) s = "[N/A]";
    else snprintf(buf, sizeof buf, "%" PRIu64 "%s", hdal_device_memory_bytes(d) >> 20, q->units ? " MiB" : "");
    break;
  case F_NUMA:
    if (hdal_device_numa_node(d) < 0) s = "[N/A]";
    else snprintf(buf, sizeof buf, "%d", hdal_device_numa_node(d));
    break;
  case F_CLASS: s = hdal_runtime_class_name(hdal_device_runtime_class(d)); break;
  case F_ADDRESSABLE: s = hdal_device_is_addressable(d) ? "yes" : "no"; break;
  case F_DLPACK: {
    DLDevice dl = hdal_device_dlpack_device(d);
    snprintf(buf, sizeof buf, "%s:%d", ls_dl_type_name(dl.device_type), dl.device_id);
    break;
  }
  }
  return put_value(out, s);
}

int ls_print_csv(const ls_view *v, const ls_query *q) {
  if (q->header)
    for (size_t i = 0; i < q->n; i++) {
      const char *unit = q->units ? fields[q->fields[i]].unit : NULL;
      printf("%s%s%s%s%s", i ? ", " : "", fields[q->fields[i]].name, unit ? " [" : "", unit ? unit : "",
             unit ? "]" : "");
    }
  if (q->header) putchar('\n');
  for (size_t i = 0; i < hdal_context_device_count(v->ctx); i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (!ls_selected(v, d)) continue;
    for (size_t f = 0; f < q->n; f++) {
      if (f) fputs(", ", stdout);
      if (put_field(stdout, q, q->fields[f], d) != 0) return -1;
    }
    putchar('\n');
  }
  return 0;
}
