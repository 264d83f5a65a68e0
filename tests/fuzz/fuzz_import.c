/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness: DLPack import validation with any DLTensor field values
 * (up to 32 dimensions) and any capsule name, onto any device of the context
 * (two CPU devices; OpenCL on PoCL when tests/fuzz/run.sh built the module:
 * HDAL_FUZZ_MODULES), with or without a stream; then a copy to another
 * device, and export with any options (version, copy mode, another DLPack
 * device, a stream) and re-import of what was accepted.
 *
 * Memory is only read where the harness knows it is: a tensor whose elements
 * fall outside the arena (or whose data is NULL or a made-up address) is
 * imported with HDAL_COPY_NEVER and never copied.  Invariants checked: the
 * capsule is renamed and the deleter runs exactly once on success, neither
 * happens on failure (the version check aside); and every buffer that comes
 * out (the import, its copy on another device, the re-import of its export)
 * holds, read back compact row-major, the bytes a naive element-by-element
 * copy of the tensor gives. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdal.h>

#define ARENA (1 << 16)
static _Alignas(64) unsigned char arena[ARENA];
static hdal_context *ctx;
static int deleted;

/* A broken invariant: which one, then abort (libFuzzer keeps the input). */
static void broken(int line) {
  fprintf(stderr, "fuzz_import: the check at line %d does not hold\n", line);
  abort();
}
static hdal_device *targets[4]; /* CPU 0, CPU 1, OpenCL 0, OpenCL 1 (NULL: absent) */
static intptr_t cl_queue;       /* a cl_command_queue for streams onto OpenCL devices; 0: none */

static void del_legacy(DLManagedTensor *m) { (void)m, deleted++; }
static void del_versioned(DLManagedTensorVersioned *m) { (void)m, deleted++; }

typedef struct {
  const uint8_t *p;
  size_t n;
} input;

static uint8_t u8(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}
static uint64_t u64(input *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | u8(in);
  return v;
}
static int64_t dim(input *in) {
  uint8_t t = u8(in);
  if (t < 200) return t % 9;
  if (t < 250) return -(int64_t)(t - 199);
  return (int64_t)u64(in);
}
static int64_t stride(input *in) {
  uint8_t t = u8(in);
  if (t < 200) return (int64_t)(t % 17) - 8;
  if (t < 250) return (int64_t)(t - 200) * 97 - 2000;
  return (int64_t)u64(in);
}

/* The byte range the tensor's elements cover, if it lies inside the arena. */
static int inside_arena(const DLTensor *t, unsigned bits) {
  if (!t->data || t->ndim < 0 || t->ndim > 32) return 0;
  __int128 lo = 0, hi = 0;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0) return 0;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] == 0) return 1; /* nothing is read */
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] > (1 << 20)) return 0; /* keeps the arithmetic below in range */
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] <= 1) continue;
    __int128 s = t->strides ? t->strides[i] : 0;
    if (!t->strides) { /* row-major */
      s = 1;
      for (int k = i + 1; k < t->ndim; k++) s *= t->shape[k];
    }
    __int128 ext = (__int128)(t->shape[i] - 1) * s;
    if (ext > 0) hi += ext;
    else lo += ext;
  }
  __int128 base = (__int128)(uintptr_t)t->data + t->byte_offset - (__int128)(uintptr_t)arena;
  __int128 b = bits >= 8 ? bits / 8 : 1;
  __int128 first = base + lo * b - 1, last = base + (hi + 1) * b + 1;
  return first >= 0 && last <= ARENA;
}

/* The bytes a naive copy of the tensor gives, compact row-major (whole-byte
 * element types only): element by element, its address from its index. */
static void reference_copy(const DLTensor *t, unsigned bytes, unsigned char *out) {
  int64_t idx[33] = {0}, rm[33];
  int nd = t->ndim;
  rm[nd > 0 ? nd - 1 : 0] = 1;
  for (int i = nd - 2; i >= 0; i--) rm[i] = rm[i + 1] * t->shape[i + 1];
  uint64_t n = 1;
  for (int i = 0; i < nd; i++) n *= (uint64_t)t->shape[i];
  const unsigned char *base = (const unsigned char *)t->data + t->byte_offset;
  for (uint64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int i = 0; i < nd; i++) off += idx[i] * (t->strides ? t->strides[i] : rm[i]);
    memcpy(out + k * bytes, base + off * (int64_t)bytes, bytes);
    for (int i = nd - 1; i >= 0 && ++idx[i] == t->shape[i]; i--) idx[i] = 0;
  }
}

/* Whether buffer b reads back as `want` (nbytes). */
static int same_values(const hdal_buffer *b, const unsigned char *want, size_t nbytes) {
  unsigned char *got = malloc(nbytes ? nbytes : 1);
  hdal_error *e = hdal_buffer_copy_to_host(b, got, nbytes);
  int ok = !e && !memcmp(got, want, nbytes);
  if (e) fprintf(stderr, "fuzz_import: copy_to_host: %s\n", hdal_error_message(e));
  hdal_error_destroy(e);
  free(got);
  return ok;
}

/* A queue of the caller's own for streams onto OpenCL devices, through the
 * ICD loader the module loaded. */
static void make_cl_queue(void) {
  void *cl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cl) return;
  int (*get_platforms)(unsigned, void **, unsigned *) = (int (*)(unsigned, void **, unsigned *))dlsym(cl, "clGetPlatformIDs");
  int (*get_devices)(void *, uint64_t, unsigned, void **, unsigned *) =
      (int (*)(void *, uint64_t, unsigned, void **, unsigned *))dlsym(cl, "clGetDeviceIDs");
  void *(*create_context)(const intptr_t *, unsigned, void **, void *, void *, int *) =
      (void *(*)(const intptr_t *, unsigned, void **, void *, void *, int *))dlsym(cl, "clCreateContext");
  void *(*create_queue)(void *, void *, uint64_t, int *) =
      (void *(*)(void *, void *, uint64_t, int *))dlsym(cl, "clCreateCommandQueue");
  void *platform, *device, *context;
  int err;
  if (!get_platforms || !get_devices || !create_context || !create_queue || get_platforms(1, &platform, NULL) ||
      get_devices(platform, 0xFFFFFFFF /* CL_DEVICE_TYPE_ALL */, 1, &device, NULL) ||
      !(context = create_context(NULL, 1, &device, NULL, NULL, &err)))
    return;
  cl_queue = (intptr_t)create_queue(context, device, 0, &err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  for (size_t i = 0; i < ARENA; i++) arena[i] = (unsigned char)(i * 31 + 7);
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:1 pu:1", 1); /* two CPU devices */
  const char *modules = getenv("HDAL_FUZZ_MODULES");
  hdal_context_options o = {.struct_size = sizeof o, .backends = modules ? "cpu,opencl" : "cpu",
                            .backend_path = modules};
  hdal_error *e = hdal_context_create(&o, &ctx);
  if (e) {
    fprintf(stderr, "fuzz_import: %s\n", hdal_error_message(e));
    abort();
  }
  int ncpu = 0, nocl = 0;
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    hdal_device *d = hdal_context_device(ctx, i);
    if (hdal_device_runtime_class(d) != HDAL_RUNTIME_PJRT) continue;
    if (!strcmp(hdal_device_platform(d), "cpu") && ncpu < 2) targets[ncpu++] = d;
    else if (!strcmp(hdal_device_platform(d), "opencl") && nocl < 2) targets[2 + nocl++] = d;
  }
  if (nocl) make_cl_queue();
  fprintf(stderr, "fuzz_import: %d CPU and %d OpenCL devices, %s\n", ncpu, nocl,
          cl_queue ? "an OpenCL queue for streams" : "no OpenCL stream");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  uint8_t flags = u8(&in);
  int ndim = (int8_t)u8(&in) % 33; /* -32 .. 32 */
  DLDataType dt = {u8(&in), u8(&in), 1};
  uint8_t lanes = u8(&in);
  dt.lanes = lanes < 240 ? 1 : (uint16_t)(lanes - 240);
  DLDevice dev = {(DLDeviceType)(int8_t)u8(&in), (int8_t)u8(&in)};
  if (u8(&in) < 200) dev = (DLDevice){kDLCPU, 0};
  DLPackVersion ver = {u8(&in) < 250 ? 1 : 2, u8(&in)};
  uint64_t vflags = u8(&in) & 7;
  uint8_t where = u8(&in);
  uint16_t at = (uint16_t)(u8(&in) << 8 | u8(&in));
  uint64_t offset = u8(&in) < 250 ? u8(&in) : u64(&in);
  int64_t shape[33] = {0}, strides[33] = {0};
  for (int i = 0; i < ndim; i++) shape[i] = dim(&in);
  for (int i = 0; i < ndim; i++) strides[i] = stride(&in);
  /* Where the tensor goes, and what is done with the buffer after. */
  uint8_t place = u8(&in), out_opts = u8(&in);

  void *ptr = where < 200 ? (void *)(arena + at % ARENA) : where < 230 ? NULL : (void *)(uintptr_t)u64(&in);
  /* An OpenCL tensor's data is a cl_mem handle: any other pointer there is a
   * producer that lies about it, which no consumer can detect (the ICD loader
   * reads the object's dispatch table through it, as every OpenCL call does). */
  if (dev.device_type == kDLOpenCL) ptr = NULL;
  DLTensor t = {.data = ptr, .device = dev, .ndim = ndim, .dtype = dt, .shape = ndim > 0 ? shape : NULL,
                .strides = (flags & 16) ? NULL : strides, .byte_offset = offset};
  if (ndim < 0) t.shape = shape; /* jaxlib's check 5 comes before any read */
  DLManagedTensor legacy = {.dl_tensor = t, .deleter = del_legacy};
  DLManagedTensorVersioned versioned = {.version = ver, .flags = vflags, .dl_tensor = t, .deleter = del_versioned};
  int is_versioned = flags & 1;
  hdal_capsule *c;
  if (flags & 128) { /* any capsule name */
    char name[64];
    size_t n = in.n < sizeof name - 1 ? in.n : sizeof name - 1;
    memcpy(name, in.p, n);
    name[n] = 0;
    /* The pointer's type follows the name (a capsule that lies about it is the
     * producer's bug, which no consumer can detect). */
    if (!strcmp(name, "dltensor") || !strcmp(name, "used_dltensor")) is_versioned = 0;
    if (!strcmp(name, "dltensor_versioned") || !strcmp(name, "used_dltensor_versioned")) is_versioned = 1;
    c = hdal_capsule_new(name, is_versioned ? (void *)&versioned : (void *)&legacy);
  } else {
    c = is_versioned ? hdal_capsule_wrap_versioned(&versioned) : hdal_capsule_wrap(&legacy);
  }
  if (!c) return 0;
  const char *name0 = hdal_capsule_name(c);
  char before[80];
  snprintf(before, sizeof before, "%s", name0 ? name0 : "(null)");

  /* Copies stay small: a broadcast can ask for any size, and the fuzzer's memory is bounded. */
  uint64_t elems = 1;
  for (int i = 0; i < ndim; i++)
    if (shape[i] > 0 && __builtin_mul_overflow(elems, (uint64_t)shape[i], &elems)) elems = UINT64_MAX;
  int safe = inside_arena(&t, (unsigned)dt.bits * (dt.lanes ? dt.lanes : 1)) && dt.bits <= 128 &&
             !(is_versioned && (vflags & 4)) && elems <= (1u << 20);
  hdal_import_options io = {.struct_size = sizeof io, .copy = (hdal_copy_mode)((flags >> 2) % 3)};
  if (!safe) io.copy = HDAL_COPY_NEVER;
  hdal_device *target = (flags & 2) ? hdal_context_device(ctx, 0) : NULL;
  if (place & 3) target = targets[place & 3] ? targets[place & 3] : target;
  int on_opencl = target && !strcmp(hdal_device_platform(target), "opencl");
  if (place & 4) { /* a stream: any value orders nothing on the CPU; a real queue on OpenCL */
    io.has_stream = true;
    io.stream = on_opencl ? cl_queue : (intptr_t)0x5eed;
    if (on_opencl && !cl_queue) io.has_stream = false;
  }
  /* What the elements should read back as (whole-byte types, memory known). */
  unsigned bytes = dt.bits % 8 == 0 && dt.bits ? dt.bits / 8u : 0;
  unsigned char *want = NULL;
  size_t want_n = 0;
  if (safe && bytes && ndim >= 0 && dt.lanes == 1) {
    want_n = (size_t)elems * bytes;
    for (int i = 0; i < ndim; i++)
      if (shape[i] == 0) want_n = 0;
    want = malloc(want_n ? want_n : 1);
    if (want_n) reference_copy(&t, bytes, want);
  }
  deleted = 0;
  hdal_buffer *b = NULL;
  hdal_error *e = hdal_buffer_from_dlpack(ctx, c, target, &io, &b);
  const char *after = hdal_capsule_name(c);
  if (e) {
    int version_error = is_versioned && ver.major != 1 && !strcmp(before, "dltensor_versioned");
    if (b) broken(__LINE__);
    if (version_error) {
      if (deleted != 1 || strcmp(after, "used_dltensor_versioned")) broken(__LINE__);
    } else if (deleted != 0 || strcmp(after ? after : "(null)", before)) {
      broken(__LINE__); /* failure changed nothing */
    }
    hdal_error_destroy(e);
  } else {
    if (!b || strncmp(after, "used_", 5)) broken(__LINE__);
    size_t nbytes = 0;
    uint64_t n = 1;
    for (int i = 0; i < hdal_buffer_ndim(b); i++)
      if (__builtin_mul_overflow(n, (uint64_t)hdal_buffer_shape(b)[i], &n)) n = UINT64_MAX; /* a 0 follows */
    for (int i = 0; i < hdal_buffer_ndim(b); i++)
      if (hdal_buffer_shape(b)[i] == 0) n = 0;
    unsigned bits = hdal_buffer_dtype(b).bits;
    nbytes = n > (1u << 24) ? SIZE_MAX : bits >= 8 ? (size_t)n * bits / 8 : ((size_t)n * bits + 7) / 8;
    if (safe && nbytes <= 1 << 20) {
      void *out = malloc(nbytes ? nbytes : 1);
      hdal_error *ce = hdal_buffer_copy_to_host(b, out, nbytes);
      if (ce) broken(__LINE__);
      if (want && (nbytes != want_n || memcmp(out, want, nbytes))) broken(__LINE__); /* not the tensor's values */
      free(out);
    }
    /* A copy onto another device holds the same values. */
    hdal_device *to = targets[(out_opts >> 6) & 3];
    if (safe && to && nbytes <= 1 << 20) {
      hdal_buffer *moved = NULL;
      hdal_error *me = hdal_buffer_copy_to_device(b, to, &moved);
      if (me || hdal_buffer_device(moved) != to) broken(__LINE__);
      if (want && !same_values(moved, want, want_n)) broken(__LINE__);
      hdal_buffer_release(moved);
    }
    /* Export with any options; what comes back in holds the same values. */
    hdal_export_options eo = {.struct_size = sizeof eo, .max_version = {(flags & 32) ? 1 : 0, (uint32_t)(out_opts >> 5 & 1)},
                              .copy = (hdal_copy_mode)(out_opts % 3)};
    hdal_device *dl_to = targets[(out_opts >> 2) & 3];
    if ((out_opts & 16) && dl_to) {
      eo.has_dl_device = true;
      eo.dl_device = hdal_device_dlpack_device(dl_to);
    }
    if (!safe) { /* a copy would read the memory */
      eo.has_dl_device = false;
      if (eo.copy == HDAL_COPY_ALWAYS) eo.copy = HDAL_COPY_IF_NEEDED;
    }
    hdal_device *export_on = eo.has_dl_device ? dl_to : hdal_buffer_device(b);
    if (place & 8) { /* the consumer's stream, on the export's target: a queue for OpenCL, any value on the CPU */
      int cl = !strcmp(hdal_device_platform(export_on), "opencl");
      eo.has_stream = !cl || cl_queue;
      eo.stream = cl ? cl_queue : (intptr_t)0x5eed;
    }
    hdal_capsule *x = NULL;
    hdal_error *xe = hdal_buffer_to_dlpack(b, &eo, &x);
    if (!xe) {
      if (!x) broken(__LINE__);
      const DLTensor *xt = !strcmp(hdal_capsule_name(x), "dltensor")
                               ? &((DLManagedTensor *)hdal_capsule_pointer(x))->dl_tensor
                               : &((DLManagedTensorVersioned *)hdal_capsule_pointer(x))->dl_tensor;
      DLDevice xd = hdal_device_dlpack_device(export_on);
      if (xt->device.device_type != xd.device_type || xt->device.device_id != xd.device_id) broken(__LINE__);
      hdal_buffer *again = NULL;
      hdal_import_options never = {.struct_size = sizeof never, .copy = safe ? HDAL_COPY_IF_NEEDED : HDAL_COPY_NEVER};
      hdal_error *ae = hdal_buffer_from_dlpack(ctx, x, NULL, &never, &again);
      if (!ae && want && safe && !same_values(again, want, want_n)) broken(__LINE__);
      hdal_error_destroy(ae);
      hdal_buffer_release(again);
      hdal_capsule_destroy(x);
    }
    hdal_error_destroy(xe);
    hdal_buffer_release(b);
    if (deleted != 1) broken(__LINE__); /* exactly once, by now */
  }
  free(want);
  deleted = 0;
  hdal_capsule_destroy(c);
  /* An unconsumed standard capsule calls its deleter on destroy; nothing else does. */
  if (deleted != (!e ? 0 : !strcmp(before, "dltensor") || !strcmp(before, "dltensor_versioned") ? (int)(strncmp(after, "used_", 5) != 0) : 0))
    broken(__LINE__);
  return 0;
}
