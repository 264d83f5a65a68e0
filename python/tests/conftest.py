# SPDX-License-Identifier: BSD-3-Clause
# Fixtures and helpers of the hdal package's tests (run by python/run-pytest.sh
# under `make check`, with the build tree's package and backend modules).
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

import hdal

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_name(cap):
    """The name a PyCapsule holds now ("dltensor", "used_dltensor", ...)."""
    n = _get_name(cap)
    return None if n is None else n.decode()


def run_python(code, env=None, timeout=300):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr).

    Crash-prone scenarios run this way, so that a double free or a deleter
    run at exit shows as a signal or a non-zero status, not as a dead suite."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def assert_clean_run(code, env=None, expect_out=None):
    rc, out, err = run_python(code, env)
    assert rc == 0, "exit status %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err)
    assert err == "", err
    if expect_out is not None:
        assert out == expect_out
    return out


@pytest.fixture(scope="session")
def cpu_ctx():
    return hdal.Context(backends="cpu")


@pytest.fixture(scope="session")
def ifrt_device():
    """A device listed but served by no buffer runtime: the test module ifrttest."""
    ctx = hdal.Context(backends="cpu,ifrttest")
    devs = [d for d in ctx.devices() if d.platform == "ifrttest"]
    if not devs:
        pytest.skip("no ifrttest module on HDAL_BACKEND_PATH: %s" % ctx.backends())
    return devs[0]


def require_pocl():
    """Skips unless tests/fakes/cl/make-vendors.sh made the PoCL-only vendors directory."""
    vendors = os.environ.get("OCL_ICD_VENDORS", "")
    if not os.environ.get("POCL_DEVICES") or not os.path.exists(os.path.join(vendors, "pocl.icd")):
        pytest.skip("no PoCL ICD for the suite (OCL_ICD_VENDORS=%s); see tests/fakes/cl/make-vendors.sh" % vendors)


# ---- DLPack tensors made by hand (ctypes), with deleter counts ----

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_NAMES = {"dltensor": ctypes.c_char_p(b"dltensor"), "dltensor_versioned": ctypes.c_char_p(b"dltensor_versioned"),
          "other": ctypes.c_char_p(b"other")}


class HandTensor:
    """A float32 host tensor over a ctypes array, in a capsule; counts its deleter's calls."""

    def __init__(self, values, versioned=False, major=1, flags=0, name=None):
        self.data = (ctypes.c_float * len(values))(*values)
        self.shape = (ctypes.c_int64 * 1)(len(values))
        self.deleted = 0
        self.deleter = DELETER(self._delete)
        t = DLTensor(ctypes.cast(self.data, ctypes.c_void_p), DLDevice(1, 0), 1, DLDataType(2, 32, 1),
                     self.shape, None, 0)
        if versioned:
            self.m = DLManagedTensorVersioned(DLPackVersion(major, 0), None, self.deleter, flags, t)
        else:
            self.m = DLManagedTensor(t, None, self.deleter)
        n = name or ("dltensor_versioned" if versioned else "dltensor")
        self.capsule = _capsule_new(ctypes.addressof(self.m), _NAMES[n], None)

    def _delete(self, ptr):
        assert ptr == ctypes.addressof(self.m)
        self.deleted += 1
