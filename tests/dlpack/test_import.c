/* SPDX-License-Identifier: BSD-3-Clause */
/* DLPack import: the ordered checks, their messages, routing, copy modes and
 * deleter counts (docs/dlpack.md, "Import"). */
#include "dlpack_testutil.h"

#define MSG_NOT_PJRT "DLPack is supported for PjRt-compatible backends only."
#define MSG_NOT_ADDRESSABLE "DLPack is only supported for devices addressable by the current process."
#define MSG_NAME(N)                                                                                     \
  "DLPack tensor must be a capsule with name \"dltensor\", got \"" N "\". Note that a DLPack tensor may " \
  "be consumed at most once."

static hdal_device *ifrt_device(hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!strcmp(hdal_device_platform(hdal_context_device(ctx, i)), "ifrttest")) return hdal_context_device(ctx, i);
  ck_abort_msg("no ifrttest device (is HDAL_BACKEND_PATH set?)");
  return NULL;
}

/* A tensor failing checks 3 (name), 5 (ndim) and 6 (dtype) at once. */
static hdal_capsule *bad_everything(tt_tensor **tp) {
  int64_t shape[1] = {4};
  tt_tensor *t = tt_make(tt_iota(4), true, 1, shape, NULL, (DLDataType){kDLFloat, 12, 1}, tt_cpu);
  t->legacy.dl_tensor.ndim = -1;
  *tp = t;
  hdal_capsule *c = hdal_capsule_new("not_a_tensor", &t->legacy);
  ck_assert_ptr_nonnull(c);
  return c;
}

START_TEST(check1_non_pjrt_first) {
  hdal_context *ctx = test_context_with("cpu,ifrttest");
  tt_tensor *t;
  hdal_capsule *c = bad_everything(&t);
  hdal_buffer *b = (hdal_buffer *)1;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, ifrt_device(ctx), NULL, &b), HDAL_FAILED_PRECONDITION, MSG_NOT_PJRT);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(hdal_capsule_name(c), "not_a_tensor"); /* untouched */
  ck_assert_int_eq(tt_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 0); /* not a DLPack name: destroy calls nothing */
  t->legacy.deleter(&t->legacy);
  hdal_context_destroy(ctx);
}
END_TEST

/* A context that also lists process 1's copy of this machine's devices. */
static hdal_context *context_with_remote(void) {
  hdal_context *ctx = test_context_with("cpu");
  test_add_process_copy(ctx, 1);
  return ctx;
}

static hdal_device *remote_device(hdal_context *ctx) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (!hdal_device_is_addressable(hdal_context_device(ctx, i))) return hdal_context_device(ctx, i);
  ck_abort_msg("no remote device");
  return NULL;
}

START_TEST(check2_not_addressable_second) {
  hdal_context *ctx = context_with_remote();
  hdal_device *r = remote_device(ctx);
  ck_assert_int_eq(hdal_device_runtime_class(r), HDAL_RUNTIME_PJRT); /* so check 1 passes */
  tt_tensor *t;
  hdal_capsule *c = bad_everything(&t);
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, r, NULL, &b), HDAL_FAILED_PRECONDITION, MSG_NOT_ADDRESSABLE);
  ck_assert_str_eq(hdal_capsule_name(c), "not_a_tensor");
  hdal_capsule_destroy(c);
  t->legacy.deleter(&t->legacy);

  /* A good tensor is refused the same way and left untouched. */
  int64_t shape[1] = {4};
  c = tt_legacy(tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu));
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, r, NULL, &b), HDAL_FAILED_PRECONDITION, MSG_NOT_ADDRESSABLE);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(tt_deleted, 1);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 2);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(check3_name_before_ndim_and_dtype) {
  hdal_context *ctx = test_context_with("cpu");
  tt_tensor *t;
  hdal_capsule *c = bad_everything(&t);
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, MSG_NAME("not_a_tensor"));
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, tt_cpu_device(ctx), NULL, &b), HDAL_INVALID_ARGUMENT,
                  MSG_NAME("not_a_tensor"));
  hdal_capsule_destroy(c);
  t->legacy.deleter(&t->legacy);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(check4_version_calls_deleter) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {4};
  tt_tensor *t = tt_make(tt_iota(4), true, 1, shape, NULL, (DLDataType){kDLFloat, 12, 1}, tt_cpu);
  t->versioned.version = (DLPackVersion){2, 3};
  t->versioned.dl_tensor.ndim = -5; /* also fails 5 and 6: 4 comes first */
  hdal_capsule *c = tt_versioned(t, 0);
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor version 2.3 is not supported: hdal consumes major version 1");
  ck_assert_int_eq(tt_deleted, 1); /* per the DLPack spec */
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor_versioned");
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  MSG_NAME("used_dltensor_versioned"));
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(check5_ndim_before_dtype_and_shape) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {-4};
  tt_tensor *t = tt_make(tt_iota(4), true, 1, shape, NULL, (DLDataType){kDLFloat, 12, 1}, tt_cpu);
  t->legacy.dl_tensor.ndim = -3;
  hdal_capsule *c = tt_legacy(t);
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "Number of dimensions in DLManagedTensor must be nonnegative, got -3");
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  t->legacy.dl_tensor.ndim = 1; /* now 6 fails before 7 */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_UNIMPLEMENTED,
                  "Invalid or unsupported DLPack float width: 12 bits");
  t->legacy.dl_tensor.dtype = tt_f32; /* now 7 */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor has a negative dimension: shape[0] is -4");
  ck_assert_int_eq(tt_deleted, 0);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(view_then_second_import_refused) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[2] = {2, 3};
  float *data = tt_iota(6);
  hdal_capsule *c = tt_legacy(tt_make(data, true, 2, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b = NULL, *b2 = (hdal_buffer *)1;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  ck_assert_ptr_eq(hdal_buffer_data(b), data);
  ck_assert(hdal_buffer_is_view(b));
  ck_assert(!hdal_buffer_is_read_only(b));
  ck_assert_ptr_eq(hdal_buffer_device(b), tt_cpu_device(ctx));
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b2), HDAL_INVALID_ARGUMENT, MSG_NAME("used_dltensor"));
  ck_assert_ptr_null(b2);
  hdal_capsule_destroy(c); /* consumed: no deleter */
  ck_assert_int_eq(tt_deleted, 0);
  hdal_buffer_retain(b);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 0);
  hdal_buffer_release(b); /* the last reference: the deleter runs once */
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(copy_always_runs_deleter_when_done) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[2] = {3, 5};
  float *data = tt_iota(15);
  hdal_capsule *c = tt_legacy(tt_make(data, false, 2, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_always, &b));
  ck_assert_int_eq(tt_deleted, 1); /* the source is no longer needed */
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor");
  ck_assert_ptr_ne(hdal_buffer_data(b), data);
  ck_assert(!hdal_buffer_is_view(b));
  const float *copy = hdal_buffer_data(b);
  for (int i = 0; i < 15; i++) ck_assert_float_eq(copy[i], (float)i);
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
  free(data);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(routing_errors_name_type_and_id) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {4};
  hdal_buffer *b;
  struct {
    DLDevice dev;
    const char *msg;
  } cases[] = {
      {{kDLCUDA, 0}, "No hdal backend serves DLPack device type kDLCUDA (2), device id 0"},
      {{kDLOpenCL, 3}, "No hdal backend serves DLPack device type kDLOpenCL (4), device id 3"},
      {{kDLVulkan, 1}, "No hdal backend serves DLPack device type kDLVulkan (7), device id 1"},
      {{(DLDeviceType)20, 0}, "No hdal backend serves DLPack device type kDLTPUHost (20), device id 0"},
      {{(DLDeviceType)21, 2}, "No hdal backend serves DLPack device type kDLAscend (21), device id 2"},
      {{(DLDeviceType)99, 7}, "No hdal backend serves DLPack device type unknown (99), device id 7"},
      {{(DLDeviceType)-1, 0}, "No hdal backend serves DLPack device type unknown (-1), device id 0"},
      {{kDLCPU, 3}, "DLPack device (kDLCPU, 3) is out of range: the CPU backend's devices are all (kDLCPU, 0)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hdal_capsule *c = tt_legacy(tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, cases[i].dev));
    ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT, cases[i].msg);
    ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(tt_deleted, 8);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(ifrt_devices_own_no_import_type) {
  /* The IFRT-only module declares kDLExtDev but serves no buffers: no routing to it. */
  hdal_context *ctx = test_context_with("cpu,ifrttest");
  int64_t shape[1] = {4};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, (DLDevice){kDLExtDev, 0}));
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "No hdal backend serves DLPack device type kDLExtDev (12), device id 0");
  /* Given as the target, it gets the first seed message. */
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, ifrt_device(ctx), NULL, &b), HDAL_FAILED_PRECONDITION, MSG_NOT_PJRT);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(host_types_view_on_cpu) {
  /* CUDA host and managed memory is host memory: a CPU device views it. */
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {8};
  DLDeviceType types[] = {kDLCUDAHost, kDLCUDAManaged};
  for (int i = 0; i < 2; i++) {
    float *data = tt_iota(8);
    hdal_capsule *c = tt_legacy(tt_make(data, true, 1, shape, NULL, tt_f32, (DLDevice){types[i], 0}));
    hdal_buffer *b;
    ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, tt_cpu_device(ctx), &tt_never, &b));
    ck_assert_ptr_eq(hdal_buffer_data(b), data);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(tt_deleted, 2);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(host_types_route_to_cpu_without_their_backend) {
  /* Pinned and managed host memory with no CUDA or ROCm backend in the
   * context: routed as kDLCPU memory, to a CPU device, whatever device_id says. */
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {8};
  DLDeviceType types[] = {kDLCUDAHost, kDLCUDAManaged, kDLROCMHost};
  for (int i = 0; i < 3; i++) {
    float *data = tt_iota(8);
    hdal_capsule *c = tt_legacy(tt_make(data, true, 1, shape, NULL, tt_f32, (DLDevice){types[i], 2}));
    hdal_buffer *b;
    ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, &tt_never, &b));
    ck_assert_int_eq(hdal_device_dlpack_device(hdal_buffer_device(b)).device_type, kDLCPU);
    ck_assert_ptr_eq(hdal_buffer_data(b), data);
    hdal_buffer_release(b);
    hdal_capsule_destroy(c);
  }
  ck_assert_int_eq(tt_deleted, 3);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(copy_never_on_another_device) {
  /* A kDLCUDA tensor given to the CPU device: no backend reads it here, and
   * under HDAL_COPY_NEVER the refusal names both devices. */
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {4};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, (DLDevice){kDLCUDA, 1}));
  hdal_buffer *b;
  hdal_device *d = tt_cpu_device(ctx);
  char msg[512];
  snprintf(msg, sizeof msg,
           "Can't create a view of a DLPack tensor on (kDLCUDA, 1) on hdal device %d (cpu, %s): that device cannot "
           "address the tensor's memory, and copying is disabled (HDAL_COPY_NEVER)",
           hdal_device_id(d), hdal_device_kind(d));
  ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, c, d, &tt_never, &b), HDAL_INVALID_ARGUMENT, msg,
                        HDAL_CAUSE_COPY_REFUSED);
  /* Allowed to copy, it needs a backend that reads kDLCUDA memory: a refusal of another cause. */
  ck_assert_error_cause(hdal_buffer_from_dlpack(ctx, c, d, NULL, &b), HDAL_INVALID_ARGUMENT,
                        "No hdal backend serves DLPack device type kDLCUDA (2), device id 1", HDAL_CAUSE_NONE);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(read_only_versioned) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {4};
  float *data = tt_iota(4);
  hdal_capsule *c = tt_versioned(tt_make(data, true, 1, shape, NULL, tt_f32, tt_cpu), DLPACK_FLAG_BITMASK_READ_ONLY);
  hdal_buffer *b;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
  ck_assert_str_eq(hdal_capsule_name(c), "used_dltensor_versioned");
  ck_assert(hdal_buffer_is_read_only(b));
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_data(b), data);
  hdal_capsule_destroy(c);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(buffer_outlives_context) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {1000};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(1000), true, 1, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *view, *copy;
  ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &view));
  ck_assert_ok(hdal_buffer_copy_to_device(view, tt_cpu_device(ctx), &copy));
  hdal_capsule_destroy(c);
  hdal_context_destroy(ctx); /* the buffers keep it alive */
  ck_assert_int_eq(hdal_device_id(hdal_buffer_device(copy)), 0);
  float out[1000];
  ck_assert_ok(hdal_buffer_copy_to_host(copy, out, sizeof out));
  ck_assert_float_eq(out[999], 999.0f);
  hdal_buffer_release(view);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_buffer_release(copy);
}
END_TEST

START_TEST(bad_arguments) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[1] = {4};
  hdal_capsule *c = tt_legacy(tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu));
  hdal_buffer *b;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_from_dlpack: out is NULL");
  ck_assert_error(hdal_buffer_from_dlpack(ctx, NULL, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_from_dlpack: capsule is NULL");
  hdal_import_options o = {.struct_size = sizeof o, .copy = (hdal_copy_mode)7};
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_import_options: invalid copy mode 7");
  o.struct_size = 1;
  ck_assert_error(hdal_buffer_from_dlpack(ctx, c, NULL, &o, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_import_options: struct_size 1 is too small");
  hdal_capsule *empty = hdal_capsule_wrap(NULL);
  ck_assert_error(hdal_buffer_from_dlpack(ctx, empty, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack capsule \"dltensor\" holds a NULL tensor");
  hdal_capsule_destroy(empty);
  ck_assert_str_eq(hdal_capsule_name(c), "dltensor");
  ck_assert_int_eq(tt_deleted, 0);
  hdal_capsule_destroy(c);
  ck_assert_int_eq(tt_deleted, 1);
  hdal_context_destroy(ctx);
}
END_TEST

/* hdal_buffer_from_dlpack_tensor: the import of a tensor without a capsule
 * (docs/dlpack.md), with the capsule's checks, messages and ownership. */
START_TEST(tensor_without_capsule) {
  hdal_context *ctx = test_context_with("cpu");
  int64_t shape[2] = {2, 3};
  float *data = tt_iota(6);
  tt_tensor *t = tt_make(data, true, 2, shape, NULL, tt_f32, tt_cpu);
  hdal_buffer *b = NULL;
  /* A view, as through a capsule: the same data, the deleter at the last release. */
  ck_assert_ok(hdal_buffer_from_dlpack_tensor(ctx, &t->versioned, true, NULL, NULL, &b));
  ck_assert_ptr_eq(hdal_buffer_data(b), data);
  ck_assert(hdal_buffer_is_view(b));
  ck_assert_ptr_eq(hdal_buffer_device(b), tt_cpu_device(ctx));
  ck_assert_int_eq(tt_deleted, 0);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 1);

  /* Legacy, copied: the deleter runs as soon as the copy is made. */
  data = tt_iota(6);
  t = tt_make(data, true, 2, shape, NULL, tt_f32, tt_cpu);
  ck_assert_ok(hdal_buffer_from_dlpack_tensor(ctx, &t->legacy, false, NULL, &tt_always, &b));
  ck_assert_int_eq(tt_deleted, 2);
  ck_assert(!hdal_buffer_is_view(b));
  ck_assert_float_eq(((const float *)hdal_buffer_data(b))[5], 5.0f);
  hdal_buffer_release(b);
  ck_assert_int_eq(tt_deleted, 2);

  /* Refused: untouched and still the caller's, the capsule's message. */
  t = tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu);
  t->versioned.dl_tensor.ndim = -1;
  b = (hdal_buffer *)1;
  ck_assert_error(hdal_buffer_from_dlpack_tensor(ctx, &t->versioned, true, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "Number of dimensions in DLManagedTensor must be nonnegative, got -1");
  ck_assert_ptr_null(b);
  ck_assert_int_eq(tt_deleted, 2);
  /* Another major version: refused and deleted, as DLPack says. */
  t->versioned.version = (DLPackVersion){2, 0};
  ck_assert_error(hdal_buffer_from_dlpack_tensor(ctx, &t->versioned, true, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "DLPack tensor version 2.0 is not supported: hdal consumes major version 1");
  ck_assert_int_eq(tt_deleted, 3);

  /* Its own argument checks, named for it. */
  ck_assert_error(hdal_buffer_from_dlpack_tensor(ctx, NULL, true, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_from_dlpack_tensor: tensor is NULL");
  ck_assert_error(hdal_buffer_from_dlpack_tensor(NULL, NULL, true, NULL, NULL, &b), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_from_dlpack_tensor: context is NULL");
  ck_assert_error(hdal_buffer_from_dlpack_tensor(ctx, NULL, true, NULL, NULL, NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_buffer_from_dlpack_tensor: out is NULL");
  hdal_context *other = test_context_with("cpu");
  t = tt_make(tt_iota(4), true, 1, shape, NULL, tt_f32, tt_cpu);
  ck_assert_error(hdal_buffer_from_dlpack_tensor(ctx, &t->legacy, false, tt_cpu_device(other), NULL, &b),
                  HDAL_INVALID_ARGUMENT, "hdal_buffer_from_dlpack_tensor: device 0 belongs to another context");
  ck_assert_int_eq(tt_deleted, 3);
  t->legacy.deleter(&t->legacy);
  hdal_context_destroy(other);
  hdal_context_destroy(ctx);
}
END_TEST

/* Released buffer objects serve later imports (buffer.c keeps one per
 * context): ranks up and down, each view with its own shape and strides. */
START_TEST(buffer_objects_recycled_across_ranks) {
  hdal_context *ctx = test_context_with("cpu");
  static const int ranks[] = {4, 0, 6, 1, 9, 2, 6, 7, 3, 0, 5};
  int n = (int)(sizeof ranks / sizeof ranks[0]);
  for (int k = 0; k < n; k++) {
    int nd = ranks[k];
    int64_t shape[9], strides[9], count = 1;
    for (int i = nd - 1; i >= 0; i--) {
      shape[i] = 1 + (i + k) % 3;
      strides[i] = count;
      count *= shape[i];
    }
    float *data = tt_iota((size_t)count);
    hdal_capsule *c = tt_legacy(tt_make(data, true, nd, shape, k % 2 ? strides : NULL, tt_f32, tt_cpu));
    hdal_buffer *b;
    ck_assert_ok(hdal_buffer_from_dlpack(ctx, c, NULL, NULL, &b));
    ck_assert_int_eq(hdal_buffer_ndim(b), nd);
    ck_assert_ptr_eq(hdal_buffer_data(b), data);
    for (int i = 0; i < nd; i++) {
      ck_assert_int_eq(hdal_buffer_shape(b)[i], shape[i]);
      ck_assert_int_eq(hdal_buffer_strides(b)[i], strides[i]);
    }
    hdal_capsule_destroy(c);
    hdal_buffer_release(b);
    ck_assert_int_eq(tt_deleted, k + 1);
  }
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("import");
  TCase *tc = tcase_create("import");
  unsetenv("HDAL_BACKENDS");
  tcase_add_test(tc, check1_non_pjrt_first);
  tcase_add_test(tc, check2_not_addressable_second);
  tcase_add_test(tc, check3_name_before_ndim_and_dtype);
  tcase_add_test(tc, check4_version_calls_deleter);
  tcase_add_test(tc, check5_ndim_before_dtype_and_shape);
  tcase_add_test(tc, view_then_second_import_refused);
  tcase_add_test(tc, copy_always_runs_deleter_when_done);
  tcase_add_test(tc, routing_errors_name_type_and_id);
  tcase_add_test(tc, ifrt_devices_own_no_import_type);
  tcase_add_test(tc, host_types_view_on_cpu);
  tcase_add_test(tc, host_types_route_to_cpu_without_their_backend);
  tcase_add_test(tc, copy_never_on_another_device);
  tcase_add_test(tc, read_only_versioned);
  tcase_add_test(tc, buffer_outlives_context);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, tensor_without_capsule);
  tcase_add_test(tc, buffer_objects_recycled_across_ranks);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
