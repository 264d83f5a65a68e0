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

/**
 * @defgroup hdal_dlpack DLPack additions
 * @brief The DLPack 1.x definitions that an older <dlpack/dlpack.h> lacks.
 *
 * <hdal.h> includes the system's <dlpack/dlpack.h> (Debian 12 ships DLPack
 * 0.6) and, when that header predates DLPack 1.0 (no @c DLPACK_MAJOR_VERSION),
 * adds what hdal's API uses of 1.x: the versioned managed tensor, its flags,
 * the device and data type codes added since.  They are written from the
 * DLPack specification with its names and values, so code written against a
 * DLPack 1.x header compiles unchanged; with a 1.x header none of them is
 * defined by hdal (::HDAL_DLPACK_COMPAT tells which).  Ownership of tensors
 * passed through hdal: docs/dlpack.md.
 * @{
 */

#ifndef DLPACK_MAJOR_VERSION /* pre-1.0 header */

/** Device types added after DLPack 0.6 (values of @c DLDeviceType). */
enum {
  kDLOneAPI = 14,  /**< Unified shared memory of oneAPI (non-partitioned). */
  kDLWebGPU = 15,  /**< WebGPU. */
  kDLHexagon = 16, /**< Qualcomm Hexagon DSP. */
  kDLMAIA = 17,    /**< Microsoft MAIA. */
};

/** Data type codes added after DLPack 0.6 (values of @c DLDataTypeCode): kDLBool in 0.8, the narrow floats in 1.1. */
enum {
  kDLBool = 6, /**< Boolean, 8 bits. */
  kDLFloat8_e3m4 = 7, /**< 8-bit float, 3 exponent bits, 4 mantissa bits. */
  kDLFloat8_e4m3 = 8, /**< 8-bit float e4m3. */
  kDLFloat8_e4m3b11fnuz = 9, /**< 8-bit float e4m3, bias 11, finite, unsigned zero. */
  kDLFloat8_e4m3fn = 10, /**< 8-bit float e4m3, finite. */
  kDLFloat8_e4m3fnuz = 11, /**< 8-bit float e4m3, finite, unsigned zero. */
  kDLFloat8_e5m2 = 12, /**< 8-bit float e5m2. */
  kDLFloat8_e5m2fnuz = 13, /**< 8-bit float e5m2, finite, unsigned zero. */
  kDLFloat8_e8m0fnu = 14, /**< 8-bit float e8m0 (a scale), finite, unsigned. */
  kDLFloat6_e2m3fn = 15, /**< 6-bit float e2m3, finite. */
  kDLFloat6_e3m2fn = 16, /**< 6-bit float e3m2, finite. */
  kDLFloat4_e2m1fn = 17, /**< 4-bit float e2m1, finite. */
};

/** A DLPack ABI version. */
typedef struct {
  uint32_t major; /**< Incompatible ABI changes. */
  uint32_t minor; /**< Compatible additions. */
} DLPackVersion;

/** The tensor is read-only: the consumer must not write to it. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/** The producer copied the data for this tensor (it aliases nothing else). */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
/** Sub-byte elements are each padded to a byte. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/**
 * A DLPack 1.x managed tensor: a tensor, its version and flags, and the
 * deleter that its owner calls exactly once when done with it.
 */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; /**< The DLPack version of this struct; major 1. */
  void *manager_ctx;     /**< The producer's context, for its deleter. */
  /** Frees the tensor; called once by the tensor's owner; may be NULL. */
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;        /**< DLPACK_FLAG_BITMASK_* bits. */
  DLTensor dl_tensor;    /**< The tensor. */
} DLManagedTensorVersioned;

/** Defined (1) when the definitions above came from hdal, not from a DLPack 1.x header. */
#define HDAL_DLPACK_COMPAT 1
#endif /* DLPACK_MAJOR_VERSION */

#if !defined(DLPACK_MAJOR_VERSION) || (DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION < 3)
/* DLPack 1.3's C exchange API (the type attribute __dlpack_c_exchange_api__, a
 * PyCapsule named "dlpack_exchange_api"), for headers before 1.3: the same
 * names, types and layout as the specification's. */
/** Allocates a tensor like @p prototype (dtype, ndim, shape, device); 0, or -1 after calling @p SetError. */
typedef int (*DLPackManagedTensorAllocator)(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                                            void (*SetError)(void *error_ctx, const char *kind, const char *message));
/** The owning tensor of a Python object of the table's type, without synchronisation; 0, or -1 with an exception. */
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void *py_object, DLManagedTensorVersioned **out);
/** The tensor of a Python object, borrowed until control returns; 0, or -1 with an exception. */
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void *py_object, DLTensor *out);
/** The producer's current work stream of a device (NULL for the CPU); 0, or -1 with an exception. */
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id, void **out_current_stream);
/** A Python object of the producer's type owning @p tensor (stolen); 0, or -1 with an exception. */
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned *tensor, void **out_py_object);
/** The stable head of every version of the table. */
typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;                     /**< Its DLPack version: a consumer checks the major. */
  struct DLPackExchangeAPIHeader *prev_api; /**< An older table of the same producer, or NULL. */
} DLPackExchangeAPIHeader;
/** The table: every entry but dltensor_from_py_object_no_sync is required. */
typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;                                            /**< Version and older tables. */
  DLPackManagedTensorAllocator managed_tensor_allocator;                     /**< Required. */
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync; /**< Required. */
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;   /**< Required. */
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;          /**< Optional (NULL). */
  DLPackCurrentWorkStream current_work_stream;                               /**< Required. */
} DLPackExchangeAPI;
#endif

/** The DLPack major version hdal produces for versioned tensors. */
#define HDAL_DLPACK_MAJOR 1
/** The DLPack minor version hdal produces for versioned tensors: 1.3, whose
 * rules it keeps (strides set whenever ndim != 0); the struct is 1.0's. */
#define HDAL_DLPACK_MINOR 3

/** The PyCapsule name of DLPack's C exchange API table (DLPackExchangeAPI). */
#define HDAL_DLPACK_EXCHANGE_API_CAPSULE "dlpack_exchange_api"

/** The PyCapsule name of a legacy (DLManagedTensor) tensor in DLPack's Python protocol. */
#define HDAL_DLPACK_CAPSULE "dltensor"
/** The name a consumer gives a legacy capsule it took. */
#define HDAL_DLPACK_CAPSULE_USED "used_dltensor"
/** The PyCapsule name of a versioned (DLManagedTensorVersioned) tensor. */
#define HDAL_DLPACK_CAPSULE_VERSIONED "dltensor_versioned"
/** The name a consumer gives a versioned capsule it took. */
#define HDAL_DLPACK_CAPSULE_VERSIONED_USED "used_dltensor_versioned"

/** @} */

#endif /* HDAL_DLPACK_H */
