/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the words hdal prints for its enums and booleans: one table, which hdal-ls and the Python
 * package read rather than copy (docs/reference.md, "Contexts, backends and devices"). */
#include "config.h"
#include "internal.h"

HDAL_API const char *hdal_runtime_class_name(hdal_runtime_class c) {
  switch (c) {
  case HDAL_RUNTIME_PJRT: return "pjrt";
  case HDAL_RUNTIME_IFRT_NATIVE: return "ifrt-native";
  default: return NULL;
  }
}

HDAL_API const char *hdal_backend_state_name(hdal_backend_state_kind k) {
  switch (k) {
  case HDAL_BACKEND_OK: return "ok";
  case HDAL_BACKEND_DISABLED: return "disabled";
  case HDAL_BACKEND_UNAVAILABLE: return "unavailable";
  case HDAL_BACKEND_FAILED: return "failed";
  default: return NULL;
  }
}

/* The enumerator's own name: the messages of hdal_device_native_handle() name
 * kinds so, and the Python package takes them by it (less the prefix, lowercased). */
HDAL_API const char *hdal_native_handle_name(hdal_native_handle which) {
  switch (which) {
#define KIND(k) \
  case k: return #k;
    KIND(HDAL_NATIVE_OPENCL_PLATFORM)
    KIND(HDAL_NATIVE_OPENCL_DEVICE)
    KIND(HDAL_NATIVE_OPENCL_CONTEXT)
    KIND(HDAL_NATIVE_OPENCL_QUEUE)
    KIND(HDAL_NATIVE_CUDA_DEVICE)
    KIND(HDAL_NATIVE_CUDA_CONTEXT)
    KIND(HDAL_NATIVE_CUDA_STREAM)
    KIND(HDAL_NATIVE_HIP_DEVICE)
    KIND(HDAL_NATIVE_HIP_STREAM)
    KIND(HDAL_NATIVE_LEVEL_ZERO_DRIVER)
    KIND(HDAL_NATIVE_LEVEL_ZERO_DEVICE)
    KIND(HDAL_NATIVE_LEVEL_ZERO_CONTEXT)
#undef KIND
  }
  return NULL;
}

/* hdal-ls --json's words; --topology's matrix labels are the upper-case ones (docs/reference.md, "Links"). */
HDAL_API const char *hdal_link_kind_name(hdal_link_kind kind) {
  switch (kind) {
  case HDAL_LINK_SAME: return "same";
  case HDAL_LINK_FABRIC: return "fabric";
  case HDAL_LINK_PIX: return "pix";
  case HDAL_LINK_PXB: return "pxb";
  case HDAL_LINK_PHB: return "phb";
  case HDAL_LINK_NODE: return "node";
  case HDAL_LINK_SYS: return "sys";
  }
  return NULL;
}

HDAL_API const char *hdal_topology_source_name(hdal_topology_source source) {
  switch (source) {
  case HDAL_TOPOLOGY_THIS_SYSTEM: return "system";
  case HDAL_TOPOLOGY_XML_FILE: return "xml";
  case HDAL_TOPOLOGY_SYNTHETIC: return "synthetic";
  case HDAL_TOPOLOGY_OTHER: return "other";
  case HDAL_TOPOLOGY_UNAVAILABLE: return "unavailable";
  }
  return NULL;
}

/* "yes"/"no", as hdal-ls's ADDR column and OpenCL's attributes said before ABI 5 (docs/backend-abi.md). */
const char *hdal__bool_word(bool b) { return b ? "yes" : "no"; }
