/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake of the Acme runtime that docs/new-backend.md's template backend
 * drives (tests/new-backend.sh): FAKEACME_DEVICES devices (default 2), whose
 * memory is this process's, each allocation tagged with its device. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
EXPORT int acmeDeviceCount(int *count);
EXPORT int acmeDeviceName(int ordinal, char *name, size_t size);
EXPORT int acmeAlloc(int ordinal, size_t bytes, void **pointer);
EXPORT int acmeFree(int ordinal, void *pointer);
EXPORT int acmeCopyToDevice(int ordinal, void *dst, const void *src, size_t bytes);
EXPORT int acmeCopyToHost(int ordinal, void *dst, const void *src, size_t bytes);

static int devices(void) {
  const char *v = getenv("FAKEACME_DEVICES");
  return v ? atoi(v) : 2;
}

int acmeDeviceCount(int *count) {
  *count = devices();
  return *count < 0 ? 1 : 0;
}

int acmeDeviceName(int ordinal, char *name, size_t size) {
  if (ordinal < 0 || ordinal >= devices()) return 2;
  snprintf(name, size, "Acme A1 #%d", ordinal);
  return 0;
}

/* A block: its device, then the bytes. */
typedef struct {
  int ordinal;
  _Alignas(64) unsigned char bytes[];
} block;

int acmeAlloc(int ordinal, size_t bytes, void **pointer) {
  block *b = malloc(sizeof *b + (bytes ? bytes : 1));
  if (!b) return 3;
  b->ordinal = ordinal;
  *pointer = b->bytes;
  return 0;
}

static block *block_of(void *pointer) { return (block *)((unsigned char *)pointer - offsetof(block, bytes)); }

int acmeFree(int ordinal, void *pointer) {
  if (!pointer || block_of(pointer)->ordinal != ordinal) return 4;
  free(block_of(pointer));
  return 0;
}

int acmeCopyToDevice(int ordinal, void *dst, const void *src, size_t bytes) {
  (void)ordinal;
  memcpy(dst, src, bytes);
  return 0;
}

int acmeCopyToHost(int ordinal, void *dst, const void *src, size_t bytes) {
  (void)ordinal;
  memcpy(dst, src, bytes);
  return 0;
}
