/* SPDX-License-Identifier: BSD-3-Clause */
/* fork(): a context made before fork() and used in the child (docs/design.md).
 * The vendor runtimes (PoCL here, and the CUDA driver, which says so) do not
 * survive fork: the child's operations on their devices give
 * HDAL_FAILED_PRECONDITION saying why, at once (before, an OpenCL transfer in
 * the child waited for ever); CPU buffers keep working; releasing buffers and
 * destroying the context in the child never touch the runtimes; the parent
 * goes on as before. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

static int child_failures;

#define CHILD_CHECK(cond, ...)                                   \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "child: %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fputc('\n', stderr);                                       \
      child_failures++;                                          \
    }                                                            \
  } while (0)

static float values[6] = {1, 2, 3, 4, 5, 6};
static int64_t shape[2] = {2, 3};
static int deleted;
static void deleter(DLManagedTensor *m) {
  (void)m;
  deleted++;
}
static DLManagedTensor tensors[8];
#define NDEV 3 /* device buffers: OpenCL 0 and 1 on PoCL, CUDA 0 on the fake driver */

static hdal_capsule *capsule(int i) {
  tensors[i] = (DLManagedTensor){.dl_tensor = {.data = values, .device = {kDLCPU, 0}, .ndim = 2,
                                               .dtype = {kDLFloat, 32, 1}, .shape = shape},
                                 .deleter = deleter};
  return hdal_capsule_wrap(&tensors[i]);
}

static hdal_device *first_of(hdal_context *ctx, const char *platform, int nth) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_runtime_class(d) == HDAL_RUNTIME_PJRT && !nth--)
      return d;
  }
  return NULL;
}

static bool values_ok(const hdal_buffer *b) {
  float got[6];
  hdal_error *e = hdal_buffer_copy_to_host(b, got, sizeof got);
  bool ok = !e && !memcmp(got, values, sizeof got);
  hdal_error_destroy(e);
  return ok;
}

static void expect_refusal(hdal_error *e, const hdal_device *d, const char *what) {
  char want[512];
  snprintf(want, sizeof want,
           "hdal device %d (%s) cannot be used in this process: it is a fork() child of the process that created "
           "the context, and the %s runtime does not survive fork() (only CPU buffers do); create contexts after "
           "fork(), in the process that uses them",
           hdal_device_id(d), hdal_device_platform(d), hdal_device_platform(d));
  CHILD_CHECK(e && hdal_error_code(e) == HDAL_FAILED_PRECONDITION && !strcmp(hdal_error_message(e), want),
              "%s: %s: %s", what, e ? hdal_code_name(hdal_error_code(e)) : "no error", e ? hdal_error_message(e) : "");
  hdal_error_destroy(e);
}

/* What the child does with a device buffer `b` on device `d`. */
static void child_device_checks(hdal_context *ctx, hdal_device *d, hdal_buffer *b, hdal_device *cpu) {
  float got[6];
  expect_refusal(hdal_buffer_copy_to_host(b, got, sizeof got), d, "copy_to_host");
  hdal_buffer *out = NULL;
  expect_refusal(hdal_buffer_copy_to_device(b, cpu, &out), d, "copy_to_device from it");
  CHILD_CHECK(out == NULL, "copy_to_device left a buffer");
  hdal_capsule *x = NULL;
  expect_refusal(hdal_buffer_to_dlpack(b, NULL, &x), d, "export");
  CHILD_CHECK(x == NULL, "export left a capsule");
  hdal_capsule *c = capsule(7);
  expect_refusal(hdal_buffer_from_dlpack(ctx, c, d, NULL, &out), d, "import onto it");
  CHILD_CHECK(!strcmp(hdal_capsule_name(c), "dltensor"), "a refused import renamed the capsule");
  tensors[7].deleter = NULL;
  hdal_capsule_destroy(c);
}

START_TEST(context_used_in_a_fork_child) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  char fake[4096];
  snprintf(fake, sizeof fake, "%s/fakecuda.so", getenv("HDAL_TEST_MODULES") ? getenv("HDAL_TEST_MODULES") : ".");
  setenv("HDAL_CUDA_LIBRARY", fake, 1);
  setenv("FAKECUDA_DEVICES", "1", 1);
  /* OpenCL but under valgrind (tests/valgrind/memcheck.sh: PoCL there takes hours). */
  const char *backends = getenv("HDAL_TEST_NO_OPENCL") ? "cpu,cuda" : "cpu,cuda,opencl";
  hdal_context *ctx = test_context_with(backends);
  hdal_device *cpu = first_of(ctx, "cpu", 0), *cpu1 = first_of(ctx, "cpu", 1);
  /* PoCL's "basic" device runs commands in the calling thread; its "pthread"
   * device in worker threads, which a child lacks (there, the hang). */
  hdal_device *dev[NDEV] = {first_of(ctx, "opencl", 0), first_of(ctx, "opencl", 1), first_of(ctx, "cuda", 0)};
  ck_assert_ptr_nonnull(cpu1);
  hdal_buffer *cpu_buf = NULL, *dev_buf[NDEV] = {NULL};
  hdal_capsule *caps[1 + NDEV] = {capsule(0)};
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, caps[0], cpu, NULL, &cpu_buf));
  int tested = 0;
  for (int i = 0; i < NDEV; i++)
    if (dev[i]) {
      caps[1 + i] = capsule(1 + i);
      ck_assert_ok(hdal_buffer_from_dlpack(ctx, caps[1 + i], dev[i], NULL, &dev_buf[i]));
      ck_assert(values_ok(dev_buf[i]));
      tested++;
    }
  printf("device buffers in the child: %d (%s%s%s)\n", tested, dev[0] ? "opencl:0 " : "", dev[1] ? "opencl:1 " : "",
         dev[2] ? "cuda:0" : "");
  fflush(stdout);

  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    for (int i = 0; i < NDEV; i++)
      if (dev[i]) child_device_checks(ctx, dev[i], dev_buf[i], cpu);
    /* CPU buffers keep working: read, import, copy between CPU devices, export. */
    CHILD_CHECK(values_ok(cpu_buf), "the CPU buffer's values");
    hdal_buffer *b = NULL, *moved = NULL;
    hdal_capsule *c6 = capsule(6);
    hdal_error *e = hdal_buffer_from_dlpack(ctx, c6, cpu, NULL, &b);
    CHILD_CHECK(!e && b && values_ok(b), "a CPU import: %s", hdal_error_message(e));
    e = hdal_buffer_copy_to_device(cpu_buf, cpu1, &moved);
    CHILD_CHECK(!e && moved && values_ok(moved), "a copy between CPU devices: %s", hdal_error_message(e));
    hdal_capsule *x = NULL;
    e = hdal_buffer_to_dlpack(cpu_buf, NULL, &x);
    CHILD_CHECK(!e && x, "a CPU export: %s", hdal_error_message(e));
    /* A copy from a CPU buffer onto a device: refused for the device. */
    for (int i = 0; i < NDEV; i++)
      if (dev[i]) {
        hdal_buffer *o = NULL;
        expect_refusal(hdal_buffer_copy_to_device(cpu_buf, dev[i], &o), dev[i], "copy_to_device onto it");
      }
    hdal_capsule_destroy(x);
    hdal_capsule_destroy(c6);
    hdal_buffer_release(b);
    hdal_buffer_release(moved);
    /* A new context here: the runtimes started in the parent are unavailable. */
    hdal_context_options o = {.struct_size = sizeof o, .backends = backends};
    hdal_context *fresh = NULL;
    e = hdal_context_create(&o, &fresh);
    CHILD_CHECK(!e && fresh, "a context in the child: %s", hdal_error_message(e));
    if (fresh) {
      const char *st = test_backend_status(fresh, "opencl");
      CHILD_CHECK(!dev[0] || !strcmp(st ? st : "", "unavailable: this process is a fork() child of one that started the opencl "
                                         "runtime, which does not survive fork()"),
                  "opencl: %s", st);
      st = test_backend_status(fresh, "cuda");
      CHILD_CHECK(!dev[2] || !strcmp(st ? st : "", "unavailable: this process is a fork() child of one that started the cuda "
                                         "runtime, which does not survive fork()"),
                  "cuda: %s", st);
      st = test_backend_status(fresh, "cpu");
      CHILD_CHECK(!strcmp(st, "ok: 2 devices"), "cpu: %s", st);
      hdal_context_destroy(fresh);
    }
    /* Letting go never calls the runtimes: no hang. */
    for (int i = 0; i < NDEV; i++) hdal_buffer_release(dev_buf[i]);
    hdal_buffer_release(cpu_buf);
    hdal_context_destroy(ctx);
    fflush(stderr);
    _exit(child_failures ? 1 : 0);
  }
  /* A hang is a failure, not a stuck suite: 30 s, then the child is killed. */
  int st = 0, waited = 0;
  pid_t got;
  while ((got = waitpid(pid, &st, WNOHANG)) == 0 && waited++ < 3000) usleep(10000);
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("the child hung (killed after 30 s)");
  }
  ck_assert_int_eq(got, pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child %s %d", WIFSIGNALED(st) ? "was killed by signal" : "exited",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  /* The parent goes on. */
  for (int i = 0; i < NDEV; i++)
    if (dev_buf[i]) {
      ck_assert(values_ok(dev_buf[i]));
      hdal_buffer_release(dev_buf[i]);
    }
  ck_assert(values_ok(cpu_buf));
  hdal_buffer_release(cpu_buf);
  hdal_context_destroy(ctx);
  for (int i = 0; i < 1 + NDEV; i++) hdal_capsule_destroy(caps[i]); /* consumed: no deleter runs */
  ck_assert_int_eq(deleted, 1 + tested); /* the view's, and each copied source's */
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HWLOC_XMLFILE");
  Suite *s = suite_create("fork");
  TCase *tc = tcase_create("fork");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, context_used_in_a_fork_child);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
