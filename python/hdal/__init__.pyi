# SPDX-License-Identifier: BSD-3-Clause
# Type stubs of the hdal package: the C extension hdal._hdal, whose names the
# package re-exports (hdal/_hdal.pyi re-exports these).  Checked against the
# runtime by mypy's stubtest, and against the extension's text signatures by
# tests/test_signatures.py (docs/python.md, "Signatures and stubs").
import builtins
from typing import Any, Final, Literal, Protocol, TypeAlias, final

from _typeshed import ReadableBuffer, WriteableBuffer, structseq
from typing_extensions import CapsuleType, Self

__version__: str
# As hdal/__init__.py's: hdal.BufferError stays out (`from hdal import *`
# would hide the built-in BufferError, which it subclasses).
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

# DLPack's device types (dlpack.h's DLDeviceType: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3,
# kDLOpenCL 4, kDLVulkan 7, kDLROCM 10, kDLROCMHost 11, kDLCUDAManaged 13,
# kDLOneAPI 14), for dl_device= and device=.
kDLCPU: int
kDLCUDA: int
kDLCUDAHost: int
kDLOpenCL: int
kDLVulkan: int
kDLROCM: int
kDLROCMHost: int
kDLCUDAManaged: int
kDLOneAPI: int

class Error(RuntimeError):
    """An error of the hdal library: str(e) is its message, e.code its code's name."""

    code: str | None
    """The code's name as absl::StatusCode spells it, e.g. "FAILED_PRECONDITION"; None until raised."""

class BufferError(Error, builtins.BufferError):
    """A buffer that cannot be exchanged through DLPack as asked (Buffer.__dlpack__)."""

class CopyError(BufferError, ValueError):
    """copy=False, and the exchange needs a copy (from_dlpack, Buffer.__dlpack__)."""

# hdal_backend_state_name()'s words.
_State: TypeAlias = Literal["ok", "disabled", "unavailable", "failed"]

@final
class BackendState(structseq[str | int | None], tuple[str, _State, int, int, str | None]):
    """A backend's status as data (Context.backend_states()): a named tuple."""

    __match_args__: Final = ("name", "state", "device_count", "refused_count", "reason")

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> _State: ...
    @property
    def device_count(self) -> int: ...
    @property
    def refused_count(self) -> int: ...
    @property
    def reason(self) -> str | None: ...

# hdal_topology_source_name()'s words.
_TopologySource: TypeAlias = Literal["system", "xml", "synthetic", "other", "unavailable"]

@final
class Context:
    """The devices hdal finds, across its backends."""

    def __new__(cls, backends: str | None = None, backend_path: str | None = None, selector: str | None = None) -> Self:
        """backends, backend_path, selector: as HDAL_BACKENDS, HDAL_BACKEND_PATH and
        HDAL_DEVICE_SELECTOR; None: the variable."""
    def devices(self, /) -> list[Device]: ...
    def device(self, id: int, /) -> Device: ...
    def backends(self, /) -> list[tuple[str, str]]:
        """(name, status) of each backend, e.g. ("cpu", "ok: 1 device"); words for people."""
    def backend_states(self, /) -> list[BackendState]:
        """Each backend's status as data, in the order of backends()."""
    @property
    def process_index(self) -> int: ...
    @property
    def process_count(self) -> int: ...
    @property
    def host_count(self) -> int: ...
    @property
    def hardware_count(self) -> int: ...
    @property
    def topology_source(self) -> tuple[_TopologySource, str | None]:
        """(type, detail) of the topology that places devices; detail the XML file or the
        synthetic description, None for this system."""

@final
class Locality(structseq[str | tuple[int, ...] | None], tuple[str, tuple[int, ...], str | None]):
    """Where a device sits in the machine (Device.locality): a named tuple."""

    __match_args__: Final = ("cpuset", "numa_nodes", "pcie_root")

    @property
    def cpuset(self) -> str:
        """The nearest CPUs as hwloc_bitmap_snprintf() writes a bitmap ("0x0000ffff")."""
    @property
    def numa_nodes(self) -> tuple[int, ...]:
        """The OS indexes of the nearest NUMA nodes, ascending."""
    @property
    def pcie_root(self) -> str | None:
        """The PCIe root complex above the device ("pci0000:00"); None when not known."""

# hdal_link_kind_name()'s words, from the nearest.
_LinkKind: TypeAlias = Literal["same", "fabric", "pix", "pxb", "phb", "node", "sys"]

@final
class Link(
    structseq[str | bool | int | None], tuple[_LinkKind, bool, str | None, int | None, int | None]
):
    """How two devices of one host are joined (Device.link): a named tuple."""

    __match_args__: Final = ("kind", "peer_access", "fabric", "bandwidth_mbps", "fabric_links")

    @property
    def kind(self) -> _LinkKind: ...
    @property
    def peer_access(self) -> bool: ...
    @property
    def fabric(self) -> str | None:
        """The fabric when kind is "fabric": "nvlink", "xgmi" or "xelink"; else None."""
    @property
    def bandwidth_mbps(self) -> int | None: ...
    @property
    def fabric_links(self) -> int | None: ...

# The kinds of Device.native_handle: hdal_native_handle_name()'s names
# (HDAL_NATIVE_*) less the prefix, lowercased.
_NativeKind: TypeAlias = Literal[
    "opencl_platform",
    "opencl_device",
    "opencl_context",
    "opencl_queue",
    "cuda_device",
    "cuda_context",
    "cuda_stream",
    "hip_device",
    "hip_stream",
    "level_zero_driver",
    "level_zero_device",
    "level_zero_context",
]

@final
class Device:
    """A compute device of a Context (made by the context, never by a call of Device)."""

    @property
    def id(self) -> int: ...
    @property
    def platform(self) -> str: ...
    @property
    def runtime_vendor(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def local_hardware_id(self) -> int: ...
    @property
    def process_index(self) -> int: ...
    @property
    def is_addressable(self) -> bool: ...
    @property
    def runtime_class(self) -> Literal["pjrt", "ifrt-native"]: ...
    @property
    def runtime_class_reason(self) -> str | None: ...
    @property
    def dlpack_device(self) -> tuple[int, int]: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def numa_node(self) -> int: ...
    @property
    def attributes(self) -> dict[str, str]: ...
    @property
    def typed_attributes(self) -> dict[str, str | int | bool]:
        """The attributes with their backend's types: int, bool, or str."""
    @property
    def host(self) -> str | None: ...
    @property
    def host_index(self) -> int: ...
    @property
    def hardware_index(self) -> int: ...
    @property
    def same_hardware(self) -> tuple[int, ...]: ...
    @property
    def context(self) -> Context: ...
    @property
    def locality(self) -> Locality | None:
        """hdal_device_locality(); None where hdal cannot place the device."""
    def link(self, other: Device, /) -> Link:
        """How this device and `other` (of its context, on this host) are joined (hdal_device_link)."""
    def bind(self, /, *, process: bool = False, memory: bool = True) -> None:
        """Binds the calling thread (process=True: the process) near the device (hdal_device_bind)."""
    def memory_stats(self, /) -> dict[str, int]:
        """bytes_in_use, peak_bytes_in_use, bytes_reserved, bytes_limit, num_allocs, num_pool_hits."""
    def trim(self, /) -> None: ...
    def synchronize(self, /) -> None: ...
    def native_handle(self, kind: _NativeKind | int, /) -> int:
        """The runtime's object behind the device (hdal_device_native_handle), owned by hdal."""
    def work_stream(self, /) -> int:
        """The stream hdal's own work on the device goes to (hdal_device_work_stream)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self, /) -> int: ...

# What device= names: an hdal.Device (of any context), "cpu" (the default
# context's CPU device), or a DLPack (device_type, device_id) pair of the
# default context's devices.
_DeviceArg: TypeAlias = Device | str | tuple[int, int]

@final
class Buffer:
    """An array on an hdal device; a DLPack producer, and on the CPU a PEP 3118 buffer."""

    @property
    def device(self) -> Device: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements, not bytes."""
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def dtype(self) -> str: ...
    @property
    def is_view(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    def __dlpack__(
        self,
        /,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType: ...
    def __dlpack_device__(self, /) -> tuple[int, int]: ...
    def __array__(self, /, dtype: Any = None, copy: bool | None = None) -> Any:
        """The buffer as a numpy array (host memory only); numpy is not a dependency of hdal."""
    def to_device(self, device: _DeviceArg, /) -> Buffer: ...
    def write(self, data: ReadableBuffer, /, offset: int = 0) -> None:
        """Writes data's bytes into the buffer from byte `offset` (hdal_buffer_write)."""
    def read(self, /, offset: int = 0, size: int | None = None) -> bytes:
        """`size` bytes from byte `offset` (None: to the end) (hdal_buffer_read)."""
    def read_into(self, out: WriteableBuffer, /, offset: int = 0) -> None:
        """Fills `out` with the buffer's bytes from byte `offset` (hdal_buffer_read)."""
    # The buffer protocol: PEP 688 names its slots from Python 3.12; 3.11 has
    # them without the names (tests/stubtest-allowlist.txt).  Unconditional, as
    # typeshed's builtins have them, so that memoryview(buf) checks on 3.11.
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, buffer: memoryview, /) -> None: ...
    # The C exchange API's table (docs/python.md, "The C exchange API").
    __dlpack_c_exchange_api__: Final[CapsuleType]
    __c_dlpack_exchange_api__: Final[CapsuleType]

class _SupportsDLPack(Protocol):
    def __dlpack__(self, /, *, stream: Any = ...) -> Any: ...
    def __dlpack_device__(self, /) -> tuple[int, int]: ...

def from_dlpack(
    x: _SupportsDLPack | CapsuleType | Any,
    /,
    *,
    device: _DeviceArg | None = None,
    copy: bool | None = None,
    stream: int | None = None,
) -> Buffer:
    """Imports a DLPack tensor (an object with __dlpack__, or a DLPack PyCapsule)."""

def devices() -> list[Device]:
    """The devices of the default context."""

def default_context() -> Context:
    """The context behind devices() and from_dlpack(device=None)."""

def dlpack_device_type_name(device_type: int, /) -> str | None:
    """The name of a DLPack device type (1 -> "kDLCPU"); None for a value DLPack does not define."""
