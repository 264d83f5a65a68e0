/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls --of xml: the machine's hwloc topology with every device attached
 * where it lives, as a hwloc Misc object, exported by hwloc itself, so that
 * lstopo draws the picture (lstopo-no-graphics -i machine.xml machine.svg).
 * CPU devices hang under their NUMA node, PCI devices under their PCI object,
 * the others (and devices of other processes) under the machine. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include <hwloc/plugins.h>
#include "hwloc_policy.h"
#include "ls.h"
#include "text.h"

/* Escaped (text.h) and without the characters XML and SVG give a meaning to:
 * hwloc escapes its XML, but lstopo 2.9 writes names into its SVG as they are. */
static char *label_escape(const char *s) {
  char *e = text_escape(s);
  if (!e) return NULL;
  size_t n = 0;
  for (const char *p = e; *p; p++) n += strchr("<>&\"'", *p) ? 4 : 1;
  char *out = malloc(n + 1), *q = out;
  if (out)
    for (const char *p = e; *p; p++) q += strchr("<>&\"'", *p) ? sprintf(q, "\\x%02x", (unsigned char)*p) : (*q = *p, 1);
  if (out) *q = '\0';
  free(e);
  return out;
}

static hwloc_obj_t place(hwloc_topology_t t, const hdal_device *d) {
  if (hdal_device_is_addressable(d)) {
    const char *pci = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
    hwloc_obj_t o = pci ? hwloc_get_pcidev_by_busidstring(t, pci) : NULL;
    if (o) return o;
    /* hwloc looks the node up; nothing here is sized by the number. */
    if (hdal_device_numa_node(d) >= 0 && (o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)hdal_device_numa_node(d))))
      return o;
  }
  return hwloc_get_root_obj(t);
}

/* Appends Misc object o to parent's Misc children.  hwloc_insert_object_by_parent appends by walking
 * the parent's list to its end: with thousands of devices under one parent, most of the time hdal-ls
 * took.  It inserts the first one (which also marks the topology for hwloc_topology_reconnect); each
 * later one gets what that function would set, its parent and next-sibling pointers, after the last,
 * which the parent's userdata (the application's field; this topology is hdal-ls's own) remembers. */
static void append_misc(hwloc_topology_t t, hwloc_obj_t parent, hwloc_obj_t o) {
  hwloc_obj_t last = parent->userdata;
  if (last) {
    last->next_sibling = o;
    o->parent = parent;
    o->next_sibling = NULL;
  } else hwloc_insert_object_by_parent(t, parent, o);
  parent->userdata = o;
}

/* Adds info `name` = value, escaped; false when out of memory. */
static bool add_info(hwloc_obj_t o, const char *name, const char *value) {
  char *e = label_escape(value);
  bool ok = e && hwloc_obj_add_info(o, name, e) == 0;
  free(e);
  return ok;
}

static bool attach(const ls_view *v, ls_hardware *hw, hwloc_topology_t t, size_t index) {
  const hdal_device *d = hdal_context_device(v->ctx, index);
  DLDevice dl = hdal_device_dlpack_device(d);
  char *platform = label_escape(hdal_device_platform(d)), *kind = label_escape(hdal_device_kind(d));
  char *label = NULL, dlpack[48], number[24];
  snprintf(dlpack, sizeof dlpack, "%s:%d", ls_dl_type_name(dl.device_type), dl.device_id);
  const char *cls = hdal_runtime_class_name(hdal_device_runtime_class(d));
  bool ok = platform && kind;
  if (ok) {
    /* What lstopo draws: "hdal 3: opencl Fake GPU (pjrt, kDLOpenCL:1)". */
    char proc[32] = "";
    if (!hdal_device_is_addressable(d)) snprintf(proc, sizeof proc, ", process %d", hdal_device_process_index(d));
    ok = asprintf(&label, "hdal %d: %s %s (%s, %s%s)", hdal_device_id(d), platform, kind, cls, dlpack, proc) >= 0;
    if (!ok) label = NULL;
  }
  /* What hwloc_topology_insert_misc_object does, less the reconnection of the whole tree that it
   * does for every object (hwloc's own FIXME): with thousands of devices that was seconds.
   * ls_print_xml reconnects once, after the last device, and checks the tree where hwloc's
   * HWLOC_DEBUG_CHECK asks, as that function does.  hwloc frees the name with the object. */
  hwloc_obj_t o = ok ? hwloc_alloc_setup_object(t, HWLOC_OBJ_MISC, HWLOC_UNKNOWN_INDEX) : NULL;
  if (o) append_misc(t, place(t, d), o);
  ok = o && (o->name = label) != NULL;
  if (ok) label = NULL;
  snprintf(number, sizeof number, "%d", hdal_device_id(d));
  ok = ok && add_info(o, "hdalDeviceId", number);
  ok = ok && add_info(o, "hdalPlatform", hdal_device_platform(d));
  ok = ok && add_info(o, "hdalKind", hdal_device_kind(d));
  ok = ok && add_info(o, "hdalRuntimeClass", cls);
  ok = ok && add_info(o, "hdalDLPackDevice", dlpack);
  snprintf(number, sizeof number, "%d", hdal_device_process_index(d));
  ok = ok && add_info(o, "hdalProcessIndex", number);
  char buf[16];
  const char *value, *type = ls_identity(d, &value, buf, sizeof buf);
  ok = ok && (!type || (add_info(o, "hdalIdentityType", type) && add_info(o, "hdalIdentity", value)));
  size_t same[LS_SAME_HARDWARE_SHOWN], shown, count = ls_hardware_same(hw, index, same, LS_SAME_HARDWARE_SHOWN, &shown);
  for (size_t i = 0; ok && i < shown; i++) {
    snprintf(number, sizeof number, "%d", hdal_device_id(hdal_context_device(v->ctx, same[i])));
    ok = add_info(o, "hdalSameHardwareAs", number);
  }
  snprintf(number, sizeof number, "%zu", count);
  ok = ok && (!count || add_info(o, "hdalSameHardwareCount", number));
  free(platform);
  free(kind);
  free(label);
  return ok;
}

int ls_print_xml(const ls_view *v) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) {
    fprintf(stderr, "%s: hwloc_topology_init failed\n", v->program);
    return -1;
  }
  /* lstopo's objects, so that lstopo -i draws what lstopo would have drawn. */
  hdal__topology_apply(t, HDAL__TOPOLOGY_LSTOPO);
  int rc = -1;
  ls_hardware *hw = NULL;
  if (hwloc_topology_load(t) < 0) {
    fprintf(stderr, "%s: hwloc could not load the topology (check HWLOC_XMLFILE / HWLOC_SYNTHETIC)\n", v->program);
    goto out;
  }
  if (!(hw = ls_hardware_new(v->ctx))) {
    fprintf(stderr, "%s: out of memory\n", v->program);
    goto out;
  }
  for (size_t i = 0; i < hdal_context_device_count(v->ctx); i++) {
    const hdal_device *d = hdal_context_device(v->ctx, i);
    if (ls_selected(v, d) && !attach(v, hw, t, i)) {
      fprintf(stderr, "%s: hwloc could not attach device %d to the topology\n", v->program, hdal_device_id(d));
      goto out;
    }
  }
  if (hwloc_topology_reconnect(t, 0) < 0) {
    fprintf(stderr, "%s: hwloc could not attach the devices to the topology\n", v->program);
    goto out;
  }
  if (getenv("HWLOC_DEBUG_CHECK")) hwloc_topology_check(t); /* aborts where the tree is not sound */
  char *buf;
  int len;
  if (hwloc_topology_export_xmlbuffer(t, &buf, &len, 0) < 0) {
    fprintf(stderr, "%s: hwloc could not export the topology as XML\n", v->program);
    goto out;
  }
  fwrite(buf, 1, len > 0 ? (size_t)len - 1 : 0, stdout); /* len counts the final NUL */
  hwloc_free_xmlbuffer(t, buf);
  rc = 0;
out:
  ls_hardware_free(hw);
  hwloc_topology_destroy(t);
  return rc;
}
