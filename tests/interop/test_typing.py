# SPDX-License-Identifier: BSD-3-Clause
# The stubs against the runtime and against typed use (docs/python.md,
# "Signatures and stubs"), with mypy pinned in constraints-X.Y.txt: the lab is
# where hdal meets PyPI, and mypy comes from there.  mypy's stubtest imports
# the hdal installed in the lab's venv and checks hdal/__init__.pyi and
# hdal/_hdal.pyi against it (python/tests/stubtest-allowlist.txt); mypy
# --strict checks python/tests/typed_usage.py and examples/numpy-roundtrip.py
# with the venv's numpy and its stubs.  Each runs in a fresh folder, so that
# mypy's cache stays out of the source tree.
import os
import subprocess
import sys

import mypy.version

import hdal

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY_TESTS = os.environ.get("HDAL_INTEROP_PYTHON_TESTS") or os.path.join(SRC, "python", "tests")


def run(tmp_path, *args):
    p = subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    print("mypy %s: %s\n%s" % (mypy.version.__version__, " ".join(args), out))
    return p.returncode, out


def test_stubs_installed():
    here = os.path.dirname(hdal.__file__)
    for f in ("__init__.pyi", "_hdal.pyi", "py.typed"):
        assert os.path.exists(os.path.join(here, f)), f


def test_stubtest(tmp_path):
    rc, out = run(tmp_path, "mypy.stubtest", "hdal", "--allowlist", os.path.join(PY_TESTS, "stubtest-allowlist.txt"))
    assert rc == 0 and "Success: no issues found in 3 modules" in out, out


def test_mypy_strict(tmp_path):
    rc, out = run(tmp_path, "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                  os.path.join(PY_TESTS, "typed_usage.py"), os.path.join(SRC, "examples", "numpy-roundtrip.py"))
    assert rc == 0 and "Success: no issues found in 2 source files" in out, out
