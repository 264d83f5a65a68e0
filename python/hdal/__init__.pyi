# SPDX-License-Identifier: BSD-3-Clause
# Type stubs of the hdal package (the C extension hdal._hdal re-exported).
import builtins
from typing import Any, Literal, Optional, Protocol, Union

__version__: str
__all__: list[str]

kDLCPU: int
kDLCUDA: int
kDLCUDAHost: int
kDLCUDAManaged: int
kDLOpenCL: int
kDLROCM: int
kDLROCMHost: int
kDLOneAPI: int
kDLVulkan: int

class Error(RuntimeError):
    """An error of the hdal library: str(e) is its message, e.code its code's name."""

    code: Optional[str]
    """The code's name as absl::StatusCode spells it, e.g. "FAILED_PRECONDITION"."""

class BufferError(Error, builtins.BufferError):
    """A buffer that cannot be exchanged through DLPack as asked (Buffer.__dlpack__)."""

class CopyError(BufferError, ValueError):
    """copy=False, and the exchange needs a copy (from_dlpack, Buffer.__dlpack__)."""

class BackendState(tuple[str, str, int, int, Optional[str]]):
    """A backend's status as data (Context.backend_states())."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> Literal["ok", "disabled", "unavailable"]: ...
    @property
    def device_count(self) -> int: ...
    @property
    def refused_count(self) -> int: ...
    @property
    def reason(self) -> Optional[str]: ...

class Context:
    """The devices hdal finds, across its backends."""

    def __init__(self, backends: Optional[str] = None, backend_path: Optional[str] = None) -> None: ...
    def devices(self) -> list[Device]: ...
    def device(self, id: int) -> Device: ...
    def backends(self) -> list[tuple[str, str]]:
        """(name, status) of each backend, e.g. ("cpu", "ok: 1 device"); words for people."""
    def backend_states(self) -> list[BackendState]:
        """Each backend's status as data, in the order of backends()."""
    @property
    def process_index(self) -> int: ...
    @property
    def process_count(self) -> int: ...

class Device:
    """A compute device of a Context."""

    @property
    def id(self) -> int: ...
    @property
    def platform(self) -> str: ...
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
    def runtime_class_reason(self) -> Optional[str]: ...
    @property
    def dlpack_device(self) -> tuple[int, int]: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def numa_node(self) -> int: ...
    @property
    def attributes(self) -> dict[str, str]: ...
    @property
    def typed_attributes(self) -> dict[str, Union[str, int, bool]]:
        """The attributes with their backend's types: int, bool, or str."""
    @property
    def context(self) -> Context: ...
    def memory_stats(self) -> dict[str, int]:
        """bytes_in_use, peak_bytes_in_use, bytes_reserved, bytes_limit, num_allocs, num_pool_hits."""
    def trim(self) -> None: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

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
        *,
        stream: Optional[int] = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def to_device(self, device: Device) -> Buffer: ...
    def __buffer__(self, flags: int) -> memoryview: ...

class _SupportsDLPack(Protocol):
    def __dlpack__(self, *, stream: Any = ...) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

def from_dlpack(
    x: Union[_SupportsDLPack, Any],
    /,
    *,
    device: Optional[Device] = None,
    copy: Optional[bool] = None,
    stream: Optional[int] = None,
) -> Buffer:
    """Imports a DLPack tensor (an object with __dlpack__, or a DLPack PyCapsule)."""

def devices() -> list[Device]:
    """The devices of the default context."""

def default_context() -> Context: ...
