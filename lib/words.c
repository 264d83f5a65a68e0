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

/* "yes"/"no", as hdal-ls's ADDR column and OpenCL's attributes said before ABI 5 (docs/backend-abi.md). */
const char *hdal__bool_word(bool b) { return b ? "yes" : "no"; }
