# SPDX-License-Identifier: BSD-3-Clause
"""hdal: the devices of this machine, and DLPack import and export across them.

hdal enumerates compute devices across a CPU backend (hwloc), a CUDA backend
and an OpenCL backend, and imports and exports tensors through DLPack, routing
each import through the backend that owns the target device.

    >>> import numpy as np, hdal
    >>> hdal.devices()[0].platform
    'cpu'
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> buf = hdal.from_dlpack(a)          # zero-copy view of a
    >>> buf.shape, buf.dtype, buf.is_view
    ((2, 3), 'float32', True)
    >>> np.from_dlpack(buf)                # zero-copy again
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)

See help(hdal.from_dlpack), help(hdal.Buffer), help(hdal.Context); and
`python3 -m hdal`, which prints the table of hdal-ls.
"""

from ._hdal import (
    BackendState,
    Buffer,
    BufferError,
    Context,
    CopyError,
    Device,
    Error,
    Link,
    Locality,
    __version__,
    default_context,
    devices,
    dlpack_device_type_name,
    from_dlpack,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
    kDLOneAPI,
    kDLOpenCL,
    kDLROCM,
    kDLROCMHost,
    kDLVulkan,
)

# hdal.BufferError stays out of __all__: `from hdal import *` would hide the
# built-in BufferError, which it subclasses.
__all__ = [
    "BackendState",
    "Buffer",
    "Context",
    "CopyError",
    "Device",
    "Error",
    "Link",
    "Locality",
    "__version__",
    "default_context",
    "devices",
    "dlpack_device_type_name",
    "from_dlpack",
    "kDLCPU",
    "kDLCUDA",
    "kDLCUDAHost",
    "kDLCUDAManaged",
    "kDLOneAPI",
    "kDLOpenCL",
    "kDLROCM",
    "kDLROCMHost",
    "kDLVulkan",
]
