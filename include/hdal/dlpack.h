/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal — DLPack definitions.
 *
 * Includes the system's <dlpack/dlpack.h> and adds what that header lacks of
 * DLPack 1.3, for every release header from 0.6 on (Debian 12 ships 0.6,
 * Debian 13 1.0).  What is added is decided by the header's version macros
 * alone.  Written from the DLPack specification; nothing here is defined when
 * the system header already has it.
 */
#ifndef HDAL_DLPACK_H
#define HDAL_DLPACK_H

#include <stdint.h>
#include <dlpack/dlpack.h>

/**
 * @defgroup hdal_dlpack DLPack additions
 * @brief The DLPack 1.x definitions that an older <dlpack/dlpack.h> lacks.
 *
 * <hdal.h> includes the system's <dlpack/dlpack.h> and adds, by the version
 * that header declares, what hdal's API and a consumer of it use of DLPack 1.3
 * and that header lacks.  Supported headers: every DLPack release from 0.6 on
 * (0.6, 0.7, 0.8, 1.0, 1.1, 1.2, 1.3); an older one (0.5 and before) stops
 * the compilation with an error.  The version is read from the header's own
 * macros, never guessed from the system: @c DLPACK_MAJOR_VERSION and
 * @c DLPACK_MINOR_VERSION (1.x), or @c DLPACK_VERSION (0.x: 60 is 0.6);
 * ::HDAL_DLPACK_HEADER_VERSION holds the result.  What each one lacks:
 *
 * | DLPack | what it added, which hdal adds to an older header |
 * |--------|---------------------------------------------------|
 * | 0.7 | device types kDLOneAPI, kDLWebGPU, kDLHexagon |
 * | 0.8 | data type code kDLBool |
 * | 1.0 | device type kDLMAIA; DLPackVersion; the flags DLPACK_FLAG_BITMASK_READ_ONLY and _IS_COPIED; struct DLManagedTensorVersioned |
 * | 1.1 | the float8, float6 and float4 type codes; the flag DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED |
 * | 1.2 | device type kDLTrn; the typedef DLManagedTensorVersioned (1.0 and 1.1 declare only the struct); the C exchange API: DLPackExchangeAPI, DLPackExchangeAPIHeader and the five function types |
 * | 1.3 | nothing in C (the exchange table moved to a PyCapsule, ::HDAL_DLPACK_EXCHANGE_API_CAPSULE) |
 *
 * A header gets what every later version added: a 0.6 header all of the
 * table, a 1.0 header the rows 1.1 and 1.2, a 1.2 or 1.3 header nothing.
 * The additions have the specification's names, values and layout, so code
 * written against a DLPack 1.3 header compiles unchanged against any of them.
 * Device and data type codes that hdal adds are enumeration constants of
 * their own (in C++ they convert to int, not to @c DLDeviceType).
 * ::HDAL_DLPACK_COMPAT is defined when the versioned tensor itself came from
 * hdal (a 0.x header).  Device types past kDLTrn (18) are left out: no DLPack
 * release names one.  Ownership of tensors passed through hdal: docs/dlpack.md.
 * @{
 */

#if !defined(DLPACK_MAJOR_VERSION) && !(defined(DLPACK_VERSION) && DLPACK_VERSION >= 60)
#error "hdal needs the <dlpack/dlpack.h> of DLPack 0.6 or newer"
#endif

/** The DLPack version of the system's <dlpack/dlpack.h>, as major * 100 + minor: 6 for 0.6, 101 for 1.1. */
#ifdef DLPACK_MAJOR_VERSION
#define HDAL_DLPACK_HEADER_VERSION (DLPACK_MAJOR_VERSION * 100 + DLPACK_MINOR_VERSION)
#else /* 0.6 to 0.8 spell their version as 60, 70, 80 */
#define HDAL_DLPACK_HEADER_VERSION (DLPACK_VERSION / 10)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if HDAL_DLPACK_HEADER_VERSION < 7
/** Device types added in DLPack 0.7 (values of @c DLDeviceType). */
enum {
  kDLOneAPI = 14,  /**< Unified shared memory of oneAPI (non-partitioned). */
  kDLWebGPU = 15,  /**< WebGPU. */
  kDLHexagon = 16, /**< Qualcomm Hexagon DSP. */
};
#endif

#if HDAL_DLPACK_HEADER_VERSION < 8
/** The data type code added in DLPack 0.8 (a value of @c DLDataTypeCode). */
enum {
  kDLBool = 6, /**< Boolean, 8 bits. */
};
#endif

#if HDAL_DLPACK_HEADER_VERSION < 100
/** The device type added in DLPack 1.0. */
enum {
  kDLMAIA = 17, /**< Microsoft MAIA. */
};

/** A DLPack ABI version (DLPack 1.0). */
typedef struct {
  uint32_t major; /**< Incompatible ABI changes. */
  uint32_t minor; /**< Compatible additions. */
} DLPackVersion;

/** The tensor is read-only: the consumer must not write to it (DLPack 1.0). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/** The producer copied the data for this tensor (it aliases nothing else; DLPack 1.0). */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

/**
 * A DLPack 1.x managed tensor: a tensor, its version and flags, and the
 * deleter that its owner calls exactly once when done with it (DLPack 1.0;
 * the typedef of the same name is 1.2's, below).
 */
struct DLManagedTensorVersioned {
  DLPackVersion version; /**< The DLPack version of this struct; major 1. */
  void *manager_ctx;     /**< The producer's context, for its deleter. */
  /** Frees the tensor; called once by the tensor's owner; may be NULL. */
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;        /**< DLPACK_FLAG_BITMASK_* bits. */
  DLTensor dl_tensor;    /**< The tensor. */
};

/** Defined (1) when the versioned tensor above came from hdal, not from a DLPack 1.x header. */
#define HDAL_DLPACK_COMPAT 1
#endif

#if HDAL_DLPACK_HEADER_VERSION < 101
/** Data type codes added in DLPack 1.1: the narrow floats (values of @c DLDataTypeCode). */
enum {
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
/** Sub-byte elements are each padded to a byte (DLPack 1.1). */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#endif

#if HDAL_DLPACK_HEADER_VERSION < 102
/** The device type added in DLPack 1.2. */
enum {
  kDLTrn = 18, /**< AWS Trainium. */
};

/** The versioned tensor's type name: 1.0 and 1.1 declare only the struct tag, 1.2 the typedef too. */
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;

/* DLPack's C exchange API (1.2; 1.3 publishes the table as the PyCapsule
 * "dlpack_exchange_api" of the type attribute __dlpack_c_exchange_api__):
 * the same names, types and layout as the specification's. */
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

#ifdef __cplusplus
}
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
