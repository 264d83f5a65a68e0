/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the GPU backends' suites (CUDA and ROCm alike): the fake runtime
 * chosen, devices found by platform, float32 tensors whose deleter is counted,
 * imports and their values checked through the host. */
#ifndef HDAL_TESTGPU_H
#define HDAL_TESTGPU_H

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

/* Whether `lib` loads here, asked in a child so that the test program itself
 * never maps it (its cases check that hdal does not). */
static inline bool test_library_loads(const char *lib) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(dlopen(lib, RTLD_NOW | RTLD_LOCAL) ? 0 : 1);
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The DT_NEEDED entries of an ELF shared object, joined by spaces. */
static inline void test_needed_libraries(const char *path, char *out, size_t len) {
  int fd = open(path, O_RDONLY);
  ck_assert_int_ge(fd, 0);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  unsigned char *f = malloc((size_t)st.st_size);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(pread(fd, f, (size_t)st.st_size, 0), st.st_size);
  close(fd);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
  ck_assert(!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64);
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(f + eh->e_phoff);
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(f + ph[i].p_offset);
  ck_assert_ptr_nonnull(dyn);
  Elf64_Addr strtab = 0;
  for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
  size_t stroff = 0; /* the string table's file offset, from the load segment holding it */
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr && strtab < ph[i].p_vaddr + ph[i].p_filesz)
      stroff = strtab - ph[i].p_vaddr + ph[i].p_offset;
  ck_assert_uint_ne(stroff, 0);
  out[0] = '\0';
  for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++)
    if (d->d_tag == DT_NEEDED) {
      strncat(out, (const char *)f + stroff + d->d_un.d_val, len - strlen(out) - 2);
      strcat(out, " ");
    }
  free(f);
}

/* The module of `platform` (backends/<platform>/hdal_<platform>.so, under
 * top_builddir) opens its runtime at run time: none of its DT_NEEDED entries
 * contains one of the NULL-terminated `foreign` names. */
static inline void test_assert_module_links_none_of(const char *platform, const char *const *foreign) {
  char path[4200], needed[4096];
  snprintf(path, sizeof path, "%s/backends/%s/.libs/hdal_%s.so", getenv("top_builddir"), platform, platform);
  test_needed_libraries(path, needed, sizeof needed);
  ck_assert_msg(strstr(needed, "libc.so"), "DT_NEEDED: %s", needed); /* the parser found the list */
  for (const char *const *f = foreign; *f; f++) ck_assert_msg(!strstr(needed, *f), "DT_NEEDED: %s", needed);
}

/* Points hdal at fake runtime `lib` (a module of HDAL_TEST_MODULES) through
 * `env` (HDAL_CUDA_LIBRARY, HDAL_ROCM_LIBRARY), on a small synthetic machine. */
static inline void test_use_fake_runtime(const char *env, const char *lib) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.so", getenv("HDAL_TEST_MODULES"), lib);
  setenv(env, path, 1);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
}

/* The device of `platform` with local hardware id `local`, or NULL. */
static inline hdal_device *test_platform_device(hdal_context *ctx, const char *platform, int local) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_local_hardware_id(d) == local) return d;
  }
  return NULL;
}

static inline size_t test_platform_device_count(hdal_context *ctx, const char *platform) {
  size_t n = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    n += !strcmp(hdal_device_platform(hdal_context_device(ctx, i)), platform);
  return n;
}

/* A context of `backends` made with stderr caught: what creating it wrote. */
static inline char *test_stderr_of_create(const char *backends, hdal_context **ctx) {
  char tmpl[] = "/tmp/hdal-test-stderr-XXXXXX";
  int fd = mkstemp(tmpl);
  ck_assert_int_ge(fd, 0);
  unlink(tmpl);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  *ctx = test_context_with(backends);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  static char buf[8192];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

/* Calls of the deleters of test_wrap()'s tensors; Check forks each test, so
 * it starts at 0 in each. */
static int test_deleted;

typedef struct {
  DLManagedTensor m;
  int64_t shape[2], strides[2];
} test_tensor;

static inline void test_count_deleter(DLManagedTensor *m) {
  test_deleted++;
  free(m->manager_ctx);
}

/* A float32 tensor of shape rows x cols (cols 0: 1-d of rows) on `dev` at `data`. */
static inline hdal_capsule *test_wrap(DLDevice dev, void *data, int64_t rows, int64_t cols, const int64_t *strides) {
  test_tensor *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->shape[0] = rows;
  t->shape[1] = cols;
  if (strides) memcpy(t->strides, strides, sizeof t->strides);
  t->m.manager_ctx = t;
  t->m.deleter = test_count_deleter;
  t->m.dl_tensor = (DLTensor){.data = data,
                              .device = dev,
                              .ndim = cols ? 2 : 1,
                              .dtype = {kDLFloat, 32, 1},
                              .shape = t->shape,
                              .strides = strides ? t->strides : NULL};
  hdal_capsule *c = hdal_capsule_wrap(&t->m);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* The buffer's first n floats, read through the host, are `expected`. */
static inline void test_assert_values(const hdal_buffer *b, size_t n, const float *expected) {
  float got[64];
  ck_assert_uint_le(n, 64);
  ck_assert_ok(hdal_buffer_copy_to_host(b, got, n * sizeof(float)));
  for (size_t i = 0; i < n; i++) ck_assert_msg(got[i] == expected[i], "element %zu: %g, expected %g", i, got[i], expected[i]);
}

/* ... are first, first+1, ... */
static inline void test_assert_iota(const hdal_buffer *b, size_t n, float first) {
  float e[64];
  ck_assert_uint_le(n, 64);
  for (size_t i = 0; i < n; i++) e[i] = first + (float)i;
  test_assert_values(b, n, e);
}

/* The capsule imported with copy mode `mode` (and consumed). */
static inline hdal_buffer *test_import(hdal_context *ctx, hdal_capsule *c, hdal_device *d, hdal_copy_mode mode) {
  hdal_import_options o = {.struct_size = sizeof o, .copy = mode};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, &o, &b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  return b;
}

#endif
