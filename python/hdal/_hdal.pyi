# SPDX-License-Identifier: BSD-3-Clause
# Type stubs of hdal._hdal, the C extension behind the package hdal: its
# public names are defined in hdal/__init__.pyi (as hdal.<name>, their
# __module__) and re-exported here; the private hooks are typed here alone.
from hdal import (
    BackendState as BackendState,
    Buffer as Buffer,
    BufferError as BufferError,
    Context as Context,
    CopyError as CopyError,
    Device as Device,
    Error as Error,
    Link as Link,
    Locality as Locality,
    __version__ as __version__,
    default_context as default_context,
    devices as devices,
    dlpack_device_type_name as dlpack_device_type_name,
    from_dlpack as from_dlpack,
    kDLCPU as kDLCPU,
    kDLCUDA as kDLCUDA,
    kDLCUDAHost as kDLCUDAHost,
    kDLCUDAManaged as kDLCUDAManaged,
    kDLOneAPI as kDLOneAPI,
    kDLOpenCL as kDLOpenCL,
    kDLROCM as kDLROCM,
    kDLROCMHost as kDLROCMHost,
    kDLVulkan as kDLVulkan,
)

def _exchange_counts() -> dict[str, int]:
    """For tests: how many imports and exports took the C exchange table or a capsule."""

def _table(context: Context, platforms: str | None, /) -> str:
    """hdal-ls's device table for `context` (python3 -m hdal)."""
