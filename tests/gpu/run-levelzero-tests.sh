#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs hdal's Level Zero tests against the machine's own driver (an Intel GPU)
# instead of the fake one (run-real.sh says how, and how to make a dry run);
# exits 77 (skipped) where no driver with a device answers.  From the build tree:
#   make -C tests check TESTS=gpu/run-levelzero-tests.sh
exec sh "$(dirname "$0")/run-real.sh" levelzero
