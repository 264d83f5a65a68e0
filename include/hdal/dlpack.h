/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — DLPack definitions.
 *
 * Includes the system's <dlpack/dlpack.h> and adds the DLPack 1.x definitions an
 * older header (Debian 12 ships 0.6) lacks.  Written from the DLPack specification;
 * nothing here is defined when the system header already has it.
 */
#ifndef HDAL_DLPACK_H
#define HDAL_DLPACK_H

#include <stdint.h>
#include <dlpack/dlpack.h>

#ifndef DLPACK_MAJOR_VERSION /* pre-1.0 header */

/* Device types added after 0.6. */
enum {
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
};

/* Data type codes added after 0.6 (kDLBool in 0.8, the narrow floats in 1.1). */
enum {
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17,
};

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define HDAL_DLPACK_COMPAT 1 /* the definitions above came from hdal */
#endif /* DLPACK_MAJOR_VERSION */

/* The DLPack version hdal produces for versioned tensors. */
#define HDAL_DLPACK_MAJOR 1
#define HDAL_DLPACK_MINOR 1

#endif /* HDAL_DLPACK_H */
