# SPDX-License-Identifier: BSD-3-Clause
"""The interop lab's peers: how each makes a tensor, takes one, and tells
where its data is, through its own API (docs/interop.md)."""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.environ.get("HDAL_INTEROP_PYTHON_TESTS", os.path.join(os.path.dirname(__file__), "..", "..",
                                                                                   "python", "tests")))
# python/tests' ctypes structures of DLPack (conftest.py there), reused.
import importlib.util

_spec = importlib.util.spec_from_file_location("hdal_py_conftest", os.path.join(sys.path[0], "conftest.py"))
pyconf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pyconf)
sys.path.pop(0)

import hdal  # noqa: E402

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
IS_COPIED, READ_ONLY = 2, 1


def capsule_info(cap):
    """(name, data + byte_offset, flags or None) of an unconsumed DLPack capsule, read with ctypes."""
    name = pyconf.capsule_name(cap)
    p = _get_pointer(cap, name.encode())
    if name == "dltensor_versioned":
        m = pyconf.DLManagedTensorVersioned.from_address(p)
        return name, (m.dl_tensor.data or 0) + m.dl_tensor.byte_offset, m.flags
    m = pyconf.DLManagedTensor.from_address(p)
    return name, (m.dl_tensor.data or 0) + m.dl_tensor.byte_offset, None


def aligned(shape, dtype, align=64, offset=0):
    """A numpy array of zeros whose data is `offset` bytes past a multiple of `align`."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(n + align + offset, np.uint8)
    start = (-raw.ctypes.data) % align + offset
    return raw[start:start + n].view(dtype).reshape(shape)


def addr(a):
    return a.__array_interface__["data"][0]


class Peer:
    name = ""
    dtypes = ()           # numpy dtype names it makes and takes
    keeps_layout = True   # its tensors keep the producer case's strides (else compact row-major)
    host_align = 1        # a consumer that copies host data aligned below this (jax, tensorflow: 64)
    row_major_only = False  # refuses to take a tensor that is not compact row-major
    legacy_only = False   # asks for legacy capsules only, which hdal refuses to make of a read-only buffer
    exports_read_only = False  # marks every tensor it exports READ_ONLY (immutable arrays)

    def version(self):
        return ""

    def make(self, a):     # a tensor of its own holding numpy array a's values
        raise NotImplementedError

    def wrap(self, a):     # a tensor of its own on a's memory (for lifetimes), or None
        return None

    def take(self, x):     # its from_dlpack
        raise NotImplementedError

    def ptr(self, x):      # where x's first element is
        raise NotImplementedError

    def values(self, x):   # x's values as a numpy array
        raise NotImplementedError

    def writable(self, x):  # whether x can be written through its own API (None: immutable arrays)
        return None


class Numpy(Peer):
    name = "numpy"
    dtypes = ("bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128")

    def version(self):
        return np.__version__

    def make(self, a):
        return a

    def wrap(self, a):
        return a

    def take(self, x):
        return np.from_dlpack(x)

    def ptr(self, x):
        return addr(x)

    def values(self, x):
        return x

    def writable(self, x):
        return x.flags.writeable


class Torch(Peer):
    name = "torch"
    dtypes = Numpy.dtypes + ("bfloat16", "float8_e4m3fn", "float8_e5m2")

    def __init__(self):
        import torch
        self.torch = torch
        self.special = {"bfloat16": (torch.bfloat16, np.uint16), "float8_e4m3fn": (torch.float8_e4m3fn, np.uint8),
                        "float8_e5m2": (torch.float8_e5m2, np.uint8)}

    def version(self):
        return self.torch.__version__

    def make(self, a):
        return self.wrap(a)

    def wrap(self, a):
        if a.dtype.name in self.special:
            tt, bits = self.special[a.dtype.name]
            return self.torch.from_numpy(a.view(bits)).view(tt)
        return self.torch.from_numpy(a)

    def take(self, x):
        return self.torch.from_dlpack(x)

    def ptr(self, x):
        return x.data_ptr()

    def values(self, x):
        name = str(x.dtype).replace("torch.", "")
        if name in self.special:
            import ml_dtypes
            return x.view(self.torch.uint16 if name == "bfloat16" else self.torch.uint8).numpy().view(
                getattr(ml_dtypes, name))
        return x.numpy()

    def writable(self, x):
        return True  # a torch tensor has no read-only state


class Jax(Peer):
    name = "jax"
    dtypes = Torch.dtypes
    keeps_layout = False
    host_align = 64

    def __init__(self):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.dlpack
        import jax.numpy as jnp
        import jaxlib
        self.jax, self.jnp = jax, jnp
        # DLPack 1.x came to jax with 0.12.0 (Python 3.13's pin; 3.11's, 0.10.2, and 0.11.0 have legacy
        # capsules only): it asks __dlpack__(stream=None, max_version=(1, 3)), and exports versioned capsules,
        # every one READ_ONLY (jax's arrays are immutable), its copy=True ones READ_ONLY | IS_COPIED.
        self.dlpack1 = tuple(int(v) for v in jaxlib.__version__.split(".")[:2]) >= (0, 12)
        self.legacy_only = not self.dlpack1
        self.exports_read_only = self.dlpack1

    def version(self):
        import jaxlib
        return "%s (jaxlib %s)" % (self.jax.__version__, jaxlib.__version__)

    def make(self, a):
        return self.jnp.asarray(a)

    def wrap(self, a):
        return self.jax.dlpack.from_dlpack(a)

    def take(self, x):
        return self.jax.dlpack.from_dlpack(x)

    def ptr(self, x):
        return x.unsafe_buffer_pointer()

    def values(self, x):
        return np.asarray(x)


class TensorFlow(Peer):
    name = "tensorflow"
    dtypes = ("bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128",
              "bfloat16")
    keeps_layout = False
    row_major_only = True
    legacy_only = True

    def __init__(self):
        import tensorflow as tf
        self.tf = tf

    def version(self):
        return self.tf.__version__

    def make(self, a):
        return self.tf.constant(a)

    def wrap(self, a):
        return self.tf.experimental.dlpack.from_dlpack(a.__dlpack__())

    def take(self, x):
        # TensorFlow takes a legacy capsule, not a producer (tf.experimental.dlpack.from_dlpack).
        return self.tf.experimental.dlpack.from_dlpack(x.__dlpack__())

    def ptr(self, x):
        return capsule_info(self.tf.experimental.dlpack.to_dlpack(x))[1]

    def values(self, x):
        return x.numpy()


class TvmFfi(Peer):
    name = "tvm-ffi"
    dtypes = Torch.dtypes

    def __init__(self):
        import tvm_ffi
        self.tvm_ffi = tvm_ffi

    def version(self):
        return self.tvm_ffi.__version__

    def make(self, a):
        return self.tvm_ffi.from_dlpack(_torch().wrap(a)) if a.dtype.name in _torch().special else \
            self.tvm_ffi.from_dlpack(a)

    def wrap(self, a):
        return self.make(a)

    def take(self, x):
        return self.tvm_ffi.from_dlpack(x)

    def ptr(self, x):
        return x.data_ptr()

    def values(self, x):
        return _torch().values(_torch().torch.from_dlpack(x))


class ArrayApiStrict(Peer):
    name = "array-api-strict"
    dtypes = ("bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex64", "complex128")

    def __init__(self):
        import array_api_strict as xp
        self.xp = xp

    def version(self):
        return self.xp.__version__

    def make(self, a):
        return self.xp.asarray(a)

    def wrap(self, a):
        return self.xp.asarray(a)

    def take(self, x):
        return self.xp.from_dlpack(x)

    def ptr(self, x):
        return addr(np.from_dlpack(x))

    def values(self, x):
        return np.from_dlpack(x)


class HdalCpu(Peer):
    name = "hdal CPU"
    dtypes = Torch.dtypes
    keeps_layout = False  # make(): hdal's own memory, a compact copy

    def version(self):
        return hdal.__version__

    def make(self, a):
        if not a.flags.writeable:
            return hdal.from_dlpack(a)  # a read-only buffer: a view (a copy is hdal's, writable)
        if a.dtype.name in _torch().special:
            return hdal.from_dlpack(_torch().wrap(a), copy=True)
        return hdal.from_dlpack(a, copy=True)

    def wrap(self, a):
        return hdal.from_dlpack(a)

    def take(self, x):
        return hdal.from_dlpack(x)

    def ptr(self, x):
        return capsule_info(x.__dlpack__(max_version=(1, 0)))[1]

    def values(self, x):
        return _torch().values(_torch().torch.from_dlpack(x))

    def writable(self, x):
        return not x.read_only


_TORCH = []


def _torch():
    if not _TORCH:
        _TORCH.append(Torch())
    return _TORCH[0]


# HDAL_INTEROP_PEERS (names, comma-separated) makes only those: a process that
# loads PoCL (LLVM inside) takes one peer at a time (test_opencl_pairs.py).
_ONLY = [n for n in os.environ.get("HDAL_INTEROP_PEERS", "").split(",") if n]
PEERS = [cls() if cls is not Torch else _torch()
         for cls in (Numpy, Torch, Jax, TensorFlow, TvmFfi, ArrayApiStrict, HdalCpu)
         if not _ONLY or cls.name in _ONLY]
BY_NAME = {p.name: p for p in PEERS}


def bits(a):
    """a's bytes as unsigned integers of its item size, for an exact comparison (NaN, -0, float8)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "c":
        a = a.view(np.dtype("f%d" % (a.dtype.itemsize // 2)))
    return a.view(np.dtype("u%d" % a.dtype.itemsize)) if a.dtype.itemsize in (1, 2, 4, 8) else a


def reference(dtype, shape):
    """Deterministic values of `dtype` (a name) and `shape`, none of them zero where the dtype allows."""
    import ml_dtypes
    n = int(np.prod(shape))
    dt = np.dtype(getattr(ml_dtypes, dtype)) if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2") else np.dtype(dtype)
    if dt.kind == "b":
        v = (np.arange(n) % 3 == 0)
    elif dt.kind == "c":
        v = (np.arange(n) + 1) + 1j * (np.arange(n) % 5)
    elif dt.kind in "iu":
        v = np.arange(n) % 100 + 1
    else:
        v = (np.arange(n) % 16 + 1) * 0.5
    return np.asarray(v).astype(dt).reshape(shape)
