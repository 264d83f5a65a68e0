/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness: the process-table parser (hdal_context_add_process) with
 * any bytes and any process index.  A refusal must leave the context
 * unchanged; an acceptance must keep the table dense and ordered and the
 * process count above every index.  An input that starts with 'I' gives the
 * index itself (4 bytes, little-endian: the whole int range, INT_MAX and the
 * negatives included) before the table.  HDAL_FUZZ_WRITE_SEED=FILE writes this
 * machine's own table to FILE (the seed corpus) and exits. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <hdal.h>

static hdal_context *ctx;
static int next_index = 1;

static void fresh_context(void) {
  if (ctx) hdal_context_destroy(ctx);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) {
    fprintf(stderr, "fuzz_process_table: %s\n", hdal_error_message(e));
    abort();
  }
  next_index = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fresh_context();
  const char *seed = getenv("HDAL_FUZZ_WRITE_SEED");
  if (seed) {
    void *blob;
    size_t len;
    hdal_error *e = hdal_context_export_devices(ctx, &blob, &len);
    FILE *f = e ? NULL : fopen(seed, "wb");
    if (!f || fwrite(blob, 1, len, f) != len) abort();
    fclose(f);
    free(blob);
    exit(0);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t before = hdal_context_device_count(ctx);
  int count = hdal_context_process_count(ctx);
  /* Mostly appended in order; sometimes inserted below the last (renumbering);
   * or any index the input names. */
  int index;
  if (size >= 5 && data[0] == 'I') {
    index = (int)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24);
    data += 5, size -= 5;
  } else {
    index = size && data[0] == 0x55 ? next_index / 2 + 1 : next_index++;
  }
  hdal_error *e = hdal_context_add_process(ctx, index, data, size);
  size_t after = hdal_context_device_count(ctx);
  if (e) {
    if (after != before || hdal_context_process_count(ctx) != count) __builtin_trap();
    hdal_error_destroy(e);
  } else {
    /* The count is an int above every index: INT_MAX itself cannot be counted. */
    if (index < 0 || index == INT_MAX || hdal_context_process_count(ctx) <= index ||
        hdal_context_process_count(ctx) < count)
      __builtin_trap();
    if (index >= next_index) next_index = index < INT_MAX - 1 ? index + 1 : 1;
    int prev = -1;
    for (size_t i = 0; i < after; i++) {
      hdal_device *d = hdal_context_device(ctx, i);
      if (hdal_device_id(d) != (int)i || hdal_device_process_index(d) < prev) __builtin_trap();
      prev = hdal_device_process_index(d);
      (void)hdal_device_kind(d), (void)hdal_device_attribute_count(d);
    }
  }
  if (after > 20000) fresh_context(); /* keep memory bounded over long runs */
  return 0;
}
