/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_device_bind and HDAL_CPU_BINDING (docs/reference.md, "Binding"), on this machine: binding needs
 * the CPUs the test runs on, checked with hwloc_get_cpubind against the device's locality within what
 * the process may use (hwloc's allowed cpuset of this machine, within the CPUs the process ran on when
 * hdal first bound it: each test is a process of its own, Check's fork, whose first binding is the
 * test's).
 *
 * Devices on chosen CPUs: the test module mod_typedls.so (tests/modules/typed_ls.c), linked as
 * hdal_typedls.so into a directory of the test's, gives device 0 on CPU 1 and device 1 on CPUs
 * 64-127 (cpuset attributes).  Another machine's topology (HWLOC_XMLFILE: topologies/
 * 24em64t-2n6c2t-pci.xml; HWLOC_SYNTHETIC) is refused; the fake CUDA driver's GPU at a PCI bus id
 * of this machine (the first PCI device hwloc finds here) is bound for real by HDAL_CPU_BINDING. */
#include "testutil.h"
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hwloc.h>

static char dir[] = "/tmp/hdal-binding-XXXXXX";

static void setup(void) {
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_FSROOT");
  unsetenv("HWLOC_THISSYSTEM");
  unsetenv("HDAL_CPU_BINDING");
  unsetenv("HDAL_GPU_BINDING");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char from[4096], to[4200];
  snprintf(from, sizeof from, "%s/mod_typedls.so", getenv("HDAL_TEST_MODULES"));
  snprintf(to, sizeof to, "%s/hdal_typedls.so", dir);
  ck_assert_msg(symlink(from, to) == 0, "symlink %s", to);
}

static void teardown(void) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static hdal_context *context(const char *backends) {
  char path[4200];
  snprintf(path, sizeof path, "%s:%s", dir, getenv("HDAL_BACKEND_PATH") ? getenv("HDAL_BACKEND_PATH") : "");
  hdal_context_options o = {.struct_size = sizeof o, .backends = backends, .backend_path = path};
  hdal_context *ctx = NULL;
  ck_assert_ok(hdal_context_create(&o, &ctx));
  return ctx;
}

static const hdal_device *nth_of(hdal_context *ctx, const char *platform, int local) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_local_hardware_id(d) == local) return d;
  }
  ck_abort_msg("no %s device %d", platform, local);
  return NULL;
}

/* This machine, as the test reads it. */
static hwloc_topology_t machine(void) {
  hwloc_topology_t t;
  ck_assert_int_eq(hwloc_topology_init(&t), 0);
  ck_assert_int_eq(hwloc_topology_load(t), 0);
  ck_assert(hwloc_topology_is_thissystem(t));
  return t;
}

/* What the process may use before its first binding: hwloc's allowed cpuset within its CPUs. */
static hwloc_bitmap_t may_use(hwloc_topology_t t) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_cpubind(t, set, HWLOC_CPUBIND_PROCESS), 0);
  hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(t));
  return set;
}

/* A device's CPUs within `may`. */
static hwloc_bitmap_t expected(const hdal_device *d, hwloc_const_bitmap_t may) {
  hdal_locality l;
  ck_assert_ok(hdal_device_locality(d, &l));
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_bitmap_sscanf(set, l.cpuset), 0);
  hwloc_bitmap_and(set, set, may);
  return set;
}

static void assert_bound(hwloc_topology_t t, int how, hwloc_const_bitmap_t want) {
  hwloc_bitmap_t got = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_cpubind(t, got, how), 0);
  char g[256], w[256];
  hwloc_bitmap_snprintf(g, sizeof g, got);
  hwloc_bitmap_snprintf(w, sizeof w, want);
  ck_assert_msg(hwloc_bitmap_isequal(got, want), "bound to %s, expected %s", g, w);
  hwloc_bitmap_free(got);
}

/* A thread that waits until told, so that a binding of the calling thread is seen to leave it alone. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool done;
static void *waiter(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!done) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}
static void waiter_end(pthread_t th) {
  pthread_mutex_lock(&lock);
  done = true;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
}

static void assert_thread_bound(hwloc_topology_t t, pthread_t th, hwloc_const_bitmap_t want) {
  hwloc_bitmap_t got = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_thread_cpubind(t, th, got, 0), 0);
  ck_assert(hwloc_bitmap_isequal(got, want));
  hwloc_bitmap_free(got);
}

/* The calling thread on its device's CPUs (the CPU device of node 0, then typedls' device on CPU 1 where
 * the process may use it), another thread as it was; a thread bound near one device is bound near
 * another after it. */
START_TEST(thread_bound) {
  hwloc_topology_t t = machine();
  hwloc_bitmap_t may = may_use(t);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, waiter, NULL), 0);
  hwloc_bitmap_t other = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_thread_cpubind(t, th, other, 0), 0);
  hdal_context *ctx = context("cpu,typedls");
  const hdal_device *cpu = nth_of(ctx, "cpu", 0), *on1 = nth_of(ctx, "typedls", 0);
  hwloc_bitmap_t want = expected(cpu, may);
  ck_assert_ok(hdal_device_bind(cpu, HDAL_BIND_THREAD));
  assert_bound(t, HWLOC_CPUBIND_THREAD, want);
  if (hwloc_bitmap_isset(may, 1)) {
    hwloc_bitmap_t one = expected(on1, may);
    ck_assert_ok(hdal_device_bind(on1, 0));
    assert_bound(t, HWLOC_CPUBIND_THREAD, one);
    hwloc_bitmap_free(one);
    ck_assert_ok(hdal_device_bind(cpu, 0)); /* back to node 0's CPUs: what the process may use stays */
    assert_bound(t, HWLOC_CPUBIND_THREAD, want);
  } else {
    fprintf(stderr, "CPU 1 is not this process's: binding near a device on CPU 1 is refused instead\n");
  }
  assert_thread_bound(t, th, other);
  waiter_end(th);
  hdal_context_destroy(ctx);
  hwloc_bitmap_free(want);
  hwloc_bitmap_free(other);
  hwloc_bitmap_free(may);
  hwloc_topology_destroy(t);
}
END_TEST

/* HDAL_BIND_PROCESS: every thread, those running already included. */
START_TEST(process_bound) {
  hwloc_topology_t t = machine();
  hwloc_bitmap_t may = may_use(t);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, waiter, NULL), 0);
  hdal_context *ctx = context("cpu,typedls");
  /* CPU 1 where the process may use it, else the CPU device's node. */
  const hdal_device *d = hwloc_bitmap_isset(may, 1) ? nth_of(ctx, "typedls", 0) : nth_of(ctx, "cpu", 0);
  hwloc_bitmap_t want = expected(d, may);
  ck_assert_ok(hdal_device_bind(d, HDAL_BIND_PROCESS | HDAL_BIND_NO_MEMORY));
  assert_bound(t, HWLOC_CPUBIND_PROCESS, want);
  assert_bound(t, HWLOC_CPUBIND_THREAD, want);
  assert_thread_bound(t, th, want);
  waiter_end(th);
  hdal_context_destroy(ctx);
  hwloc_bitmap_free(want);
  hwloc_bitmap_free(may);
  hwloc_topology_destroy(t);
}
END_TEST

/* The memory policy: left as it was with HDAL_BIND_NO_MEMORY; bound to the node without it, unless the
 * node is every node the process may use (then left as it is: memory comes from there anyway). */
START_TEST(memory_policy) {
  hwloc_topology_t t = machine();
  hdal_context *ctx = context("cpu");
  const hdal_device *d = nth_of(ctx, "cpu", 0);
  const int flags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;
  hwloc_bitmap_t before = hwloc_bitmap_alloc(), after = hwloc_bitmap_alloc();
  hwloc_membind_policy_t p0, p1;
  if (hwloc_get_membind(t, before, &p0, flags) < 0) {
    fprintf(stderr, "hwloc cannot read this thread's memory policy here: the policy is not checked\n");
    ck_assert_ok(hdal_device_bind(d, HDAL_BIND_NO_MEMORY));
  } else {
    ck_assert_ok(hdal_device_bind(d, HDAL_BIND_NO_MEMORY));
    ck_assert_int_eq(hwloc_get_membind(t, after, &p1, flags), 0);
    ck_assert_int_eq(p1, p0);
    ck_assert(hwloc_bitmap_isequal(after, before));
    hdal_error *e = hdal_device_bind(d, HDAL_BIND_THREAD);
    ck_assert_int_eq(hwloc_get_membind(t, after, &p1, flags), 0);
    hdal_locality l;
    ck_assert_ok(hdal_device_locality(d, &l));
    if (hwloc_bitmap_weight(hwloc_topology_get_allowed_nodeset(t)) == 1) {
      ck_assert_ok(e);
      ck_assert_int_eq(p1, p0); /* the only node: left as it was */
      ck_assert(hwloc_bitmap_isequal(after, before));
    } else if (!e) {
      ck_assert_int_eq(p1, HWLOC_MEMBIND_BIND);
      ck_assert_int_eq(hwloc_bitmap_weight(after), 1);
      ck_assert(hwloc_bitmap_isset(after, l.numa_nodes[0]));
    } else { /* refused here (a container's seccomp): nothing changed */
      ck_assert_int_eq(hdal_error_code(e), HDAL_UNAVAILABLE);
      hdal_error_destroy(e);
      ck_assert_int_eq(p1, p0);
    }
  }
  hwloc_bitmap_free(before);
  hwloc_bitmap_free(after);
  hdal_context_destroy(ctx);
  hwloc_topology_destroy(t);
}
END_TEST

START_TEST(bad_arguments) {
  hdal_context *ctx = context("cpu");
  const hdal_device *d = nth_of(ctx, "cpu", 0);
  ck_assert_error(hdal_device_bind(NULL, 0), HDAL_INVALID_ARGUMENT, "hdal_device_bind: device is NULL");
  ck_assert_error(hdal_device_bind(d, 4), HDAL_INVALID_ARGUMENT,
                  "hdal_device_bind: unknown flags 0x4 (known: HDAL_BIND_PROCESS, HDAL_BIND_NO_MEMORY)");
  ck_assert_error(hdal_device_bind(d, HDAL_BIND_PROCESS | 0x80000000u), HDAL_INVALID_ARGUMENT,
                  "hdal_device_bind: unknown flags 0x80000000 (known: HDAL_BIND_PROCESS, HDAL_BIND_NO_MEMORY)");
  hdal_context_destroy(ctx);
}
END_TEST

/* A refusal leaves the binding as it was. */
static void assert_refused(hwloc_topology_t t, const hdal_device *d, unsigned flags, hdal_code code, const char *msg) {
  hwloc_bitmap_t before = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_cpubind(t, before, HWLOC_CPUBIND_THREAD), 0);
  ck_assert_error(hdal_device_bind(d, flags), code, msg);
  assert_bound(t, HWLOC_CPUBIND_THREAD, before);
  hwloc_bitmap_free(before);
}

/* A device whose CPUs are all outside what the process may use: refused naming both sets. */
START_TEST(outside_allowed_refused) {
  hwloc_topology_t t = machine();
  hwloc_bitmap_t may = may_use(t), far = hwloc_bitmap_alloc();
  hdal_context *ctx = context("cpu,typedls");
  const hdal_device *d = nth_of(ctx, "typedls", 1);
  hwloc_bitmap_set_range(far, 64, 127);
  if (hwloc_bitmap_intersects(far, may)) {
    fprintf(stderr, "this process may use CPUs of 64-127: the device on them is not outside\n");
  } else {
    char msg[1024], m[512];
    hwloc_bitmap_snprintf(m, sizeof m, may);
    snprintf(msg, sizeof msg,
             "hdal_device_bind: device %d (typedls, typed elsewhere): its CPUs 0xffffffff,0xffffffff,,0x0 are all "
             "outside the CPUs this process may use %s",
             hdal_device_id(d), m);
    assert_refused(t, d, 0, HDAL_PERMISSION_DENIED, msg);
    assert_refused(t, d, HDAL_BIND_PROCESS | HDAL_BIND_NO_MEMORY, HDAL_PERMISSION_DENIED, msg);
  }
  hdal_context_destroy(ctx);
  hwloc_bitmap_free(far);
  hwloc_bitmap_free(may);
  hwloc_topology_destroy(t);
}
END_TEST

/* The process's affinity counts as it was at hdal's first binding: narrowed to CPU 0 by its launcher
 * (sched_setaffinity here), the device on CPU 1 is refused. */
START_TEST(outside_affinity_refused) {
  hwloc_topology_t t = machine();
  hdal_context *ctx = context("cpu,typedls");
  const hdal_device *d = nth_of(ctx, "typedls", 0);
  cpu_set_t only0;
  CPU_ZERO(&only0);
  CPU_SET(0, &only0);
  if (sched_setaffinity(0, sizeof only0, &only0) != 0) {
    fprintf(stderr, "CPU 0 is not this process's: nothing checked\n");
  } else {
    char msg[512];
    snprintf(msg, sizeof msg,
             "hdal_device_bind: device %d (typedls, typed on CPU 1): its CPUs 0x00000002 are all outside the CPUs "
             "this process may use 0x00000001",
             hdal_device_id(d));
    assert_refused(t, d, HDAL_BIND_THREAD, HDAL_PERMISSION_DENIED, msg);
    /* The CPU device's node meets CPU 0: bound there. */
    hwloc_bitmap_t zero = hwloc_bitmap_alloc();
    hwloc_bitmap_only(zero, 0);
    ck_assert_ok(hdal_device_bind(nth_of(ctx, "cpu", 0), HDAL_BIND_THREAD));
    assert_bound(t, HWLOC_CPUBIND_THREAD, zero);
    hwloc_bitmap_free(zero);
  }
  hdal_context_destroy(ctx);
  hwloc_topology_destroy(t);
}
END_TEST

static char xml[4200];

static void use_xml(void) {
  snprintf(xml, sizeof xml, "%s/topologies/24em64t-2n6c2t-pci.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  setenv("HWLOC_XMLFILE", xml, 1);
}


#define ELSEWHERE                                                                                             \
  ": hwloc's topology is not this machine's (%s): its CPUs are another machine's, and hwloc binds on this " \
  "machine only (HWLOC_THISSYSTEM=1 says the topology is this machine's)"

/* Another machine's topology: its CPUs are not these; refused, naming the input. */
START_TEST(another_machine_refused) {
  hwloc_topology_t t = machine();
  use_xml();
  bool gpus = test_use_fake_cuda("0000:06:00.0", 1);
  hdal_context *ctx = context(gpus ? "cpu,cuda" : "cpu");
  char input[4300], msg[5000];
  snprintf(input, sizeof input, "HWLOC_XMLFILE=%.256s%s", xml, strlen(xml) > 256 ? "..." : "");
  const hdal_device *d = nth_of(ctx, "cpu", 1);
  snprintf(msg, sizeof msg, "hdal_device_bind: device %d (cpu, %s)" ELSEWHERE, hdal_device_id(d), hdal_device_kind(d),
           input);
  assert_refused(t, d, 0, HDAL_FAILED_PRECONDITION, msg);
  if (gpus) {
    d = nth_of(ctx, "cuda", 0);
    snprintf(msg, sizeof msg, "hdal_device_bind: device %d (cuda, %s)" ELSEWHERE, hdal_device_id(d),
             hdal_device_kind(d), input);
    assert_refused(t, d, HDAL_BIND_PROCESS, HDAL_FAILED_PRECONDITION, msg);
  }
  hdal_context_destroy(ctx);
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "pack:2 numa:1 core:2 pu:1", 1);
  ctx = context("cpu");
  d = nth_of(ctx, "cpu", 0);
  snprintf(msg, sizeof msg, "hdal_device_bind: device %d (cpu, %s)" ELSEWHERE, hdal_device_id(d), hdal_device_kind(d),
           "HWLOC_SYNTHETIC=pack:2 numa:1 core:2 pu:1");
  assert_refused(t, d, 0, HDAL_FAILED_PRECONDITION, msg);
  hdal_context_destroy(ctx);
  hwloc_topology_destroy(t);
}
END_TEST

/* A device nothing places: hdal_device_locality's reason, in hdal_device_bind's words. */
START_TEST(not_placed) {
  hdal_context *ctx = context("cpu,ifrttest");
  const hdal_device *d = nth_of(ctx, "ifrttest", 0);
  char msg[512];
  snprintf(msg, sizeof msg,
           "hdal_device_bind: device %d (ifrttest, ifrt-test-device-0): neither a pci_bus_id nor a cpuset attribute "
           "places it in the machine",
           hdal_device_id(d));
  ck_assert_error(hdal_device_bind(d, 0), HDAL_NOT_FOUND, msg);
  hdal_context_destroy(ctx);
}
END_TEST

/* A device of another host: its CPUs are that host's.  One of this host's other process: bound here. */
START_TEST(other_hosts_refused) {
  test_hosts h;
  test_two_hosts(&h, "cpu", 1, 2);
  ck_assert_ok(hdal_context_add_process(h.ctx_a, 1, h.blob, h.len));
  ck_assert_ok(hdal_context_add_process(h.ctx_b, 0, h.blob, h.len));
  const hdal_device *far = hdal_context_device(h.ctx_b, 0);
  ck_assert_int_eq(hdal_device_process_index(far), 0);
  char msg[512];
  snprintf(msg, sizeof msg,
           "hdal_device_bind: device %d is of process 0, on another host than this process's: its CPUs are not this "
           "process's to run on",
           hdal_device_id(far));
  ck_assert_error(hdal_device_bind(far, 0), HDAL_FAILED_PRECONDITION, msg);
  /* Process 1 of node-a is on ctx_a's host: its CPU device is this machine's node. */
  const hdal_device *near = hdal_context_device(h.ctx_a, hdal_context_device_count(h.ctx_a) - 1);
  ck_assert_int_eq(hdal_device_process_index(near), 1);
  ck_assert_ok(hdal_device_bind(near, HDAL_BIND_NO_MEMORY));
  test_two_hosts_end(&h);
}
END_TEST

/* HDAL_CPU_BINDING: a wrong word refuses the context; "none" and "near" without a GPU bind nothing. */
START_TEST(variable_words) {
  hwloc_topology_t t = machine();
  hwloc_bitmap_t before = hwloc_bitmap_alloc();
  ck_assert_int_eq(hwloc_get_cpubind(t, before, HWLOC_CPUBIND_PROCESS), 0);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu"};
  hdal_context *ctx = (hdal_context *)&o;
  setenv("HDAL_CPU_BINDING", "socket", 1);
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_CPU_BINDING: unknown CPU binding 'socket'; known: none, near");
  ck_assert_ptr_null(ctx);
  setenv("HDAL_CPU_BINDING", "Near", 1);
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_INVALID_ARGUMENT,
                  "HDAL_CPU_BINDING: unknown CPU binding 'Near'; known: none, near");
  for (int i = 0; i < 3; i++) {
    setenv("HDAL_CPU_BINDING", i == 0 ? "none" : i == 1 ? "" : "near", 1);
    ctx = context("cpu"); /* no GPU: nothing to be near */
    assert_bound(t, HWLOC_CPUBIND_PROCESS, before);
    hdal_context_destroy(ctx);
  }
  hwloc_bitmap_free(before);
  hwloc_topology_destroy(t);
}
END_TEST

/* HDAL_CPU_BINDING=near with HDAL_GPU_BINDING=local-rank, two fake GPUs: local rank 0 of 2 keeps the one
 * at this machine's first PCI device (the first in bus id order) and is bound to that device's CPUs; local
 * rank 1 keeps one at a bus id this machine lacks, and its context is refused naming why. */
START_TEST(variable_binds_near_gpu) {
  hwloc_topology_t io;
  ck_assert_int_eq(hwloc_topology_init(&io), 0);
  hwloc_topology_set_io_types_filter(io, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  /* hwloc's "pci" component leaks libpciaccess's strings (LeakSanitizer says so); linux reads the same PCI
   * devices from sysfs, as hdal's own topologies do (docs/hwloc.md). */
  hwloc_topology_set_components(io, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  ck_assert_int_eq(hwloc_topology_load(io), 0);
  hwloc_obj_t pci = hwloc_get_next_pcidev(io, NULL);
  if (!pci) {
    fprintf(stderr, "hwloc finds no PCI device on this machine: nothing checked\n");
    hwloc_topology_destroy(io);
    return;
  }
  char bus[32];
  snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
           pci->attr->pcidev.dev, pci->attr->pcidev.func);
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(io, pci);
  hwloc_bitmap_t may = may_use(io), want = hwloc_bitmap_alloc();
  hwloc_bitmap_and(want, anc->cpuset, may);
  char ids[80];
  snprintf(ids, sizeof ids, "%s,0000:ff:1f.0", bus); /* GPU 0 here (local rank 0's), GPU 1 nowhere */
  if (!test_use_fake_cuda(ids, 2)) {
    hwloc_topology_destroy(io);
    return;
  }
  setenv("HDAL_GPU_BINDING", "local-rank", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  setenv("HDAL_CPU_BINDING", "near", 1);
  hdal_context *ctx = context("cpu,cuda");
  ck_assert_str_eq(hdal_device_attribute_get(nth_of(ctx, "cuda", 0), "pci_bus_id"), bus);
  assert_bound(io, HWLOC_CPUBIND_PROCESS, want);
  hdal_context_destroy(ctx);
  /* Local rank 1's GPU is at a bus id this machine lacks: the context is refused, naming why. */
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  unsetenv("HDAL_CPU_BINDING");
  ctx = context("cpu,cuda");
  const hdal_device *g = nth_of(ctx, "cuda", 1);
  char msg[512];
  snprintf(msg, sizeof msg,
           "HDAL_CPU_BINDING=near: device %d (cuda, %s): hwloc's topology has no PCI object with bus id 0000:ff:1f.0",
           hdal_device_id(g), hdal_device_kind(g));
  hdal_context_destroy(ctx);
  setenv("HDAL_CPU_BINDING", "near", 1);
  hdal_context_options o = {.struct_size = sizeof o, .backends = "cpu,cuda"};
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_NOT_FOUND, msg);
  /* Another machine's topology: refused too. */
  use_xml();
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("FAKECUDA_PCI_BUS_IDS", "0000:06:00.0,0000:11:00.0", 1);
  unsetenv("HDAL_CPU_BINDING");
  ctx = context("cpu,cuda");
  g = nth_of(ctx, "cuda", 0);
  char input[4300], msg2[5000];
  snprintf(input, sizeof input, "HWLOC_XMLFILE=%.256s%s", xml, strlen(xml) > 256 ? "..." : "");
  snprintf(msg2, sizeof msg2, "HDAL_CPU_BINDING=near: device %d (cuda, %s)" ELSEWHERE, hdal_device_id(g),
           hdal_device_kind(g), input);
  hdal_context_destroy(ctx);
  setenv("HDAL_CPU_BINDING", "near", 1);
  ck_assert_error(hdal_context_create(&o, &ctx), HDAL_FAILED_PRECONDITION, msg2);
  hwloc_bitmap_free(may);
  hwloc_bitmap_free(want);
  hwloc_topology_destroy(io);
}
END_TEST

int main(void) {
  Suite *s = suite_create("binding");
  TCase *tc = tcase_create("binding");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, thread_bound);
  tcase_add_test(tc, process_bound);
  tcase_add_test(tc, memory_policy);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, outside_allowed_refused);
  tcase_add_test(tc, outside_affinity_refused);
  tcase_add_test(tc, another_machine_refused);
  tcase_add_test(tc, not_placed);
  tcase_add_test(tc, other_hosts_refused);
  tcase_add_test(tc, variable_words);
  tcase_add_test(tc, variable_binds_near_gpu);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
