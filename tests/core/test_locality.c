/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal_device_locality (docs/reference.md, "Locality"): the CPUs and NUMA nodes nearest each device.
 *
 * The machine is a real one with PCI GPUs, topologies/24em64t-2n6c2t-pci.xml: hwloc's own test
 * topology tests/hwloc/xml/24em64t-2n6c2t-pci.xml, copied unchanged from hwloc 2.9.3
 * (github.com/open-mpi/hwloc, tag hwloc-2.9.3; BSD-3-Clause, hwloc's COPYING): two packages of
 * six cores with two threads, two NUMA nodes, NVIDIA GPUs at 0000:06:00.0 (node 0),
 * 0000:11:00.0 and 0000:14:00.0 (node 1), an AMD VGA at 0000:01:03.0 (node 0).  The fake CUDA
 * driver (tests/fakes/cuda/) is given the display controllers' bus ids, read from the XML here
 * with hwloc, and each GPU's locality is checked against what hwloc's own API says of the
 * same file: the cpuset and nodeset of the PCI object's first non-I/O ancestor, and the PCIe root
 * (Kubernetes' resource.kubernetes.io/pcieRoot, "pci<domain>:<bus>") of the host bridge above it:
 * the XML's bridge_pci="0000:[00-0f]" is pci0000:00, "0000:[10-1f]" pci0000:10. */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hwloc.h>
#include "testutil.h"

static char xml[4200];

static void use_xml(void) {
  snprintf(xml, sizeof xml, "%s/topologies/24em64t-2n6c2t-pci.xml", getenv("srcdir") ? getenv("srcdir") : ".");
  unsetenv("HWLOC_SYNTHETIC");
  setenv("HWLOC_XMLFILE", xml, 1);
}


/* The same XML, loaded by the test with hwloc itself, I/O objects kept. */
static hwloc_topology_t load_xml(void) {
  hwloc_topology_t t;
  ck_assert_int_eq(hwloc_topology_init(&t), 0);
  ck_assert_int_eq(hwloc_topology_set_xml(t, xml), 0);
  ck_assert_int_eq(hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL), 0);
  ck_assert_int_eq(hwloc_topology_load(t), 0);
  return t;
}

/* The display controllers' bus ids (PCI class 03xx), comma-separated; their count. */
static int display_bus_ids(hwloc_topology_t t, char *out, size_t len) {
  int n = 0;
  out[0] = '\0';
  for (hwloc_obj_t p = hwloc_get_next_pcidev(t, NULL); p; p = hwloc_get_next_pcidev(t, p)) {
    if (p->attr->pcidev.class_id >> 8 != 0x03) continue;
    char id[32];
    snprintf(id, sizeof id, "%s%04x:%02x:%02x.%01x", n ? "," : "", p->attr->pcidev.domain, p->attr->pcidev.bus,
             p->attr->pcidev.dev, p->attr->pcidev.func);
    strncat(out, id, len - strlen(out) - 1);
    n++;
  }
  return n;
}

/* The PCIe root of PCI object `pci` as the XML says it: the host bridge above it (hwloc's
 * HostBridge, upstream "host"), its downstream domain and first bus, "pci0000:10"; "" when none. */
static void xml_pcie_root(hwloc_obj_t pci, char *out, size_t size) {
  out[0] = '\0';
  for (hwloc_obj_t o = pci->parent; o; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      snprintf(out, size, "pci%04x:%02x", o->attr->bridge.downstream.pci.domain,
               o->attr->bridge.downstream.pci.secondary_bus);
      return;
    }
}

/* The locality equals this cpuset and nodeset. */
static void assert_locality(const hdal_locality *l, hwloc_const_bitmap_t cpuset, hwloc_const_bitmap_t nodeset) {
  char *want = NULL;
  ck_assert_int_ge(hwloc_bitmap_asprintf(&want, cpuset), 0);
  ck_assert_str_eq(l->cpuset, want);
  free(want);
  ck_assert_uint_eq(l->numa_node_count, (size_t)hwloc_bitmap_weight(nodeset));
  size_t k = 0;
  int i;
  hwloc_bitmap_foreach_begin(i, nodeset) {
    ck_assert_uint_eq(l->numa_nodes[k], (unsigned)i);
    k++;
  }
  hwloc_bitmap_foreach_end();
}

static const hdal_device *nth_of(hdal_context *ctx, const char *platform, int local) {
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    if (!strcmp(hdal_device_platform(d), platform) && hdal_device_local_hardware_id(d) == local) return d;
  }
  ck_abort_msg("no %s device %d", platform, local);
  return NULL;
}

/* Each GPU: the cpuset and NUMA nodes of its PCI object's CPU-side ancestor in the XML. */
START_TEST(gpus_placed_by_their_pci_objects) {
  use_xml();
  hwloc_topology_t t = load_xml();
  char ids[512];
  int n = display_bus_ids(t, ids, sizeof ids);
  ck_assert_int_eq(n, 4); /* three NVIDIA GPUs and the VGA */
  if (!test_use_fake_cuda(ids, n)) {
    hwloc_topology_destroy(t);
    return;
  }
  hdal_context *ctx = test_context_with("cpu,cuda");
  ck_assert_str_eq(test_backend_status(ctx, "cpu"), "ok: 2 devices");
  ck_assert_str_eq(test_backend_status(ctx, "cuda"), "ok: 4 devices");
  for (int g = 0; g < n; g++) {
    const hdal_device *d = nth_of(ctx, "cuda", g);
    const char *bus_id = hdal_device_attribute_get(d, "pci_bus_id");
    hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(t, bus_id);
    ck_assert_ptr_nonnull(pci);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, pci);
    hdal_locality l;
    ck_assert_ok(hdal_device_locality(d, &l));
    assert_locality(&l, anc->cpuset, anc->nodeset);
    char root[32];
    xml_pcie_root(pci, root, sizeof root);
    ck_assert_str_ne(root, "");
    ck_assert_pstr_eq(l.pcie_root, root);
    /* hdal's NUMA node (a logical index) is the node of that OS index. */
    ck_assert_uint_eq(l.numa_node_count, 1);
    ck_assert_int_eq(hdal_device_numa_node(d),
                     (int)hwloc_get_numanode_obj_by_os_index(t, l.numa_nodes[0])->logical_index);
    /* Worked out once: a second call gives the same storage. */
    hdal_locality again;
    ck_assert_ok(hdal_device_locality(d, &again));
    ck_assert_ptr_eq(again.cpuset, l.cpuset);
    ck_assert_ptr_eq(again.numa_nodes, l.numa_nodes);
    ck_assert_ptr_eq(again.pcie_root, l.pcie_root);
  }
  /* What the file says, written out once. */
  hdal_locality l;
  ck_assert_ok(hdal_device_locality(nth_of(ctx, "cuda", 0), &l));
  ck_assert_str_eq(hdal_device_attribute_get(nth_of(ctx, "cuda", 0), "pci_bus_id"), "0000:06:00.0");
  ck_assert_str_eq(l.cpuset, "0x00555555"); /* CPUs 0, 2, ..., 22 */
  ck_assert_uint_eq(l.numa_nodes[0], 0);
  ck_assert_pstr_eq(l.pcie_root, "pci0000:00"); /* under bridge_pci="0000:[00-0f]" */
  for (int g = 0; g < n; g++) /* 0000:11:00.0 and 0000:14:00.0 under "0000:[10-1f]" */
    if (!strcmp(hdal_device_attribute_get(nth_of(ctx, "cuda", g), "pci_bus_id"), "0000:14:00.0")) {
      ck_assert_ok(hdal_device_locality(nth_of(ctx, "cuda", g), &l));
      ck_assert_pstr_eq(l.pcie_root, "pci0000:10");
    }
  hdal_context_destroy(ctx);
  hwloc_topology_destroy(t);
}
END_TEST

/* A CPU device's locality is its own NUMA node: its cpuset attribute, its numa_os_index, and hwloc's node. */
START_TEST(cpu_devices_are_their_nodes) {
  use_xml();
  hwloc_topology_t t = load_xml();
  hdal_context *ctx = test_context_with("cpu");
  ck_assert_uint_eq(hdal_context_device_count(ctx), 2);
  for (int i = 0; i < 2; i++) {
    const hdal_device *d = nth_of(ctx, "cpu", i);
    hdal_locality l;
    ck_assert_ok(hdal_device_locality(d, &l));
    /* The attribute names the same CPUs in hwloc's list syntax. */
    hwloc_bitmap_t mine = hwloc_bitmap_alloc(), attr = hwloc_bitmap_alloc();
    ck_assert_int_eq(hwloc_bitmap_sscanf(mine, l.cpuset), 0);
    ck_assert_int_eq(hwloc_bitmap_list_sscanf(attr, hdal_device_attribute_get(d, HDAL_ATTRIBUTE_CPUSET)), 0);
    ck_assert(hwloc_bitmap_isequal(mine, attr));
    hwloc_bitmap_free(mine);
    hwloc_bitmap_free(attr);
    ck_assert_uint_eq(l.numa_node_count, 1);
    char os[16];
    snprintf(os, sizeof os, "%u", l.numa_nodes[0]);
    ck_assert_str_eq(os, hdal_device_attribute_get(d, "numa_os_index"));
    hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
    assert_locality(&l, node->cpuset, node->nodeset);
    ck_assert_ptr_null(l.pcie_root); /* a CPU device has none */
  }
  hdal_context_destroy(ctx);
  hwloc_topology_destroy(t);
}
END_TEST

/* A GPU whose bus id hwloc's topology lacks: NOT_FOUND naming it, the output zeroed; the others are placed. */
START_TEST(unknown_bus_id_not_found) {
  use_xml();
  if (!test_use_fake_cuda("0000:06:00.0,0000:5e:00.0", 2)) return;
  hdal_context *ctx = test_context_with("cpu,cuda");
  const hdal_device *d = nth_of(ctx, "cuda", 1);
  hdal_locality l = {.cpuset = "x", .numa_node_count = 7, .pcie_root = "x"};
  char want[512];
  snprintf(want, sizeof want,
           "hdal_device_locality: device %d (cuda, %s): hwloc's topology has no PCI object with bus id 0000:5e:00.0",
           hdal_device_id(d), hdal_device_kind(d));
  for (int twice = 0; twice < 2; twice++) { /* the answer is kept, the error made anew */
    ck_assert_error(hdal_device_locality(d, &l), HDAL_NOT_FOUND, want);
    ck_assert_ptr_null(l.cpuset);
    ck_assert_ptr_null(l.numa_nodes);
    ck_assert_uint_eq(l.numa_node_count, 0);
    ck_assert_ptr_null(l.pcie_root);
  }
  ck_assert_ok(hdal_device_locality(nth_of(ctx, "cuda", 0), &l));
  ck_assert_str_eq(l.cpuset, "0x00555555");
  hdal_context_destroy(ctx);
}
END_TEST

/* A synthetic topology has no PCI objects: GPUs are not placed, CPU devices are. */
START_TEST(synthetic_topology_places_no_gpu) {
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "pack:2 numa:1 core:2 pu:2", 1);
  if (!test_use_fake_cuda("0000:3b:00.0", 1)) return;
  hdal_context *ctx = test_context_with("cpu,cuda");
  const hdal_device *d = nth_of(ctx, "cuda", 0);
  hdal_locality l;
  char want[512];
  snprintf(want, sizeof want,
           "hdal_device_locality: device %d (cuda, %s): the topology has no PCI objects (a synthetic topology, or "
           "an XML file without I/O), so PCI 0000:3b:00.0 cannot be placed",
           hdal_device_id(d), hdal_device_kind(d));
  ck_assert_error(hdal_device_locality(d, &l), HDAL_NOT_FOUND, want);
  ck_assert_ok(hdal_device_locality(nth_of(ctx, "cpu", 1), &l));
  ck_assert_str_eq(l.cpuset, "0x000000f0"); /* CPUs 4-7 */
  ck_assert_uint_eq(l.numa_node_count, 1);
  ck_assert_uint_eq(l.numa_nodes[0], 1);
  hdal_context_destroy(ctx);
}
END_TEST

START_TEST(null_arguments) {
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:1 core:2 pu:1", 1);
  hdal_context *ctx = test_context_with("cpu");
  hdal_locality l = {.cpuset = "x"};
  ck_assert_error(hdal_device_locality(NULL, &l), HDAL_INVALID_ARGUMENT, "hdal_device_locality: device is NULL");
  ck_assert_ptr_null(l.cpuset);
  ck_assert_error(hdal_device_locality(hdal_context_device(ctx, 0), NULL), HDAL_INVALID_ARGUMENT,
                  "hdal_device_locality: out is NULL");
  hdal_context_destroy(ctx);
}
END_TEST


/* Another process's devices: a CPU device is placed by its attributes wherever it is; a GPU by this host's
 * topology when the process is on this host, and not at all on another host. */
START_TEST(other_processes) {
  use_xml();
  bool gpus = test_use_fake_cuda("0000:11:00.0", 1);
  test_hosts h;
  test_two_hosts(&h, gpus ? "cpu,cuda" : "cpu", 1, 2);
  hdal_context *a = h.ctx_a, *b = h.ctx_b;
  size_t n = hdal_context_device_count(a);
  ck_assert_ok(hdal_context_add_process(a, 1, h.blob, h.len)); /* a second process of node-a */
  ck_assert_ok(hdal_context_add_process(b, 0, h.blob, h.len)); /* node-a's process, seen from node-b */
  ck_assert_uint_eq(hdal_context_device_count(a), 2 * n);
  ck_assert_uint_eq(hdal_context_host_count(a), 1);
  ck_assert_uint_eq(hdal_context_host_count(b), 2);
  for (size_t i = 0; i < n; i++) {
    const hdal_device *own = hdal_context_device(a, i), *same_host = hdal_context_device(a, n + i);
    const hdal_device *far = hdal_context_device(b, i);
    ck_assert_int_eq(hdal_device_process_index(same_host), 1);
    ck_assert_int_eq(hdal_device_process_index(far), 0);
    ck_assert(!hdal_device_is_addressable(same_host) && !hdal_device_is_addressable(far));
    hdal_locality want, l;
    ck_assert_ok(hdal_device_locality(own, &want));
    ck_assert_ok(hdal_device_locality(same_host, &l));
    ck_assert_str_eq(l.cpuset, want.cpuset);
    ck_assert_uint_eq(l.numa_node_count, 1);
    ck_assert_uint_eq(l.numa_nodes[0], want.numa_nodes[0]);
    if (!strcmp(hdal_device_platform(far), "cpu")) {
      ck_assert_ok(hdal_device_locality(far, &l));
      ck_assert_str_eq(l.cpuset, want.cpuset);
      ck_assert_uint_eq(l.numa_nodes[0], want.numa_nodes[0]);
    } else {
      char msg[256];
      snprintf(msg, sizeof msg,
               "hdal_device_locality: device %d is of process 0, on another host than this process's: its locality "
               "is known on its own host only",
               hdal_device_id(far));
      l.cpuset = "x";
      ck_assert_error(hdal_device_locality(far, &l), HDAL_FAILED_PRECONDITION, msg);
      ck_assert_ptr_null(l.cpuset);
      ck_assert_str_eq(want.cpuset, "0x00aaaaaa"); /* CPUs 1, 3, ..., 23 */
    }
  }
  test_two_hosts_end(&h);
}
END_TEST

/* Threads asking at once for the first time get one answer. */
static void *ask(void *arg) {
  hdal_locality l;
  hdal_error *e = hdal_device_locality(arg, &l);
  if (e) {
    hdal_error_destroy(e);
    return NULL;
  }
  return (void *)l.cpuset;
}

START_TEST(threads_share_one_answer) {
  use_xml();
  if (!test_use_fake_cuda("0000:14:00.0", 1)) return;
  hdal_context *ctx = test_context_with("cpu,cuda");
  const hdal_device *d = nth_of(ctx, "cuda", 0);
  pthread_t th[8];
  void *got[8];
  for (int i = 0; i < 8; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, ask, (void *)d), 0);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(pthread_join(th[i], &got[i]), 0);
  ck_assert_ptr_nonnull(got[0]);
  for (int i = 1; i < 8; i++) ck_assert_ptr_eq(got[i], got[0]);
  ck_assert_str_eq(got[0], "0x00aaaaaa");
  hdal_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("locality");
  TCase *tc = tcase_create("locality");
  tcase_add_test(tc, gpus_placed_by_their_pci_objects);
  tcase_add_test(tc, cpu_devices_are_their_nodes);
  tcase_add_test(tc, unknown_bus_id_not_found);
  tcase_add_test(tc, synthetic_topology_places_no_gpu);
  tcase_add_test(tc, null_arguments);
  tcase_add_test(tc, other_processes);
  tcase_add_test(tc, threads_share_one_answer);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
