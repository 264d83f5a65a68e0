/* SPDX-License-Identifier: BSD-3-Clause */
/* The dispatch layer (lib/device_ops.c): every path of the core reaches a
 * backend through it, and it keeps a fork() child away from a module that has
 * no guard of its own.  tests/modules/opsprobe.c counts each of its 17
 * operations; each path here is checked for the operations it calls, and in a
 * fork() child for calling none of them while refusing with the reason. */
#include <sys/wait.h>
#include <unistd.h>
#include "opsprobe.h"
#include "testutil.h"

int hdal_test_ops_counts[OPSPROBE_NOPS]; /* filled by the module (found with dlsym) */

static char dir[] = "/tmp/hdal-test-dispatch-XXXXXX";
static hdal_context *ctx;
static hdal_device *probe, *cpu;
static float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static int64_t shape[1] = {8};
static DLManagedTensor tensors[16];
static hdal_capsule *capsules[16];
static int ntensors, deleted;

static void deleter(DLManagedTensor *m) {
  (void)m;
  deleted++;
}

static hdal_capsule *tensor_on(DLDevice dev, int64_t byte_offset) {
  DLManagedTensor *m = &tensors[ntensors++];
  *m = (DLManagedTensor){.dl_tensor = {.data = values, .device = dev, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                                       .shape = shape, .byte_offset = (uint64_t)byte_offset},
                         .deleter = deleter};
  return capsules[ntensors - 1] = hdal_capsule_wrap(m);
}

static int counts[OPSPROBE_NOPS];
static void snap(void) { memcpy(counts, hdal_test_ops_counts, sizeof counts); }
/* How many times operation op ran since snap(). */
static int ran(int op) { return hdal_test_ops_counts[op] - counts[op]; }
static int ran_any(void) {
  int n = 0;
  for (int op = 0; op < OPSPROBE_NOPS; op++) n += ran(op);
  return n;
}

static void setup(void) {
  char from[4096], to[4200];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(from, sizeof from, "%s/mod_opsprobe.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_opsprobe.so", dir);
  ck_assert_int_eq(symlink(from, to), 0);
  hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,opsprobe";
  o.backend_path = dir;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  ck_assert_str_eq(test_backend_status(ctx, "opsprobe"), "ok: 1 device");
  cpu = hdal_context_device(ctx, 0);
  probe = hdal_context_device(ctx, 1);
  ck_assert_str_eq(hdal_device_platform(probe), "opsprobe");
}

static void teardown(void) {
  for (int i = 0; i < ntensors; i++) hdal_capsule_destroy(capsules[i]); /* consumed ones: only the object */
  hdal_context_destroy(ctx);
  char to[4200];
  snprintf(to, sizeof to, "%s/hdal_opsprobe.so", dir);
  unlink(to);
  rmdir(dir);
}

START_TEST(every_path_calls_the_backend_through_the_dispatch_layer) {
  static const hdal_import_options never = {.struct_size = sizeof never, .copy = HDAL_COPY_NEVER};
  hdal_buffer *view, *copy, *host_copy, *dev_copy;
  /* Import, view: routed (route), addressed in place (can_alias), a reference taken (retain). */
  snap();
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLExtDev, 0}, 0), NULL, &never, &view));
  ck_assert(hdal_buffer_is_view(view));
  ck_assert_int_eq(ran(OPSPROBE_ROUTE), 1);
  ck_assert_int_ge(ran(OPSPROBE_CAN_ALIAS), 1);
  ck_assert_int_eq(ran(OPSPROBE_RETAIN), 1);
  /* Import, copy of host memory onto the device: allocated (the pool asks runtime_pool first), written. */
  snap();
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLCPU, 0}, 0), probe, NULL, &copy));
  ck_assert(!hdal_buffer_is_view(copy));
  ck_assert_int_eq(ran(OPSPROBE_RUNTIME_POOL), 1);
  ck_assert_int_eq(ran(OPSPROBE_ALLOCATE), 1);
  ck_assert_int_eq(ran(OPSPROBE_WRITE), 1);
  /* With a stream: the device waits for it. */
  snap();
  hdal_import_options streamed = {.struct_size = sizeof streamed, .has_stream = true, .stream = 7};
  hdal_buffer *waited;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLExtDev, 0}, 0), NULL, &streamed, &waited));
  ck_assert_int_eq(ran(OPSPROBE_STREAM_WAIT), 1);
  hdal_buffer_release(waited);
  /* copy_to_host: read. */
  float got[8];
  snap();
  ck_assert_ok(hdal_buffer_copy_to_host(copy, got, sizeof got));
  ck_assert_mem_eq(got, values, sizeof got);
  ck_assert_int_eq(ran(OPSPROBE_READ), 1);
  /* copy_to_device within the backend: copy; to the CPU: read. */
  snap();
  ck_assert_ok(hdal_buffer_copy_to_device(copy, probe, &dev_copy));
  ck_assert_int_eq(ran(OPSPROBE_COPY), 1);
  ck_assert_ok(hdal_buffer_copy_to_device(copy, cpu, &host_copy));
  ck_assert_int_eq(ran(OPSPROBE_READ), 1);
  ck_assert_mem_eq(hdal_buffer_data(host_copy), values, sizeof values);
  hdal_buffer_release(host_copy);
  /* Export of a view that starts inside its memory: a handle of its own (subrange), given back (release). */
  hdal_buffer *inner;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLExtDev, 0}, 8), NULL, NULL, &inner));
  snap();
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(inner, NULL, &out));
  ck_assert_int_eq(ran(OPSPROBE_SUBRANGE), 1);
  hdal_capsule_destroy(out); /* the tensor's deleter runs; the buffer keeps the handle it owns */
  ck_assert_int_eq(ran(OPSPROBE_RELEASE), 0);
  ck_assert_ok(hdal_buffer_to_dlpack(inner, NULL, &out)); /* a second export shows the same handle */
  ck_assert_ptr_eq(hdal_buffer_data(inner), ((DLManagedTensor *)hdal_capsule_pointer(out))->dl_tensor.data);
  ck_assert_int_eq(ran(OPSPROBE_SUBRANGE), 1);
  hdal_capsule_destroy(out);
  hdal_buffer_release(inner); /* the subrange handle, then the retained view's handle */
  ck_assert_int_eq(ran(OPSPROBE_RELEASE), 2);
  /* The pool: a freed block is fenced and cached, the next allocation of its size takes it once the fence is
   * done, and trim waits for the fence and gives it back. */
  snap();
  hdal_buffer_release(dev_copy);
  ck_assert_int_eq(ran(OPSPROBE_FENCE), 1);
  ck_assert_int_eq(ran(OPSPROBE_RELEASE), 0);
  ck_assert_ok(hdal_buffer_copy_to_device(copy, probe, &dev_copy));
  ck_assert_int_eq(ran(OPSPROBE_FENCE_DONE), 1);
  ck_assert_int_eq(ran(OPSPROBE_ALLOCATE), 0);
  hdal_buffer_release(dev_copy);
  snap();
  ck_assert_ok(hdal_device_trim(probe));
  ck_assert_int_eq(ran(OPSPROBE_FENCE_DONE), 1);
  ck_assert_int_eq(ran(OPSPROBE_RELEASE), 1);
  /* The work stream is the module's; an allocation takes a block of the pool (the trimmed one is gone). */
  intptr_t stream = 0;
  snap();
  ck_assert_ok(hdal_device_work_stream(probe, &stream));
  ck_assert_int_eq(stream, 42);
  ck_assert_int_eq(ran(OPSPROBE_WORK_STREAM), 1);
  /* Its wait and its native handles, those it has and those it has not. */
  snap();
  ck_assert_ok(hdal_device_synchronize(probe));
  ck_assert_int_eq(ran(OPSPROBE_SYNCHRONIZE), 1);
  stream = 0;
  ck_assert_ok(hdal_device_native_handle(probe, HDAL_NATIVE_CUDA_STREAM, &stream));
  ck_assert_int_eq(stream, 42);
  char want[128];
  snprintf(want, sizeof want, "hdal_device_native_handle: device %d (opsprobe) has no HDAL_NATIVE_OPENCL_QUEUE",
           hdal_device_id(probe));
  ck_assert_error(hdal_device_native_handle(probe, HDAL_NATIVE_OPENCL_QUEUE, &stream), HDAL_NOT_FOUND, want);
  ck_assert_int_eq(stream, 0);
  /* A kind its descriptor does not list is refused without asking it (hdal_backend::native_handles). */
  ck_assert_int_eq(ran(OPSPROBE_NATIVE_HANDLE), 1);
  hdal_buffer *fresh;
  snap();
  ck_assert_ok(hdal_buffer_allocate(probe, 1, shape, (DLDataType){kDLFloat, 32, 1}, &fresh));
  ck_assert_int_eq(ran(OPSPROBE_ALLOCATE), 1);
  ck_assert(!hdal_buffer_is_view(fresh));
  hdal_buffer_release(fresh);
  /* Host pointers are asked of the device's memory (it answers none: bytes moved through read/write above). */
  ck_assert_int_ge(hdal_test_ops_counts[OPSPROBE_HOST_POINTER], 1);
  for (int op = 0; op < OPSPROBE_NOPS; op++) ck_assert_msg(hdal_test_ops_counts[op] > 0, "operation %d never ran", op);
  hdal_buffer_release(copy);
  hdal_buffer_release(view);
}
END_TEST

static int child_failures;
#define CHILD_CHECK(cond)                                                            \
  do {                                                                               \
    if (!(cond)) fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #cond), child_failures++; \
  } while (0)

static bool refused(hdal_error *e) {
  char want[512];
  snprintf(want, sizeof want,
           "hdal device %d (opsprobe) cannot be used in this process: it is a fork() child of the process that "
           "created the context, and the opsprobe runtime does not survive fork() (only CPU buffers do); create "
           "contexts after fork(), in the process that uses them",
           hdal_device_id(probe));
  bool ok = e && hdal_error_code(e) == HDAL_FAILED_PRECONDITION && !strcmp(hdal_error_message(e), want);
  if (!ok) fprintf(stderr, "child: got %s\n", e ? hdal_error_message(e) : "success");
  hdal_error_destroy(e);
  return ok;
}

START_TEST(a_module_without_a_guard_is_not_called_in_a_fork_child) {
  hdal_buffer *copy, *view, *cached;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLCPU, 0}, 0), probe, NULL, &copy));
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLExtDev, 0}, 8), NULL, NULL, &view));
  ck_assert_ok(hdal_buffer_copy_to_device(copy, probe, &cached));
  hdal_buffer_release(cached); /* a block in the pool's cache, fenced: trim would wait for it and release it */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    snap();
    hdal_buffer *b = NULL;
    float got[8];
    hdal_capsule *out = NULL;
    CHILD_CHECK(refused(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLExtDev, 0}, 0), NULL, NULL, &b)));
    CHILD_CHECK(refused(hdal_buffer_from_dlpack(ctx, tensor_on((DLDevice){kDLCPU, 0}, 0), probe, NULL, &b)));
    CHILD_CHECK(refused(hdal_buffer_copy_to_host(copy, got, sizeof got)));
    CHILD_CHECK(refused(hdal_buffer_copy_to_device(copy, probe, &b)));
    CHILD_CHECK(refused(hdal_buffer_copy_to_device(copy, cpu, &b)));
    CHILD_CHECK(refused(hdal_buffer_to_dlpack(view, NULL, &out)));
    CHILD_CHECK(hdal_buffer_data(view) == NULL); /* no runtime to cut a handle of its own */
    intptr_t stream = 1;
    CHILD_CHECK(refused(hdal_device_work_stream(probe, &stream)) && stream == 0);
    CHILD_CHECK(refused(hdal_device_synchronize(probe)));
    stream = 1;
    CHILD_CHECK(refused(hdal_device_native_handle(probe, HDAL_NATIVE_CUDA_STREAM, &stream)) && stream == 0);
    stream = 1;
    CHILD_CHECK(refused(hdal_device_native_handle(probe, HDAL_NATIVE_OPENCL_QUEUE, &stream)) && stream == 0);
    CHILD_CHECK(refused(hdal_buffer_allocate(probe, 1, shape, (DLDataType){kDLFloat, 32, 1}, &b)));
    hdal_error *e = hdal_device_trim(probe);
    hdal_error_destroy(e);
    hdal_buffer_release(copy);
    hdal_buffer_release(view);
    /* A new context here: the module's runtime started in the parent, so it is left out unasked. */
    hdal_context_options o = HDAL_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu,opsprobe";
    o.backend_path = dir;
    hdal_context *fresh = NULL;
    CHILD_CHECK(hdal_context_create(&o, &fresh) == NULL);
    CHILD_CHECK(fresh && !strcmp(test_backend_status(fresh, "opsprobe"),
                                 "unavailable: this process is a fork() child of one that started the opsprobe "
                                 "runtime, which does not survive fork()"));
    CHILD_CHECK(fresh && hdal_context_device_count(fresh) == 1);
    hdal_context_destroy(fresh);
    CHILD_CHECK(ran_any() == 0);
    CHILD_CHECK(b == NULL && out == NULL);
    _exit(child_failures ? 1 : 0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's checks failed (its stderr says which)");
  /* The parent goes on. */
  float got[8];
  ck_assert_ok(hdal_buffer_copy_to_host(copy, got, sizeof got));
  ck_assert_mem_eq(got, values, sizeof got);
  hdal_buffer_release(copy);
  hdal_buffer_release(view);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  Suite *s = suite_create("dispatch");
  TCase *tc = tcase_create("dispatch");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, every_path_calls_the_backend_through_the_dispatch_layer);
  tcase_add_test(tc, a_module_without_a_guard_is_not_called_in_a_fork_child);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
