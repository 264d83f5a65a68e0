#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check's entry to the Python package's pytest suite (python/tests).
# Skips (77) when the package was not built (--enable-python=no, no headers,
# a sanitizer build) or when the interpreter has no pytest or numpy (Debian:
# python3-pytest, python3-numpy); torch's tests skip alone without python3-torch.
if [ "${HDAL_PYTHON_BUILT:-no}" != yes ]; then
  echo "the Python package was not built (configure --enable-python)"; exit 77
fi
"$PYTHON" -c 'import pytest' 2>/dev/null || { echo "$PYTHON has no pytest (Debian: python3-pytest)"; exit 77; }
"$PYTHON" -c 'import numpy' 2>/dev/null || { echo "$PYTHON has no numpy (Debian: python3-numpy)"; exit 77; }
# No cache and no bytecode in the source tree (make distcheck's is read-only).
# From the tests' directory: `python -m` puts the current directory first on
# sys.path, and in a build in the source tree python/ holds the sources of the
# package (hdal/, without its extension), which would hide the built one.
cd "$HDAL_PYTHON_TESTS" || exit 1
# An exception Python could not raise (a C call made with one already set:
# Python 3.13 reports those) fails the test that caused it.
exec "$PYTHON" -m pytest -p no:cacheprovider -q -rs -W error::pytest.PytestUnraisableExceptionWarning . "$@"
