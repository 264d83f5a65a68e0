#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs hdal's CUDA tests against the machine's own runtime instead of the fake
# one (run-real.sh says how, and how to make a dry run); exits 77 (skipped)
# where it cannot be loaded or sees no GPU.  From the build tree:
#   make -C tests check TESTS=gpu/run-cuda-tests.sh
exec sh "$(dirname "$0")/run-real.sh" cuda
