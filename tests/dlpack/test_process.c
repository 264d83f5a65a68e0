/* SPDX-License-Identifier: BSD-3-Clause */
/* Process tables: export, add, order, refusals (docs/dlpack.md, "Process tables"; the core part). */
#include "dlpack_testutil.h" /* config.h first */
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* Stand-ins for / (HDAL_FSROOT), made once in main(): the identities of three hosts (docs/dlpack.md,
 * "Hosts"), two of them with one hostname in two network namespaces. */
#define BOOT_A "8b1f3c52-6a0e-4d7b-9c11-2f4e5d6a7b8c"
#define BOOT_B "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
#define ID_A BOOT_A "/net:[4026531840]"
#define ID_A2 BOOT_A "/net:[4026532301]"
#define ID_B BOOT_B "/net:[4026531840]"
static char root_a[64], root_a2[64], root_b[64], root_none[64];

/* Made in main(), before any test runs: failures end the program (Check's assertions work only in tests). */
static void need(bool ok, const char *what) {
  if (!ok) {
    perror(what);
    exit(99);
  }
}

static void write_file(const char *root, const char *path, const char *text) {
  char file[256];
  snprintf(file, sizeof file, "%s%s", root, path);
  FILE *f = fopen(file, "w");
  need(f != NULL, file);
  fputs(text, f);
  need(fclose(f) == 0, file);
}

/* A root under /tmp with /proc's hostname, boot id and network namespace link (each NULL: none). */
static void fake_root(char *dir, size_t size, const char *hostname, const char *boot_id, const char *netns) {
  snprintf(dir, size, "/tmp/hdal-hosts.XXXXXX");
  need(mkdtemp(dir) != NULL, "mkdtemp");
  char path[256];
  static const char *const dirs[] = {"/proc", "/proc/sys", "/proc/sys/kernel", "/proc/sys/kernel/random", "/proc/self",
                                     "/proc/self/ns"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(path, sizeof path, "%s%s", dir, dirs[i]);
    need(mkdir(path, 0700) == 0, path);
  }
  if (hostname) write_file(dir, "/proc/sys/kernel/hostname", hostname);
  if (boot_id) write_file(dir, "/proc/sys/kernel/random/boot_id", boot_id);
  snprintf(path, sizeof path, "%s/proc/self/ns/net", dir);
  if (netns) need(symlink(netns, path) == 0, path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static hdal_context *ctx;
static void *blob;
static size_t len;

static void setup(void) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  setenv("HDAL_FSROOT", root_a, 1);
  ctx = test_context_with("cpu,ifrttest");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_ok(hdal_context_export_devices(ctx, &blob, &len));
}
static void teardown(void) {
  free(blob);
  hdal_context_destroy(ctx);
}

static void same_device_but_process(const hdal_device *a, const hdal_device *r, int process) {
  ck_assert_int_eq(hdal_device_process_index(r), process);
  ck_assert(!hdal_device_is_addressable(r));
  ck_assert_str_eq(hdal_device_platform(r), hdal_device_platform(a));
  ck_assert_str_eq(hdal_device_kind(r), hdal_device_kind(a));
  ck_assert_int_eq(hdal_device_local_hardware_id(r), hdal_device_local_hardware_id(a));
  ck_assert_int_eq(hdal_device_runtime_class(r), hdal_device_runtime_class(a));
  if (hdal_device_runtime_class_reason(a))
    ck_assert_str_eq(hdal_device_runtime_class_reason(r), hdal_device_runtime_class_reason(a));
  else
    ck_assert_ptr_null(hdal_device_runtime_class_reason(r));
  ck_assert_int_eq(hdal_device_dlpack_device(r).device_type, hdal_device_dlpack_device(a).device_type);
  ck_assert_int_eq(hdal_device_dlpack_device(r).device_id, hdal_device_dlpack_device(a).device_id);
  ck_assert_uint_eq(hdal_device_memory_bytes(r), hdal_device_memory_bytes(a));
  ck_assert_int_eq(hdal_device_numa_node(r), hdal_device_numa_node(a));
  ck_assert_uint_eq(hdal_device_attribute_count(r), hdal_device_attribute_count(a));
  for (size_t k = 0; k < hdal_device_attribute_count(a); k++) {
    const char *key, *value;
    ck_assert(hdal_device_attribute(a, k, &key, &value));
    ck_assert_str_eq(hdal_device_attribute_get(r, key), value);
    ck_assert_int_eq(hdal_device_attribute_type(r, k), hdal_device_attribute_type(a, k));
    ck_assert_uint_eq(hdal_device_attribute_flags(r, k), hdal_device_attribute_flags(a, k));
  }
}

START_TEST(add_keeps_everything_and_orders) {
  ck_assert_ok(hdal_context_add_process(ctx, 2, blob, len));
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len)); /* out of order: renumbered */
  ck_assert_uint_eq(hdal_context_device_count(ctx), 12);
  ck_assert_int_eq(hdal_context_process_count(ctx), 3);
  ck_assert_int_eq(hdal_context_process_index(ctx), 0);
  for (size_t i = 0; i < 12; i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), (int)(i / 4));
    if (i >= 4) same_device_but_process(hdal_context_device(ctx, i % 4), d, (int)(i / 4));
    else ck_assert(hdal_device_is_addressable(d));
  }
  /* cpu before ifrttest inside each process */
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 5)), "cpu");
  ck_assert_str_eq(hdal_device_platform(hdal_context_device(ctx, 6)), "ifrttest");
}
END_TEST

START_TEST(refusals_leave_context_unchanged) {
  ck_assert_error(hdal_context_add_process(ctx, 0, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process index 0 is this process's own");
  ck_assert_error(hdal_context_add_process(ctx, -2, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index -2 is negative");
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process 1 was already added");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  ck_assert_int_eq(hdal_context_process_count(ctx), 2);
}
END_TEST

/* The count of processes is an int: the last index that can be counted is
 * INT_MAX - 1 (count INT_MAX). */
START_TEST(index_that_cannot_be_counted_refused) {
  ck_assert_error(hdal_context_add_process(ctx, INT_MAX, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index 2147483647 cannot be counted: the process count would "
                  "exceed INT_MAX (2147483647)");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
  ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  ck_assert_ok(hdal_context_add_process(ctx, INT_MAX - 1, blob, len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  ck_assert_int_eq(hdal_context_process_count(ctx), INT_MAX);
  ck_assert_int_eq(hdal_device_process_index(hdal_context_device(ctx, 7)), INT_MAX - 1);
  ck_assert_error(hdal_context_add_process(ctx, INT_MAX, blob, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process index 2147483647 cannot be counted: the process count would "
                  "exceed INT_MAX (2147483647)");
  ck_assert_int_eq(hdal_context_process_count(ctx), INT_MAX);
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
}
END_TEST

START_TEST(every_truncation_refused) {
  for (size_t n = 0; n < len; n++) {
    hdal_error *e = hdal_context_add_process(ctx, 1, blob, n);
    ck_assert_msg(e != NULL, "a blob cut at %zu bytes was accepted", n);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    hdal_error_destroy(e);
    ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
    ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  }
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, 3), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: malformed process table (3 bytes): not an hdal process table (bad magic) at byte 0");
  char msg[200];
  snprintf(msg, sizeof msg, "hdal_context_add_process: malformed process table (%zu bytes): truncated at byte 8",
           len - 1);
  ck_assert_error(hdal_context_add_process(ctx, 1, blob, len - 1), HDAL_INVALID_ARGUMENT, msg);
}
END_TEST

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The bytes of a version 3 table's host name and id (at byte 20). */
static size_t host_fields_len(const unsigned char *t) {
  ck_assert_uint_eq(get_u32(t + 4), 3);
  size_t pos = 20;
  for (int f = 0; f < 2; f++) pos += 4 + (get_u32(t + pos) == 0xFFFFFFFFu ? 0 : get_u32(t + pos));
  return pos - 20;
}

/* Walks a version 2 or 3 table: the offsets of its attributes' type words in types[] (at most max, *n of
 * them), and, when out is not NULL, the same table in version `to` (1: no host fields, no type words; 2: no
 * host fields) in out, *out_len bytes. */
static void walk(const unsigned char *t, size_t tlen, size_t *types, size_t max, size_t *n, unsigned char *out,
                 size_t *out_len, unsigned to) {
  size_t pos = 20, o = 20, ndev = get_u32(t + 16);
  unsigned version = get_u32(t + 4);
  *n = 0;
  ck_assert_uint_ge(version, 2);
  ck_assert_uint_le(version, 3);
#define SKIP_STR() (pos += 4 + (get_u32(t + pos) == 0xFFFFFFFFu ? 0 : (size_t)get_u32(t + pos)))
#define COPY(nbytes)                         \
  do {                                       \
    size_t n_ = (nbytes);                    \
    if (out) memcpy(out + o, t + pos, n_);   \
    o += n_, pos += n_;                      \
  } while (0)
#define STR() COPY(4 + (get_u32(t + pos) == 0xFFFFFFFFu ? 0 : (size_t)get_u32(t + pos)))
  if (out) memcpy(out, t, 20);
  if (version == 3) { /* the host's name and id, left out of versions 1 and 2 */
    SKIP_STR();
    SKIP_STR();
  }
  for (size_t d = 0; d < ndev; d++) {
    STR();
    STR();
    STR();
    STR();
    COPY(28);
    uint32_t na = get_u32(t + pos);
    COPY(4);
    for (uint32_t a = 0; a < na; a++) {
      STR();
      STR();
      if (*n < max) types[(*n)++] = pos;
      if (to == 1) pos += 4; /* the type word, left out of version 1 */
      else COPY(4);
    }
  }
#undef STR
#undef COPY
#undef SKIP_STR
  ck_assert_uint_eq(pos, tlen);
  if (out) {
    put_u32(out + 4, to);
    put_u32(out + 8, (uint32_t)o);
    *out_len = o;
  }
}

static void walk_v3(const unsigned char *t, size_t tlen, size_t *types, size_t max, size_t *n) {
  ck_assert_uint_eq(get_u32(t + 4), 3);
  walk(t, tlen, types, max, n, NULL, NULL, 3);
}

/* The types and flags the CPU backend gives travel with the table. */
START_TEST(typed_attributes_round_trip) {
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  const hdal_device *r = hdal_context_device(ctx, 4);
  ck_assert_int_eq(hdal_device_process_index(r), 1);
  const char *key, *value;
  size_t seen = 0;
  for (size_t k = 0; hdal_device_attribute(r, k, &key, &value); k++) {
    if (!strcmp(key, "cores") || !strcmp(key, "pus")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_UINT);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), HDAL_ATTRIBUTE_TOPOLOGY);
      seen++;
    } else if (!strcmp(key, "cpuset")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_STRING);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), HDAL_ATTRIBUTE_TOPOLOGY);
      ck_assert_str_eq(value, "0-1");
      seen++;
    } else if (!strcmp(key, "numa_os_index")) {
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_UINT);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), 0);
      seen++;
    }
  }
  ck_assert_uint_eq(seen, 4);
}
END_TEST

/* A table of an hdal before typed attributes (version 1): read, its attributes strings. */
START_TEST(version_1_still_read) {
  unsigned char *v1 = malloc(len);
  size_t types[64], n, v1_len;
  walk(blob, len, types, 64, &n, v1, &v1_len, 1);
  ck_assert_uint_gt(n, 0);
  ck_assert_uint_eq(v1_len, len - 4 * n - host_fields_len(blob));
  ck_assert_ok(hdal_context_add_process(ctx, 1, v1, v1_len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  for (size_t i = 4; i < 8; i++) {
    const hdal_device *r = hdal_context_device(ctx, i), *a = hdal_context_device(ctx, i - 4);
    ck_assert_uint_eq(hdal_device_attribute_count(r), hdal_device_attribute_count(a));
    for (size_t k = 0; k < hdal_device_attribute_count(r); k++) {
      const char *key, *value;
      ck_assert(hdal_device_attribute(a, k, &key, &value));
      ck_assert_str_eq(hdal_device_attribute_get(r, key), value);
      ck_assert_int_eq(hdal_device_attribute_type(r, k), HDAL_ATTRIBUTE_STRING);
      ck_assert_uint_eq(hdal_device_attribute_flags(r, k), 0);
    }
  }
  free(v1);
}
END_TEST

/* A BOOL as an hdal before module ABI 5 may write it ("false"): read, in hdal's one spelling. */
START_TEST(old_boolean_spelling_read) {
  size_t types[64], n;
  walk_v3(blob, len, types, 64, &n);
  size_t at = types[2] - 4 - 3; /* the first device's cpuset value, "0-1" */
  ck_assert_mem_eq(blob + at + 4, "0-1", 3);
  unsigned char *b = malloc(len + 2);
  memcpy(b, blob, at);
  put_u32(b + at, 5);
  memcpy(b + at + 4, "false", 5);
  memcpy(b + at + 9, blob + types[2], len - types[2]);
  put_u32(b + at + 9, HDAL_ATTRIBUTE_BOOL);
  put_u32(b + 8, (uint32_t)(len + 2));
  ck_assert_ok(hdal_context_add_process(ctx, 1, b, len + 2));
  free(b);
  const hdal_device *r = hdal_context_device(ctx, 4);
  ck_assert_str_eq(hdal_device_attribute_get(r, "cpuset"), "no");
  const char *key;
  bool v = true;
  for (size_t k = 0; hdal_device_attribute(r, k, &key, NULL); k++)
    if (!strcmp(key, "cpuset")) ck_assert(hdal_device_attribute_bool(r, k, &v));
  ck_assert(!v);
}
END_TEST

/* A type word with bits this hdal does not know, or a value that does not read as its type: refused,
 * the context unchanged. */
START_TEST(bad_attribute_types_refused) {
  unsigned char *b = malloc(len);
  size_t types[64], n;
  walk_v3(blob, len, types, 64, &n);
  ck_assert_uint_ge(n, 3); /* cores, pus, cpuset first */
  static const struct {
    size_t attr;
    uint32_t value;
    const char *why;
  } cases[] = {
      {0, 3, "unknown attribute type or flags"},
      {0, HDAL_ATTRIBUTE_UINT | 0x200, "unknown attribute type or flags"},
      {0, 0x80000000u, "unknown attribute type or flags"},
      {2, HDAL_ATTRIBUTE_UINT, "attribute value does not read as its type"}, /* cpuset "0-1" */
      {2, HDAL_ATTRIBUTE_BOOL | HDAL_ATTRIBUTE_TOPOLOGY, "attribute value does not read as its type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memcpy(b, blob, len);
    put_u32(b + types[cases[i].attr], cases[i].value);
    char msg[200];
    snprintf(msg, sizeof msg, "hdal_context_add_process: malformed process table (%zu bytes): %s at byte %zu", len,
             cases[i].why, types[cases[i].attr]);
    ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT, msg);
    ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
    ck_assert_int_eq(hdal_context_process_count(ctx), 1);
  }
  free(b);
}
END_TEST

START_TEST(hostile_fields_refused) {
  unsigned char *b = malloc(len + 64);
  hdal_error *e;
  size_t first = 20 + host_fields_len(blob); /* the first device */
  struct {
    size_t at;
    uint32_t value;
    const char *why;
  } cases[] = {
      {4, 4, NULL},                           /* version 4 */
      {16, 0x7FFFFFFF, "too many devices"},   /* device count */
      {16, 1000, "truncated"},
      {20, 0xFFFFFFF0u, "string too long"},   /* the host name's length */
      {first, 0xFFFFFFF0u, "string too long"}, /* the first backend name's length */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(b, blob, len);
    put_u32(b + cases[i].at, cases[i].value);
    e = hdal_context_add_process(ctx, 1, b, len);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
    if (cases[i].why) ck_assert_msg(strstr(hdal_error_message(e), cases[i].why), "%s", hdal_error_message(e));
    hdal_error_destroy(e);
  }
  memcpy(b, blob, len);
  b[first + 4] = 'C'; /* the first backend name, "cpu" */
  e = hdal_context_add_process(ctx, 1, b, len);
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(strstr(hdal_error_message(e), "invalid backend name"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  memcpy(b, blob, len);
  put_u32(b + 4, 4);
  ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process table version 4 (flags 0) is not supported: this hdal reads "
                  "versions 1 to 3");
  put_u32(b + 4, 0);
  ck_assert_error(hdal_context_add_process(ctx, 1, b, len), HDAL_INVALID_ARGUMENT,
                  "hdal_context_add_process: process table version 0 (flags 0) is not supported: this hdal reads "
                  "versions 1 to 3");
  /* Trailing bytes, with the length field saying so. */
  memcpy(b, blob, len);
  memset(b + len, 0, 8);
  put_u32(b + 8, (uint32_t)(len + 8));
  e = hdal_context_add_process(ctx, 1, b, len + 8);
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(strstr(hdal_error_message(e), "trailing bytes"), "%s", hdal_error_message(e));
  hdal_error_destroy(e);
  /* Every single-byte corruption: refused, or accepted as a whole; never half. */
  for (size_t i = 0; i < len; i++) {
    memcpy(b, blob, len);
    b[i] ^= 0xA5;
    size_t before = hdal_context_device_count(ctx);
    e = hdal_context_add_process(ctx, 100 + (int)i, b, len);
    if (e) {
      ck_assert_int_eq(hdal_error_code(e), HDAL_INVALID_ARGUMENT);
      ck_assert_uint_eq(hdal_context_device_count(ctx), before);
      hdal_error_destroy(e);
    } else {
      ck_assert_uint_eq(hdal_context_device_count(ctx), before + 4);
    }
  }
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    ck_assert_int_eq(hdal_device_id(hdal_context_device(ctx, i)), (int)i);
  free(b);
}
END_TEST

START_TEST(remote_devices_refuse_import) {
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  int64_t shape[1] = {2};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(2), true, 1, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, hdal_context_device(ctx, 4), NULL, &b), HDAL_FAILED_PRECONDITION,
                  "DLPack is only supported for devices addressable by the current process.");
  /* the IFRT-native device of process 1: the first message wins */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, hdal_context_device(ctx, 6), NULL, &b), HDAL_FAILED_PRECONDITION,
                  "DLPack is supported for PjRt-compatible backends only.");
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
}
END_TEST

START_TEST(many_processes_in_order) {
  for (int p = 1; p <= 2000; p++) ck_assert_ok(hdal_context_add_process(ctx, p, blob, len));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 4 * 2001);
  ck_assert_int_eq(hdal_context_process_count(ctx), 2001);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_int_eq(hdal_device_id(d), (int)i);
    ck_assert_int_eq(hdal_device_process_index(d), (int)(i / 4));
  }
  /* and one that goes in the middle */
  ck_assert_error(hdal_context_add_process(ctx, 1000, blob, len), HDAL_ALREADY_EXISTS,
                  "hdal_context_add_process: process 1000 was already added");
}
END_TEST


/* ---- hosts (docs/dlpack.md, "Hosts") and the same hardware across processes ---- */

/* The table names its host: version 3, the name and id read under HDAL_FSROOT, at byte 20. */
START_TEST(version_3_written_with_the_host) {
  ck_assert_uint_eq(get_u32(blob + 4), 3);
  static const char name[] = "node-a", id[] = ID_A;
  ck_assert_uint_eq(get_u32(blob + 20), strlen(name));
  ck_assert_mem_eq(blob + 24, name, strlen(name));
  size_t at = 24 + strlen(name);
  ck_assert_uint_eq(get_u32(blob + at), strlen(id));
  ck_assert_mem_eq(blob + at + 4, id, strlen(id));
  ck_assert_uint_eq(host_fields_len(blob), 8 + strlen(name) + strlen(id));
  for (size_t i = 0; i < 4; i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    ck_assert_str_eq(hdal_device_host(d), "node-a");
    ck_assert_int_eq(hdal_device_host_index(d), 0);
  }
  ck_assert_uint_eq(hdal_context_host_count(ctx), 1);
  /* Another process of this host: host 0 too; the name travels. */
  ck_assert_ok(hdal_context_add_process(ctx, 1, blob, len));
  for (size_t i = 4; i < 8; i++) {
    ck_assert_str_eq(hdal_device_host(hdal_context_device(ctx, i)), "node-a");
    ck_assert_int_eq(hdal_device_host_index(hdal_context_device(ctx, i)), 0);
  }
  ck_assert_uint_eq(hdal_context_host_count(ctx), 1);
}
END_TEST

/* A process whose /proc says nothing (no boot id, no namespace): a name from gethostname(), no id, so
 * its table names no id and its host is its own. */
START_TEST(host_without_id) {
  setenv("HDAL_FSROOT", root_none, 1);
  hdal_context *lone = test_context_with("cpu");
  void *b;
  size_t n;
  ck_assert_ok(hdal_context_export_devices(lone, &b, &n));
  ck_assert_uint_eq(get_u32((unsigned char *)b + 4), 3);
  char name[256] = "";
  ck_assert_int_eq(gethostname(name, sizeof name), 0);
  ck_assert_str_eq(hdal_device_host(hdal_context_device(lone, 0)), name);
  size_t at = 24 + get_u32((unsigned char *)b + 20);
  ck_assert_uint_eq(get_u32((unsigned char *)b + at), 0xFFFFFFFFu); /* no id */
  /* Two such processes of one name are two hosts. */
  ck_assert_ok(hdal_context_add_process(lone, 1, b, n));
  ck_assert_ok(hdal_context_add_process(lone, 2, b, n));
  ck_assert_uint_eq(hdal_context_host_count(lone), 3);
  ck_assert_int_eq(hdal_device_host_index(hdal_context_device(lone, 2)), 1);
  ck_assert_int_eq(hdal_device_host_index(hdal_context_device(lone, 4)), 2);
  ck_assert_str_eq(hdal_device_host(hdal_context_device(lone, 4)), name);
  free(b);
  hdal_context_destroy(lone);
}
END_TEST

/* Host fields that break the rules: refused with the byte of their length field, the context unchanged. */
static unsigned char *with_host_fields(const unsigned char *t, size_t tlen, const void *name, uint32_t name_len,
                                       const void *id, uint32_t id_len, size_t *out_len);

START_TEST(bad_host_fields_refused) {
  size_t body = 20 + host_fields_len(blob);
  static const struct {
    const char *name;
    uint32_t name_len;
    const char *id;
    uint32_t id_len;
    const char *why;
    bool at_id; /* the id's field, else the name's */
  } cases[] = {
      {"", 0, ID_A, sizeof ID_A - 1, "invalid host name", false},
      {"node\na", 6, ID_A, sizeof ID_A - 1, "invalid host name", false},
      {"node\x7f", 5, ID_A, sizeof ID_A - 1, "invalid host name", false},
      {NULL, 256, ID_A, sizeof ID_A - 1, "invalid host name", false}, /* 256 bytes */
      {"node-a", 6, "", 0, "invalid host id", true},
      {"node-a", 6, "boot id", 7, "invalid host id", true},
      {"node-a", 6, "boot\xc3\xa9", 6, "invalid host id", true},
      {"node-a", 6, "nul\0id", 6, "NUL byte inside a string", true},
  };
  char long_name[256];
  memset(long_name, 'n', sizeof long_name);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t n;
    unsigned char *b = with_host_fields(blob, len, cases[i].name ? cases[i].name : long_name, cases[i].name_len,
                                        cases[i].id, cases[i].id_len, &n);
    size_t at = cases[i].at_id ? 24 + cases[i].name_len : 20;
    if (!strcmp(cases[i].why, "NUL byte inside a string")) at += 4; /* after the length, as for every string */
    char msg[200];
    snprintf(msg, sizeof msg, "hdal_context_add_process: malformed process table (%zu bytes): %s at byte %zu", n,
             cases[i].why, at);
    ck_assert_error(hdal_context_add_process(ctx, 1, b, n), HDAL_INVALID_ARGUMENT, msg);
    ck_assert_uint_eq(hdal_context_device_count(ctx), 4);
    ck_assert_uint_eq(hdal_context_host_count(ctx), 1);
    free(b);
  }
  /* 255 bytes, any byte from 0x20 but 0x7F (UTF-8 too): a name. */
  size_t n;
  unsigned char *b = with_host_fields(blob, len, long_name, 255, ID_B, sizeof ID_B - 1, &n);
  ck_assert_ok(hdal_context_add_process(ctx, 1, b, n));
  free(b);
  b = with_host_fields(blob, len, "n\xc5\x93ud 2", 7, ID_B, sizeof ID_B - 1, &n);
  ck_assert_ok(hdal_context_add_process(ctx, 2, b, n));
  free(b);
  ck_assert_uint_eq(strlen(hdal_device_host(hdal_context_device(ctx, 4))), 255);
  ck_assert_str_eq(hdal_device_host(hdal_context_device(ctx, 8)), "n\xc5\x93ud 2");
  ck_assert_uint_eq(hdal_context_host_count(ctx), 3); /* one id, two names: two hosts */
  ck_assert_uint_eq(body, 20 + 8 + 6 + sizeof ID_A - 1);
}
END_TEST

/* The table of version 2 that hdal wrote before hosts (tests/golden/process-table-v2.hex): 2 CPU
 * devices and 2 fake CUDA GPUs with UUIDs and PCI bus ids. */
static unsigned char *golden_v2(size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/golden/process-table-v2.hex", getenv("srcdir") ? getenv("srcdir") : ".");
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  unsigned char *b = malloc(4096);
  char line[256];
  *n = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    for (char *p = line, *end; *p; p = end) {
      unsigned long v = strtoul(p, &end, 16);
      if (end == p) break;
      ck_assert_uint_lt(*n, 4096);
      b[(*n)++] = (unsigned char)v;
    }
  }
  fclose(f);
  ck_assert_uint_eq(*n, 1108);
  ck_assert_uint_eq(get_u32(b + 4), 2);
  return b;
}

/* Version 3 of a version 2 or 3 table: the host fields given (NULL: none, for either). */
static unsigned char *with_host_fields(const unsigned char *t, size_t tlen, const void *name, uint32_t name_len,
                                       const void *id, uint32_t id_len, size_t *out_len) {
  size_t old = get_u32(t + 4) == 3 ? host_fields_len(t) : 0, body = tlen - 20 - old;
  size_t n = 20 + 8 + (name ? name_len : 0) + (id ? id_len : 0) + body, at = 20;
  unsigned char *b = malloc(n);
  memcpy(b, t, 20);
  put_u32(b + 4, 3);
  put_u32(b + 8, (uint32_t)n);
  put_u32(b + at, name ? name_len : 0xFFFFFFFFu);
  if (name) memcpy(b + at + 4, name, name_len);
  at += 4 + (name ? name_len : 0);
  put_u32(b + at, id ? id_len : 0xFFFFFFFFu);
  if (id) memcpy(b + at + 4, id, id_len);
  at += 4 + (id ? id_len : 0);
  memcpy(b + at, t + 20 + old, body);
  *out_len = n;
  return b;
}

static unsigned char *v2_on(const char *name, const char *id, size_t *n) {
  size_t v2_len;
  unsigned char *v2 = golden_v2(&v2_len);
  unsigned char *b = with_host_fields(v2, v2_len, name, name ? (uint32_t)strlen(name) : 0, id,
                                      id ? (uint32_t)strlen(id) : 0, n);
  free(v2);
  return b;
}

/* Devices 0-1 of a golden table's process are its CPU nodes, 2-3 its GPUs. */
static const hdal_device *dev_of(hdal_context *c, int process, int k) {
  for (size_t i = 0; i < hdal_context_device_count(c); i++) {
    const hdal_device *d = hdal_context_device(c, i);
    if (hdal_device_process_index(d) == process) return hdal_context_device(c, i + (size_t)k);
  }
  ck_abort_msg("no process %d", process);
  return NULL;
}

/* The ids of the devices d is the same hardware as, "1,5,9" (and the count, which they must match). */
static const char *partners(const hdal_device *d) {
  static char text[256];
  int ids[32];
  size_t count = 99;
  ck_assert_ok(hdal_device_same_hardware(d, ids, 32, &count));
  ck_assert_uint_le(count, 32);
  text[0] = '\0';
  for (size_t i = 0; i < count; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? "," : "", ids[i]);
  return text;
}

/* Old tables and the tables of three hosts: the same hardware within a host, never across. */
START_TEST(same_hardware_within_a_host_only) {
  setenv("HDAL_FSROOT", root_a, 1);
  hdal_context *c = test_context_with("cpu"); /* process 0, host node-a: its 2 nodes */
  size_t n;
  unsigned char *b;
  static const struct {
    const char *name, *id;
  } procs[] = {
      {"node-a", ID_A},  /* 1: the host of process 0 */
      {"node-a", ID_A},  /* 2: the same */
      {"node-b", ID_B},  /* 3: another machine */
      {"node-a", ID_A2}, /* 4: the same name, another network namespace */
      {NULL, NULL},      /* 5: version 2, as written */
      {NULL, NULL},      /* 6: the same table again */
  };
  for (int p = 1; p <= 6; p++) {
    if (p >= 5) b = golden_v2(&n);
    else b = v2_on(procs[p - 1].name, procs[p - 1].id, &n);
    ck_assert_ok(hdal_context_add_process(c, p, b, n));
    free(b);
  }
  ck_assert_uint_eq(hdal_context_device_count(c), 2 + 6 * 4);
  ck_assert_uint_eq(hdal_context_host_count(c), 5);
  static const int host_of[] = {0, 0, 0, 1, 2, 3, 4};
  for (size_t i = 0; i < hdal_context_device_count(c); i++) {
    const hdal_device *d = hdal_context_device(c, i);
    int p = hdal_device_process_index(d);
    ck_assert_int_eq(hdal_device_host_index(d), host_of[p]);
    if (p >= 5) ck_assert_ptr_null(hdal_device_host(d)); /* version 2: not known */
    else ck_assert_str_eq(hdal_device_host(d), p == 3 ? "node-b" : "node-a");
  }
  /* Process 0's nodes are ids 0-1; process p's nodes 2 + 4(p-1) and on, its GPUs two later. */
  ck_assert_str_eq(partners(dev_of(c, 0, 0)), "2,6");  /* node 0: of processes 1 and 2 */
  ck_assert_str_eq(partners(dev_of(c, 0, 1)), "3,7");
  ck_assert_str_eq(partners(dev_of(c, 1, 0)), "0,6");  /* never node 1 of its own process */
  ck_assert_str_eq(partners(dev_of(c, 1, 2)), "8");    /* GPU 0: process 2's, not 3's (UUIDs equal) */
  ck_assert_str_eq(partners(dev_of(c, 2, 3)), "5");
  for (int p = 3; p <= 6; p++)
    for (int k = 0; k < 4; k++) ck_assert_str_eq(partners(dev_of(c, p, k)), ""); /* alone on their hosts */
  /* Pieces of hardware: host 0 has 2 nodes and 2 GPUs; each other host 4. */
  ck_assert_uint_eq(hdal_context_hardware_count(c), 4 + 4 * 4);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 0, 0)), 0);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 0, 1)), 1);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 1, 0)), 0);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 2, 1)), 1);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 1, 2)), 2);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 2, 2)), 2);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 2, 3)), 3);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 3, 0)), 4);
  ck_assert_int_eq(hdal_device_hardware_index(dev_of(c, 6, 3)), 19);
  /* Bounded lists: the smallest first, the count whole. */
  int ids[1] = {-1};
  size_t count = 0;
  ck_assert_ok(hdal_device_same_hardware(dev_of(c, 0, 0), ids, 1, &count));
  ck_assert_int_eq(ids[0], 2);
  ck_assert_uint_eq(count, 2);
  ck_assert_ok(hdal_device_same_hardware(dev_of(c, 0, 0), NULL, 0, &count));
  ck_assert_uint_eq(count, 2);
  hdal_context_destroy(c);
}
END_TEST

/* Processes added in any order: host indices by the lowest process of each host, as every process
 * of the job numbers them; the links follow the table. */
START_TEST(host_indices_by_lowest_process) {
  setenv("HDAL_FSROOT", root_b, 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu", .process_index = 3, .process_count = 4};
  hdal_context *c = NULL;
  ck_assert_ok(hdal_context_create(&o, &c));
  ck_assert_uint_eq(hdal_context_host_count(c), 1);
  ck_assert_int_eq(hdal_device_host_index(hdal_context_device(c, 0)), 0);
  size_t n;
  unsigned char *b = v2_on("node-a", ID_A, &n);
  ck_assert_ok(hdal_context_add_process(c, 2, b, n)); /* node-a: first now */
  ck_assert_uint_eq(hdal_context_host_count(c), 2);
  ck_assert_int_eq(hdal_device_host_index(dev_of(c, 2, 0)), 0);
  ck_assert_int_eq(hdal_device_host_index(dev_of(c, 3, 0)), 1);
  ck_assert_uint_eq(hdal_context_hardware_count(c), 4 + 2);
  free(b);
  b = v2_on("node-b", ID_B, &n);
  ck_assert_ok(hdal_context_add_process(c, 0, b, n)); /* node-b, process 3's host, comes first */
  free(b);
  ck_assert_int_eq(hdal_device_host_index(dev_of(c, 0, 0)), 0);
  ck_assert_int_eq(hdal_device_host_index(dev_of(c, 2, 0)), 1);
  ck_assert_int_eq(hdal_device_host_index(dev_of(c, 3, 0)), 0);
  ck_assert_str_eq(partners(dev_of(c, 3, 1)), "1"); /* process 0's node 1 */
  ck_assert_uint_eq(hdal_context_hardware_count(c), 4 + 4);
  /* A process without devices leaves no host behind, and the count still grows. */
  unsigned char empty[28] = "HDPT";
  put_u32(empty + 4, 3);
  put_u32(empty + 8, 28);
  put_u32(empty + 16, 0);
  put_u32(empty + 20, 0xFFFFFFFFu);
  put_u32(empty + 24, 0xFFFFFFFFu);
  ck_assert_ok(hdal_context_add_process(c, 7, empty, sizeof empty));
  ck_assert_uint_eq(hdal_context_host_count(c), 2);
  ck_assert_int_eq(hdal_context_process_count(c), 8);
  hdal_context_destroy(c);
}
END_TEST

/* The golden version 2 table is read whole: every device, its GPUs' identities, and the version 1
 * made from it. */
START_TEST(version_2_golden_read) {
  size_t n;
  unsigned char *b = golden_v2(&n);
  ck_assert_ok(hdal_context_add_process(ctx, 1, b, n));
  ck_assert_uint_eq(hdal_context_device_count(ctx), 8);
  const hdal_device *gpu = hdal_context_device(ctx, 6);
  ck_assert_str_eq(hdal_device_platform(gpu), "cuda");
  ck_assert_str_eq(hdal_device_kind(gpu), "Fake GPU 0");
  ck_assert_str_eq(hdal_device_attribute_get(gpu, "uuid"), "GPU-facec0da-0001-4000-8000-000000000000");
  ck_assert_str_eq(hdal_device_attribute_get(gpu, "pci_bus_id"), "0000:10:00.0");
  ck_assert_ptr_null(hdal_device_host(gpu));
  ck_assert_int_eq(hdal_device_host_index(gpu), 1);
  unsigned char *v1 = malloc(n);
  size_t types[64], nt, v1_len;
  walk(b, n, types, 64, &nt, v1, &v1_len, 1);
  ck_assert_ok(hdal_context_add_process(ctx, 2, v1, v1_len));
  ck_assert_ptr_null(hdal_device_host(hdal_context_device(ctx, 8)));
  ck_assert_int_eq(hdal_device_host_index(hdal_context_device(ctx, 8)), 2);
  ck_assert_uint_eq(hdal_context_host_count(ctx), 3);
  free(v1);
  free(b);
}
END_TEST

START_TEST(same_hardware_refusals) {
  size_t count = 7;
  int ids[2];
  ck_assert_error(hdal_device_same_hardware(NULL, ids, 2, &count), HDAL_INVALID_ARGUMENT,
                  "hdal_device_same_hardware: device is NULL");
  ck_assert_error(hdal_device_same_hardware(hdal_context_device(ctx, 0), ids, 2, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_device_same_hardware: count is NULL");
  ck_assert_error(hdal_device_same_hardware(hdal_context_device(ctx, 0), NULL, 4, &count), HDAL_INVALID_ARGUMENT,
                  "hdal_device_same_hardware: ids is NULL, max 4");
  ck_assert_uint_eq(count, 7);
  ck_assert_int_eq(hdal_device_hardware_index(NULL), -1);
  ck_assert_int_eq(hdal_device_host_index(NULL), -1);
  ck_assert_ptr_null(hdal_device_host(NULL));
  ck_assert_uint_eq(hdal_context_host_count(NULL), 0);
  ck_assert_uint_eq(hdal_context_hardware_count(NULL), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("process");
  TCase *tc = tcase_create("process");
  unsetenv("HDAL_BACKENDS");
  fake_root(root_a, sizeof root_a, "node-a\n", BOOT_A "\n", "net:[4026531840]");
  fake_root(root_a2, sizeof root_a2, "node-a\n", BOOT_A "\n", "net:[4026532301]");
  fake_root(root_b, sizeof root_b, "node-b\n", BOOT_B "\n", "net:[4026531840]");
  fake_root(root_none, sizeof root_none, NULL, NULL, NULL);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, add_keeps_everything_and_orders);
  tcase_add_test(tc, refusals_leave_context_unchanged);
  tcase_add_test(tc, index_that_cannot_be_counted_refused);
  tcase_add_test(tc, every_truncation_refused);
  tcase_add_test(tc, hostile_fields_refused);
  tcase_add_test(tc, typed_attributes_round_trip);
  tcase_add_test(tc, version_1_still_read);
  tcase_add_test(tc, bad_attribute_types_refused);
  tcase_add_test(tc, old_boolean_spelling_read);
  tcase_add_test(tc, remote_devices_refuse_import);
  tcase_add_test(tc, many_processes_in_order);
  tcase_add_test(tc, version_3_written_with_the_host);
  tcase_add_test(tc, host_without_id);
  tcase_add_test(tc, bad_host_fields_refused);
  tcase_add_test(tc, same_hardware_within_a_host_only);
  tcase_add_test(tc, host_indices_by_lowest_process);
  tcase_add_test(tc, version_2_golden_read);
  tcase_add_test(tc, same_hardware_refusals);
  suite_add_tcase(s, tc);
  int rc = test_run_suite(s);
  const char *roots[] = {root_a, root_a2, root_b, root_none};
  for (size_t i = 0; i < 4; i++) nftw(roots[i], remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  return rc;
}
