/* SPDX-License-Identifier: BSD-3-Clause */
/* The OpenCL module's buffer operations, driven through the backend ABI
 * (include/hdal/backend.h) the way the core drives them, on real PoCL: the
 * module is opened like the loader does and given a host table of the test's
 * own, so every operation is checked on its own terms (handles, offsets,
 * contexts, references, alignment). */
#include <dlfcn.h>
#include <unistd.h>
#include <hdal/backend.h>
#include "test_opencl.h"

/* ---- a host table of the test's own ---- */

/* Stands in for hdal_error: the module only creates errors through the host. */
typedef struct {
  hdal_code code;
  char message[512];
} fake_error;

typedef struct {
  hdal_backend_device_info info;
  char kind[256];
  char reason[512];
  int nattrs;
} fake_device;

struct hdal_backend_discovery {
  fake_device devices[16];
  int n;
};

static hdal_device *fake_add_device(hdal_backend_discovery *disc, const hdal_backend_device_info *info) {
  ck_assert_int_lt(disc->n, 16);
  fake_device *d = &disc->devices[disc->n++];
  d->info = *info;
  snprintf(d->kind, sizeof d->kind, "%s", info->kind);
  snprintf(d->reason, sizeof d->reason, "%s", info->runtime_class_reason ? info->runtime_class_reason : "");
  return (hdal_device *)d;
}

static bool fake_add_attribute(hdal_device *dev, const hdal_backend_attribute *attribute) {
  ((fake_device *)dev)->nattrs++;
  return true;
}

static void fake_debug(hdal_backend_discovery *disc, const char *fmt, ...) {}

static void fake_restrict(void *topology) {}

static int fake_numa(hdal_backend_discovery *disc, const char *bus) { return -1; }

static hdal_error *fake_error_new(hdal_code code, const char *fmt, ...) {
  fake_error *e = calloc(1, sizeof *e);
  ck_assert_ptr_nonnull(e);
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return (hdal_error *)e;
}

static fake_error oom = {HDAL_RESOURCE_EXHAUSTED, "out of memory"};
static hdal_error *fake_oom(void) { return (hdal_error *)&oom; }

static const hdal_backend_host fake_host = {
    .add_device = fake_add_device,
    .add_attribute = fake_add_attribute,
    .debug = fake_debug,
    .topology_restrict = fake_restrict,
    .numa_node_of_pci = fake_numa,
    .error_new = fake_error_new,
    .error_oom = fake_oom,
};

#define ck_assert_op(expr)                                                                         \
  do {                                                                                             \
    fake_error *ck_e_ = (fake_error *)(expr);                                                      \
    ck_assert_msg(ck_e_ == NULL, "%s: %s: %s", #expr, hdal_code_name(ck_e_ ? ck_e_->code : 0),     \
                  ck_e_ ? ck_e_->message : "");                                                    \
  } while (0)

#define ck_assert_op_error(expr, want_code, want_message)                         \
  do {                                                                            \
    fake_error *ck_e_ = (fake_error *)(expr);                                     \
    ck_assert_msg(ck_e_ != NULL, "%s succeeded", #expr);                          \
    ck_assert_str_eq(hdal_code_name(ck_e_->code), hdal_code_name(want_code));     \
    ck_assert_str_eq(ck_e_->message, (want_message));                             \
    free(ck_e_);                                                                  \
  } while (0)

/* ---- the module ---- */

static const hdal_backend *backend;
static const hdal_backend_buffer_ops *ops;
static hdal_backend_discovery disc;
static void *state;
static void *dev0, *dev1;     /* the module's per-device pointers */
static cl_device_id id0, id1; /* the same devices, from OpenCL */

static const hdal_backend *open_module(void) {
  /* This build's OpenCL module: the suite's module path has one directory per module of the build. */
  char file[4200];
  const char *path = getenv("HDAL_BACKEND_PATH");
  ck_assert_ptr_nonnull(path);
  for (const char *p = path; *p; p += strcspn(p, ":"), p += *p == ':') {
    snprintf(file, sizeof file, "%.*s/hdal_opencl.so", (int)strcspn(p, ":"), p);
    if (access(file, F_OK) == 0) break;
  }
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen %s: %s", file, dlerror());
  const hdal_backend *b = dlsym(h, "hdal_opencl_backend");
  ck_assert_ptr_nonnull(b);
  return b;
}

static void setup(void) {
  backend = open_module();
  ck_assert_uint_eq(backend->abi_version, HDAL_BACKEND_ABI_VERSION);
  ck_assert_uint_eq(backend->dl_device_types, HDAL_DL_TYPE_BIT(kDLOpenCL));
  ops = backend->buffer_ops;
  ck_assert_ptr_nonnull(ops);
  memset(&disc, 0, sizeof disc);
  ck_assert_op(backend->discover(&fake_host, &disc, &state));
  ck_assert_int_eq(disc.n, 2);
  dev0 = disc.devices[0].info.data;
  dev1 = disc.devices[1].info.data;
  cl_device_id ids[2];
  ck_assert_uint_eq(cl_all_devices(ids, 2), 2);
  id0 = ids[0];
  id1 = ids[1];
}

static void teardown(void) { backend->finalize(state); }

static DLTensor cl_tensor(cl_mem m, uint64_t byte_offset) {
  static int64_t shape[1] = {16};
  DLTensor t = {.data = m, .device = {kDLOpenCL, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape,
                .byte_offset = byte_offset};
  return t;
}

static cl_mem own_buffer(cl_context c, size_t n) {
  cl_int e;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE, n, NULL, &e);
  ck_assert_cl(e);
  return m;
}

/* ---- tests ---- */

START_TEST(discovery_gives_each_device_its_flat_index) {
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(disc.devices[i].info.local_hardware_id, i);
    ck_assert_int_eq(disc.devices[i].info.dlpack_device.device_type, kDLOpenCL);
    ck_assert_int_eq(disc.devices[i].info.dlpack_device.device_id, i);
    ck_assert_int_eq(disc.devices[i].info.runtime_class, HDAL_RUNTIME_PJRT);
    ck_assert_str_eq(disc.devices[i].kind, cl_device_str(i ? id1 : id0, CL_DEVICE_NAME));
    ck_assert_int_ge(disc.devices[i].nattrs, 17);
  }
}
END_TEST

START_TEST(write_read_round_trip_with_offsets) {
  void *h = NULL;
  ck_assert_op(ops->allocate(state, dev0, 4096, &h));
  unsigned char in[4096], out[4096];
  for (int i = 0; i < 4096; i++) in[i] = (unsigned char)(i * 7 + 3);
  ck_assert_op(ops->write(state, dev0, h, 0, in, sizeof in, NULL));
  memset(out, 0, sizeof out);
  ck_assert_op(ops->read(state, dev0, h, 0, out, sizeof out, NULL));
  ck_assert_mem_eq(in, out, sizeof in);
  /* An offset write lands there and nowhere else. */
  unsigned char patch[100];
  memset(patch, 0xab, sizeof patch);
  ck_assert_op(ops->write(state, dev0, h, 1000, patch, sizeof patch, NULL));
  ck_assert_op(ops->read(state, dev0, h, 0, out, sizeof out, NULL));
  ck_assert_mem_eq(out, in, 1000);
  ck_assert_mem_eq(out + 1000, patch, 100);
  ck_assert_mem_eq(out + 1100, in + 1100, 4096 - 1100);
  ck_assert_op(ops->read(state, dev0, h, 1050, out, 10, NULL));
  ck_assert_mem_eq(out, patch, 10);
  /* It is a cl_mem of a context that holds exactly the device. */
  cl_context c;
  size_t size;
  ck_assert_cl(clGetMemObjectInfo(h, CL_MEM_CONTEXT, sizeof c, &c, NULL));
  ck_assert_cl(clGetMemObjectInfo(h, CL_MEM_SIZE, sizeof size, &size, NULL));
  ck_assert_uint_eq(size, 4096);
  cl_device_id in_ctx[4];
  size_t got;
  ck_assert_cl(clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof in_ctx, in_ctx, &got));
  ck_assert_uint_eq(got, sizeof(cl_device_id));
  ck_assert_ptr_eq(in_ctx[0], id0);
  ops->release(state, dev0, h);
}
END_TEST

START_TEST(out_of_range_read_is_an_error) {
  void *h = NULL;
  char buf[64];
  ck_assert_op(ops->allocate(state, dev0, 32, &h));
  ck_assert_op_error(ops->read(state, dev0, h, 0, buf, 64, NULL), HDAL_INVALID_ARGUMENT,
                     "clEnqueueReadBuffer: CL_INVALID_VALUE (-30)");
  ck_assert_op_error(ops->write(state, dev0, h, 16, buf, 17, NULL), HDAL_INVALID_ARGUMENT,
                     "clEnqueueWriteBuffer: CL_INVALID_VALUE (-30)");
  ops->release(state, dev0, h);
}
END_TEST

START_TEST(allocation_above_the_device_limit_is_resource_exhausted) {
  cl_ulong max = cl_device_ulong(id0, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  void *h = (void *)1;
  char msg[256];
  snprintf(msg, sizeof msg, "OpenCL device 0: %llu bytes exceed its largest allocation (%llu bytes)",
           (unsigned long long)max + 1, (unsigned long long)max);
  ck_assert_op_error(ops->allocate(state, dev0, (size_t)max + 1, &h), HDAL_RESOURCE_EXHAUSTED, msg);
  ck_assert_ptr_eq(h, (void *)1); /* untouched */
}
END_TEST

START_TEST(zero_byte_allocation_and_transfers) {
  void *h = NULL;
  ck_assert_op(ops->allocate(state, dev0, 0, &h));
  ck_assert_ptr_nonnull(h);
  ck_assert_op(ops->write(state, dev0, h, 0, "", 0, NULL));
  ck_assert_op(ops->read(state, dev0, h, 0, NULL, 0, NULL));
  ops->release(state, dev0, h);
}
END_TEST

START_TEST(can_alias_only_cl_mem_of_a_context_holding_the_device) {
  void *h0 = NULL;
  ck_assert_op(ops->allocate(state, dev0, 64, &h0));
  DLTensor t = cl_tensor(h0, 0);
  ck_assert(ops->can_alias(state, dev0, &t));
  ck_assert(!ops->can_alias(state, dev1, &t)); /* hdal's context of device 0 lacks device 1 */
  /* Only where a sub-buffer can start: the device's base address alignment. */
  cl_uint align = cl_device_uint(id0, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  t = cl_tensor(h0, align);
  ck_assert(ops->can_alias(state, dev0, &t));
  t = cl_tensor(h0, 4);
  ck_assert(!ops->can_alias(state, dev0, &t));
  /* A caller's context with both devices: either may use the memory in place. */
  cl_device_id both[2] = {id0, id1};
  cl_int e;
  cl_context c = clCreateContext(NULL, 2, both, NULL, NULL, &e);
  ck_assert_cl(e);
  cl_mem m = own_buffer(c, 64);
  t = cl_tensor(m, 0);
  ck_assert(ops->can_alias(state, dev0, &t));
  ck_assert(ops->can_alias(state, dev1, &t));
  cl_context c1 = cl_own_context(id1);
  cl_mem m1 = own_buffer(c1, 64);
  t = cl_tensor(m1, 0);
  ck_assert(!ops->can_alias(state, dev0, &t));
  ck_assert(ops->can_alias(state, dev1, &t));
  /* Host memory and NULL are never a cl_mem. */
  float host[16];
  t = cl_tensor(NULL, 0);
  ck_assert(!ops->can_alias(state, dev0, &t));
  t.data = host;
  t.device.device_type = kDLCPU;
  ck_assert(!ops->can_alias(state, dev0, &t));
  clReleaseMemObject(m1);
  clReleaseContext(c1);
  clReleaseMemObject(m);
  clReleaseContext(c);
  ops->release(state, dev0, h0);
}
END_TEST

START_TEST(retain_and_release_count_references) {
  cl_context c = cl_own_context(id0);
  cl_mem m = own_buffer(c, 64);
  ck_assert_uint_eq(cl_mem_refcount(m), 1);
  ck_assert_op(ops->retain(state, dev0, m));
  ck_assert_uint_eq(cl_mem_refcount(m), 2);
  ops->release(state, dev0, m);
  ck_assert_uint_eq(cl_mem_refcount(m), 1);
  ck_assert_op_error(ops->retain(state, dev0, NULL), HDAL_INVALID_ARGUMENT,
                     "clRetainMemObject: CL_INVALID_MEM_OBJECT (-38)");
  clReleaseMemObject(m);
  clReleaseContext(c);
}
END_TEST

/* A caller's cl_mem in the caller's context: hdal works on it through a queue of that context. */
START_TEST(foreign_cl_mem_read_and_written_in_its_own_context) {
  cl_context c = cl_own_context(id1);
  cl_mem m = own_buffer(c, 256);
  int in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = i * i - 7;
  ck_assert_op(ops->write(state, dev1, m, 0, in, sizeof in, NULL));
  cl_command_queue q = clCreateCommandQueue(c, id1, 0, NULL);
  ck_assert_ptr_nonnull(q);
  ck_assert_cl(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  ck_assert_mem_eq(in, out, sizeof in);
  memset(out, 0, sizeof out);
  ck_assert_op(ops->read(state, dev1, m, 128, out, 128, NULL));
  ck_assert_mem_eq(out, in + 32, 128);
  /* Device 0 is not in that context: no queue of it can serve the memory. */
  ck_assert_op_error(ops->read(state, dev0, m, 0, out, 4, NULL), HDAL_INVALID_ARGUMENT,
                     "clCreateCommandQueue (the cl_mem's context): CL_INVALID_CONTEXT (-34)");
  clReleaseCommandQueue(q);
  clReleaseMemObject(m);
  clReleaseContext(c);
}
END_TEST

START_TEST(copy_within_a_device_and_across_devices) {
  void *a = NULL, *b = NULL, *x = NULL;
  ck_assert_op(ops->allocate(state, dev0, 1024, &a));
  ck_assert_op(ops->allocate(state, dev0, 1024, &b));
  ck_assert_op(ops->allocate(state, dev1, 1024, &x));
  double in[128], out[128];
  for (int i = 0; i < 128; i++) in[i] = i / 3.0;
  ck_assert_op(ops->write(state, dev0, a, 0, in, sizeof in, NULL));
  /* Same context: clEnqueueCopyBuffer, with offsets. */
  ck_assert_op(ops->copy(state, dev0, b, 512, dev0, a, 0, 512, NULL));
  ck_assert_op(ops->read(state, dev0, b, 512, out, 512, NULL));
  ck_assert_mem_eq(out, in, 512);
  /* Device 0 -> device 1: two contexts, through the host. */
  ck_assert_op(ops->copy(state, dev1, x, 0, dev0, a, 256, 768, NULL));
  ck_assert_op(ops->read(state, dev1, x, 0, out, 768, NULL));
  ck_assert_mem_eq(out, in + 32, 768);
  ck_assert_op_error(ops->copy(state, dev1, x, 512, dev0, a, 0, 1024, NULL), HDAL_INVALID_ARGUMENT,
                     "clEnqueueWriteBuffer: CL_INVALID_VALUE (-30)");
  ops->release(state, dev0, a);
  ops->release(state, dev0, b);
  ops->release(state, dev1, x);
}
END_TEST

START_TEST(subrange_at_an_aligned_offset_is_a_sub_buffer) {
  cl_uint align = cl_device_uint(id0, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  size_t n = 4 * align;
  void *h = NULL, *sub = NULL, *subsub = NULL;
  ck_assert_op(ops->allocate(state, dev0, n, &h));
  unsigned char *in = malloc(n), *out = malloc(n);
  for (size_t i = 0; i < n; i++) in[i] = (unsigned char)(i ^ 0x5a);
  ck_assert_op(ops->write(state, dev0, h, 0, in, n, NULL));
  ck_assert_op(ops->subrange(state, dev0, h, align, 2 * align, &sub));
  ck_assert_ptr_ne(sub, h);
  cl_mem parent = NULL;
  size_t off = 0, size = 0;
  ck_assert_cl(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL));
  ck_assert_cl(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof off, &off, NULL));
  ck_assert_cl(clGetMemObjectInfo(sub, CL_MEM_SIZE, sizeof size, &size, NULL));
  ck_assert_ptr_eq(parent, h);
  ck_assert_uint_eq(off, align);
  ck_assert_uint_eq(size, 2 * align);
  ck_assert_op(ops->read(state, dev0, sub, 0, out, 2 * align, NULL));
  ck_assert_mem_eq(out, in + align, 2 * align);
  /* A subrange of a subrange is cut from the parent. */
  ck_assert_op(ops->subrange(state, dev0, sub, align, align, &subsub));
  ck_assert_cl(clGetMemObjectInfo(subsub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL));
  ck_assert_cl(clGetMemObjectInfo(subsub, CL_MEM_OFFSET, sizeof off, &off, NULL));
  ck_assert_ptr_eq(parent, h);
  ck_assert_uint_eq(off, 2 * align);
  ck_assert_op(ops->read(state, dev0, subsub, 0, out, align, NULL));
  ck_assert_mem_eq(out, in + 2 * align, align);
  /* The whole object is the object itself, with one more reference. */
  void *whole = NULL;
  cl_uint refs = cl_mem_refcount(h);
  ck_assert_op(ops->subrange(state, dev0, h, 0, n, &whole));
  ck_assert_ptr_eq(whole, h);
  ck_assert_uint_eq(cl_mem_refcount(h), refs + 1);
  ops->release(state, dev0, whole);
  ops->release(state, dev0, subsub);
  ops->release(state, dev0, sub);
  ops->release(state, dev0, h);
  free(in);
  free(out);
}
END_TEST

START_TEST(subrange_refused_off_alignment_and_out_of_range) {
  cl_uint align = cl_device_uint(id0, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  void *h = NULL, *out = (void *)1;
  ck_assert_op(ops->allocate(state, dev0, 4 * align, &h));
  cl_uint refs = cl_mem_refcount(h);
  char msg[256];
  snprintf(msg, sizeof msg,
           "cl_mem offset 4 is not a multiple of the device's base address alignment (%u bytes): "
           "no sub-buffer can start there",
           align);
  ck_assert_op_error(ops->subrange(state, dev0, h, 4, 16, &out), HDAL_FAILED_PRECONDITION, msg);
  snprintf(msg, sizeof msg, "bytes [%u, %u) are outside the %u-byte cl_mem", 3 * align, 5 * align, 4 * align);
  ck_assert_op_error(ops->subrange(state, dev0, h, 3 * align, 2 * align, &out), HDAL_OUT_OF_RANGE, msg);
  ck_assert_ptr_eq(out, (void *)1);
  ck_assert_uint_eq(cl_mem_refcount(h), refs); /* nothing taken */
  ops->release(state, dev0, h);
}
END_TEST

/* The caller's queue: hdal's transfer runs after what was enqueued there. */
START_TEST(stream_orders_after_the_callers_queue) {
  void *h = NULL;
  ck_assert_op(ops->allocate(state, dev0, 4096, &h));
  cl_context c;
  ck_assert_cl(clGetMemObjectInfo(h, CL_MEM_CONTEXT, sizeof c, &c, NULL));
  cl_command_queue q = clCreateCommandQueue(c, id0, 0, NULL);
  ck_assert_ptr_nonnull(q);
  static unsigned char fill[4096], out[4096];
  memset(fill, 0x3c, sizeof fill);
  /* Non-blocking on the caller's queue: only the stream makes the read wait for it. */
  ck_assert_cl(clEnqueueWriteBuffer(q, h, CL_FALSE, 0, sizeof fill, fill, 0, NULL, NULL));
  intptr_t stream = (intptr_t)q;
  ck_assert_op(ops->read(state, dev0, h, 0, out, sizeof out, &stream));
  ck_assert_mem_eq(out, fill, sizeof fill);
  memset(fill, 0x11, sizeof fill);
  ck_assert_cl(clEnqueueWriteBuffer(q, h, CL_FALSE, 0, sizeof fill, fill, 0, NULL, NULL));
  ck_assert_op(ops->stream_wait(state, dev0, stream));
  ck_assert_op(ops->read(state, dev0, h, 0, out, sizeof out, NULL));
  ck_assert_mem_eq(out, fill, sizeof fill);
  ck_assert_op_error(ops->stream_wait(state, dev0, 0), HDAL_INVALID_ARGUMENT, "stream: a NULL cl_command_queue");
  clReleaseCommandQueue(q);
  ops->release(state, dev0, h);
}
END_TEST

int main(void) {
  opencl_require_pocl();
  if (pocl_device_count() != 2) {
    printf("SKIP: this suite wants POCL_DEVICES with two devices, got \"%s\"\n", getenv("POCL_DEVICES"));
    return 77;
  }
  Suite *s = suite_create("opencl_ops");
  TCase *tc = tcase_create("ops");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, discovery_gives_each_device_its_flat_index);
  tcase_add_test(tc, write_read_round_trip_with_offsets);
  tcase_add_test(tc, out_of_range_read_is_an_error);
  tcase_add_test(tc, allocation_above_the_device_limit_is_resource_exhausted);
  tcase_add_test(tc, zero_byte_allocation_and_transfers);
  tcase_add_test(tc, can_alias_only_cl_mem_of_a_context_holding_the_device);
  tcase_add_test(tc, retain_and_release_count_references);
  tcase_add_test(tc, foreign_cl_mem_read_and_written_in_its_own_context);
  tcase_add_test(tc, copy_within_a_device_and_across_devices);
  tcase_add_test(tc, subrange_at_an_aligned_offset_is_a_sub_buffer);
  tcase_add_test(tc, subrange_refused_off_alignment_and_out_of_range);
  tcase_add_test(tc, stream_orders_after_the_callers_queue);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
