/* SPDX-License-Identifier: BSD-3-Clause */
/* A use after release, on purpose (tests/valgrind/no-recycle.sh runs it under
 * valgrind): a CPU buffer is allocated, released, and then read, its object
 * (hdal_buffer_ndim) and its memory.  With HDAL_NO_RECYCLE=1 both were freed
 * and valgrind must say so; without it hdal keeps both for reuse and the reads
 * are of memory still allocated, which valgrind cannot flag. */
#include <hdal.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  hdal_context_options opts = HDAL_CONTEXT_OPTIONS_INIT;
  opts.backends = "cpu";
  hdal_context *ctx;
  hdal_error *err = hdal_context_create(&opts, &ctx);
  if (err) {
    fprintf(stderr, "%s\n", hdal_error_message(err));
    hdal_error_destroy(err);
    return 2;
  }
  int64_t shape[1] = {1024};
  DLDataType f32 = {kDLFloat, 32, 1};
  hdal_buffer *b;
  if ((err = hdal_buffer_allocate(hdal_context_device(ctx, 0), 1, shape, f32, &b))) {
    fprintf(stderr, "%s\n", hdal_error_message(err));
    hdal_error_destroy(err);
    return 2;
  }
  volatile float *data = hdal_buffer_data(b);
  memset((void *)data, 0, 1024 * sizeof(float));
  hdal_buffer_release(b);
  /* The bug: b and its memory are used after the last release. */
  int ndim = hdal_buffer_ndim(b);
  float first = data[0];
  printf("after release: ndim %d, first element %g\n", ndim, (double)first);
  hdal_context_destroy(ctx);
  return 0;
}
