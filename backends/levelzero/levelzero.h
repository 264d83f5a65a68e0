/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal Level Zero backend — state shared by its files (discovery, loader, buffers). */
#ifndef HDAL_LEVELZERO_H
#define HDAL_LEVELZERO_H

#include <pthread.h>
#include <stdbool.h>
#include <hdal/backend.h>
#include "ze_api.h"
#include "../gpu.h"

/* The loader's entry points, resolved once per context. */
typedef struct {
#define HDAL__ZE_FIELD(name, params) ze_result_t(*name) params;
  HDAL__ZE_FUNCTIONS(HDAL__ZE_FIELD)
#undef HDAL__ZE_FIELD
} hdal__ze_api;

/* A root device.  Its immediate command list (hdal's "stream 0") and the
 * event its copies wait on are made at its first buffer operation; `lock`
 * serialises its use, since a command list is not thread-safe. */
typedef struct {
  hdal__gpu_device gpu; /* ordinal: the index among root devices, driver then device */
  ze_driver_handle_t driver;
  ze_context_handle_t context; /* hdal's context on the driver */
  ze_device_handle_t dev;
  pthread_mutex_t lock;
  ze_command_list_handle_t list;
  ze_event_pool_handle_t copy_pool;
  ze_event_handle_t copy_event;
} hdal__levelzero_device;

typedef struct {
  ze_driver_handle_t driver;
  ze_context_handle_t context;
} hdal__levelzero_driver;

typedef struct hdal__levelzero_state {
  hdal__gpu gpu; /* host, the devices (hdal__levelzero_device) */
  void *lib;     /* dlopen handle of the loader */
  hdal__ze_api ze;
  int ndrivers;
  hdal__levelzero_driver *drivers;
} hdal__levelzero_state;

/* loader.c */
/* The loader opened unless HDAL_LEVELZERO_LIBRARY names another. */
#define HDAL__ZE_LOADER "libze_loader.so.1"
/* Opens the loader at `path` and resolves every entry point. */
HDAL__HIDDEN hdal_error *hdal__levelzero_loader_open(hdal__levelzero_state *s, const char *path);
/* "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)" */
HDAL__HIDDEN const char *hdal__levelzero_result_name(ze_result_t r);
HDAL__HIDDEN void hdal__levelzero_describe(ze_result_t r, char *buf, size_t len);
HDAL__HIDDEN hdal_code hdal__levelzero_code_of(int r);
#define hdal__levelzero_error(s, r, ...) hdal__gpu_error(&(s)->gpu, (r), __VA_ARGS__)

/* levelzero_buffer.c */
HDAL__HIDDEN extern const hdal__gpu_driver hdal__levelzero_gpu_driver;
/* Gives back what the devices' first buffer operation made (at finalize). */
HDAL__HIDDEN void hdal__levelzero_devices_close(hdal__levelzero_state *s);

#endif /* HDAL_LEVELZERO_H */
