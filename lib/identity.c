/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — one GPU, told by its identity (identity.h; docs/reference.md,
 * "Device attributes"). */
#include "config.h"
#include <strings.h>
#include "identity.h"

const char *hdal__device_identity(const hdal_device *d, const char *key) {
  const char *v = hdal_device_attribute_get(d, key);
  return v && *v ? v : NULL;
}

bool hdal__device_has_identity(const hdal_device *d) {
  return hdal__device_identity(d, HDAL_ATTRIBUTE_UUID) || hdal__device_identity(d, HDAL_ATTRIBUTE_PCI_BUS_ID);
}

bool hdal__same_identity(const char *a, const char *b) { return a && b && !strcasecmp(a, b); }

bool hdal__same_gpu(const hdal_device *a, const hdal_device *b) {
  return hdal__same_identity(hdal__device_identity(a, HDAL_ATTRIBUTE_UUID), hdal__device_identity(b, HDAL_ATTRIBUTE_UUID)) ||
         hdal__same_identity(hdal__device_identity(a, HDAL_ATTRIBUTE_PCI_BUS_ID),
                             hdal__device_identity(b, HDAL_ATTRIBUTE_PCI_BUS_ID));
}
