/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory pools on PoCL (docs/memory.md): the same cl_mem serves a
 * copying import, copy_to_device and an export again once freed, with the
 * statistics after each operation; trim gives it back; a block a consumer's
 * out-of-order queue still writes to waits; HDAL_MEMORY_POOL=0; the limit
 * under threads (tests/pool/pool_race.h). */
#include "test_opencl.h"
#include "pool/pool_race.h"

#define N 16384 /* bytes */

static unsigned char host[N];

static void no_deleter(DLManagedTensor *m) { free(m); }

static hdal_capsule *host_capsule(void) {
  static int64_t shape[1] = {N};
  DLManagedTensor *m = calloc(1, sizeof *m);
  m->dl_tensor = (DLTensor){.data = host, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLUInt, 8, 1}, .shape = shape};
  m->deleter = no_deleter;
  return hdal_capsule_wrap(m);
}

static hdal_device *first(hdal_context *ctx, const char *platform) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!strcmp(hdal_device_platform(hdal_context_device(ctx, i)), platform)) return hdal_context_device(ctx, i);
  ck_abort_msg("no %s device", platform);
  return NULL;
}

static hdal_buffer *onto(hdal_context *ctx, hdal_device *d) {
  hdal_capsule *c = host_capsule();
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS};
  hdal_buffer *b = NULL;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, d, &o, &b));
  hdal_capsule_destroy(c);
  unsigned char back[N];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, N));
  ck_assert(!memcmp(back, host, N));
  return b;
}

#define ck_assert_stats(d, in_use, reserved, allocs, hits)    \
  do {                                                        \
    hdal_memory_stats s_ = {.struct_size = sizeof s_};        \
    ck_assert_ok(hdal_device_memory_stats((d), &s_));         \
    ck_assert_uint_eq(s_.bytes_in_use, (in_use));             \
    ck_assert_uint_eq(s_.bytes_reserved, (reserved));         \
    ck_assert_uint_eq(s_.num_allocs, (allocs));               \
    ck_assert_uint_eq(s_.num_pool_hits, (hits));              \
  } while (0)

START_TEST(cl_mem_reused_across_import_copy_and_export) {
  hdal_context *ctx = test_context_with("cpu,opencl");
  hdal_device *cl = first(ctx, "opencl"), *cpu = first(ctx, "cpu");
  hdal_buffer *a = onto(ctx, cl);
  void *mem = hdal_buffer_data(a);
  ck_assert_stats(cl, N, N, 1, 0);
  hdal_buffer_release(a);
  ck_assert_stats(cl, 0, N, 1, 0);
  a = onto(ctx, cl); /* import: the same cl_mem */
  ck_assert_ptr_eq(hdal_buffer_data(a), mem);
  ck_assert_stats(cl, N, N, 2, 1);

  /* copy_to_device: a new cl_mem while a holds its own; once both are back, the next copy takes one. */
  hdal_buffer *h = onto(ctx, cpu), *b;
  ck_assert_ok(hdal_buffer_copy_to_device(h, cl, &b));
  ck_assert_ptr_ne(hdal_buffer_data(b), mem);
  ck_assert_stats(cl, 2 * N, 2 * N, 3, 1);
  hdal_buffer_release(a);
  hdal_buffer_release(b);
  ck_assert_ok(hdal_buffer_copy_to_device(h, cl, &b));
  ck_assert_stats(cl, N, 2 * N, 4, 2);

  /* Export onto the CPU: the CPU device's pool serves the copy. */
  ck_assert_stats(cpu, N, N, 1, 0);
  hdal_export_options eo = HDAL_EXPORT_OPTIONS_INIT;
  eo.has_dl_device = true;
  eo.dl_device = (DLDevice){kDLCPU, 0};
  hdal_capsule *out;
  ck_assert_ok(hdal_buffer_to_dlpack(b, &eo, &out));
  DLManagedTensor *m = hdal_capsule_pointer(out);
  ck_assert(!memcmp(m->dl_tensor.data, host, N));
  ck_assert_stats(cpu, 2 * N, 2 * N, 2, 0);
  hdal_capsule_destroy(out);
  ck_assert_stats(cpu, N, 2 * N, 2, 0);
  ck_assert_ok(hdal_buffer_to_dlpack(b, &eo, &out));
  ck_assert_stats(cpu, 2 * N, 2 * N, 3, 1);
  hdal_capsule_destroy(out);

  hdal_buffer_release(b);
  hdal_buffer_release(h);
  ck_assert_stats(cl, 0, 2 * N, 4, 2);
  ck_assert_ok(hdal_device_trim(cl));
  ck_assert_stats(cl, 0, 0, 4, 2);
  hdal_context_destroy(ctx);
}
END_TEST

/* Stream-ordered reuse: a consumer's out-of-order queue still holds a write
 * into an exported cl_mem (held back by a user event) when the consumer lets go
 * of it.  The block must not serve hdal before that write ran: reused, its new
 * contents would be overwritten. */
START_TEST(block_behind_a_consumers_queued_command_waits) {
  hdal_context *ctx = test_context_with("cpu,opencl");
  /* PoCL's pthread device: its basic device runs a released user event's
   * commands in the releasing thread and deadlocks there (PoCL 3.1). */
  hdal_device *cl = NULL;
  for (size_t i = 0; i < hdal_context_device_count(ctx) && !cl; i++)
    if (!strncmp(hdal_device_kind(hdal_context_device(ctx, i)), "pthread", 7)) cl = hdal_context_device(ctx, i);
  if (!cl) {
    printf("no PoCL pthread device: the out-of-order queue case is not run\n");
    hdal_context_destroy(ctx);
    return;
  }
  hdal_buffer *a = onto(ctx, cl);
  hdal_capsule *cap;
  ck_assert_ok(hdal_buffer_to_dlpack(a, NULL, &cap));
  cl_mem mem = ((DLManagedTensor *)hdal_capsule_pointer(cap))->dl_tensor.data;
  ck_assert_ptr_eq(mem, hdal_buffer_data(a));
  hdal_buffer_release(a); /* the export holds it */

  cl_context c;
  cl_device_id dev;
  ck_assert_cl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof c, &c, NULL));
  ck_assert_cl(clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL));
  cl_int e;
  cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  cl_command_queue q = clCreateCommandQueueWithProperties(c, dev, props, &e);
  ck_assert_cl(e);
  cl_event gate = clCreateUserEvent(c, &e);
  ck_assert_cl(e);
  static unsigned char late[N];
  memset(late, 0xee, N);
  ck_assert_cl(clEnqueueWriteBuffer(q, mem, CL_FALSE, 0, N, late, 1, &gate, NULL));
  ck_assert_cl(clFlush(q));
  hdal_capsule_destroy(cap); /* the consumer lets go; its write is still queued */
  ck_assert_stats(cl, 0, N, 1, 0);

  hdal_buffer *b = onto(ctx, cl);
  ck_assert_ptr_ne(hdal_buffer_data(b), mem); /* not while the write may land */
  ck_assert_stats(cl, N, 2 * N, 2, 0);
  ck_assert_cl(clSetUserEventStatus(gate, CL_COMPLETE));
  ck_assert_cl(clFinish(q));
  unsigned char back[N];
  ck_assert_ok(hdal_buffer_copy_to_host(b, back, N));
  ck_assert(!memcmp(back, host, N));
  hdal_buffer *d = onto(ctx, cl); /* the write ran: the block serves again */
  ck_assert_ptr_eq(hdal_buffer_data(d), mem);
  ck_assert_stats(cl, 2 * N, 2 * N, 3, 1);
  clReleaseEvent(gate);
  clReleaseCommandQueue(q);
  hdal_buffer_release(b);
  hdal_buffer_release(d);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(caching_off) {
  setenv("HDAL_MEMORY_POOL", "0", 1);
  hdal_context *ctx = test_context_with("cpu,opencl");
  hdal_device *cl = first(ctx, "opencl");
  hdal_buffer_release(onto(ctx, cl));
  hdal_buffer_release(onto(ctx, cl));
  ck_assert_stats(cl, 0, 0, 2, 0);
  hdal_context_destroy(ctx);
}
END_TEST

/* The OpenCL pool is lib/pool.c too: its limit holds under threads (issue 24),
 * for allocations at once and for churn with the cache trimmed to make room. */
START_TEST(limit_holds_for_allocations_at_once) {
  hdal_context *ctx = race_context("cpu,opencl", "1572864"); /* 1.5 MiB */
  race_allocate_at_once(ctx, first(ctx, "opencl"), 1 << 20, 4, race_rounds(40), "opencl");
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(limit_holds_while_threads_churn) {
  hdal_context *ctx = race_context("cpu,opencl", "1600000");
  static const size_t sizes[RACE_SIZES] = {128000, 192000, 256000, 320000, 384000}; /* test_pool's, times 8 */
  race_churn(ctx, first(ctx, "opencl"), sizes, 8, 2, 2 * race_rounds(40), "opencl");
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_MEMORY_POOL");
  unsetenv("HDAL_MEMORY_POOL_LIMIT");
  opencl_require_pocl();
  for (size_t i = 0; i < N; i++) host[i] = (unsigned char)(i * 131 + 17);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:1 pu:1", 1);
  Suite *s = suite_create("opencl_pool");
  TCase *tc = tcase_create("opencl_pool");
  tcase_add_test(tc, cl_mem_reused_across_import_copy_and_export);
  tcase_add_test(tc, block_behind_a_consumers_queued_command_waits);
  tcase_add_test(tc, caching_off);
  tcase_add_test(tc, limit_holds_for_allocations_at_once);
  tcase_add_test(tc, limit_holds_while_threads_churn);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
