/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal OpenCL backend — OpenCL error codes as names and hdal errors. */
#include "config.h"
#include "opencl.h"

const char *hdal__ocl_error_name(cl_int err) {
  switch (err) {
#define E(x) \
  case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_PROPERTY)
    E(CL_PLATFORM_NOT_FOUND_KHR)
#undef E
  default: return "CL_UNKNOWN_ERROR";
  }
}

static hdal_code code_of(cl_int err) {
  switch (err) {
  case CL_OUT_OF_HOST_MEMORY:
  case CL_OUT_OF_RESOURCES:
  case CL_MEM_OBJECT_ALLOCATION_FAILURE: return HDAL_RESOURCE_EXHAUSTED;
  case CL_INVALID_VALUE:
  case CL_INVALID_MEM_OBJECT:
  case CL_INVALID_COMMAND_QUEUE:
  case CL_INVALID_CONTEXT:
  case CL_INVALID_BUFFER_SIZE:
  case CL_MISALIGNED_SUB_BUFFER_OFFSET: return HDAL_INVALID_ARGUMENT;
  case CL_DEVICE_NOT_AVAILABLE:
  case CL_DEVICE_NOT_FOUND:
  case CL_PLATFORM_NOT_FOUND_KHR: return HDAL_UNAVAILABLE;
  default: return HDAL_INTERNAL;
  }
}

hdal_error *hdal__ocl_error(const hdal_backend_host *host, const char *what, cl_int err) {
  return host->error_new(code_of(err), "%s: %s (%d)", what, hdal__ocl_error_name(err), (int)err);
}
