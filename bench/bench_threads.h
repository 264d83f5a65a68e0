/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef HDAL_BENCH_THREADS_H
#define HDAL_BENCH_THREADS_H
#include <hdal.h>
/* Prints import + release and export + destroy throughput at 1, 2, 4 and 8 threads. */
void bench_threads(hdal_context *ctx, hdal_device *cpu, int quick);
#endif
