# SPDX-License-Identifier: BSD-3-Clause
"""hdal as a type checker sees it: `mypy --strict` on this file checks the stubs
(hdal/__init__.pyi) against typical use (docs/python.md, "Signatures and
stubs").  Each assert_type pins what a call gives; each `# type: ignore[...]`
in rejected() is a misuse the stubs must refuse (--strict warns about an
ignore that is not needed, so a stub that grows too lax fails).

Not a pytest file (no test_ prefix); importing it runs nothing.
test_signatures.py runs main() as well, so that what the types promise is
also what the runtime does.
"""
from typing import Any, Literal, assert_type

import numpy as np

import hdal


def main() -> None:
    assert_type(hdal.__version__, str)
    ctx = hdal.Context(backends="cpu")
    assert_type(ctx, hdal.Context)
    assert_type(hdal.Context(backends=None, backend_path=None, selector="cpu:0"), hdal.Context)
    assert_type(hdal.default_context(), hdal.Context)
    assert_type(ctx.process_index, int)
    assert_type(ctx.backends(), list[tuple[str, str]])
    for st in ctx.backend_states():
        assert_type(st, hdal.BackendState)
        assert_type(st.state, Literal["ok", "disabled", "unavailable", "failed"])
        assert_type(st.reason, str | None)
        name, state, count, refused, reason = st
        assert_type(count, int)
        if st.state == "ok":
            assert st.device_count == count >= 0
    devs = ctx.devices()
    assert_type(devs, list[hdal.Device])
    cpu = ctx.device(0)
    assert cpu == devs[0] and hash(cpu) == hash(devs[0])
    assert_type(cpu.platform, str)
    assert_type(cpu.dlpack_device, tuple[int, int])
    assert_type(cpu.runtime_class, Literal["pjrt", "ifrt-native"])
    assert_type(cpu.runtime_class_reason, str | None)
    assert_type(cpu.attributes, dict[str, str])
    assert_type(cpu.typed_attributes, dict[str, str | int | bool])
    assert_type(cpu.context, hdal.Context)
    assert_type(cpu.memory_stats()["bytes_in_use"], int)
    assert_type(cpu.trim(), None)
    assert_type(hdal.devices(), list[hdal.Device])
    loc = cpu.locality
    assert_type(loc, hdal.Locality | None)
    if loc is not None:  # None where hdal cannot place the device
        assert_type(loc.cpuset, str)
        assert_type(loc.pcie_root, str | None)
        cpuset, nodes, root = loc
        assert_type(nodes, tuple[int, ...])
        assert cpuset == loc.cpuset and nodes == loc.numa_nodes and root is None
    source, detail = ctx.topology_source
    assert_type(source, Literal["system", "xml", "synthetic", "other", "unavailable"])
    assert_type(detail, str | None)
    assert_type(hdal.dlpack_device_type_name(hdal.kDLCPU), str | None)

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    buf = hdal.from_dlpack(a, copy=False)
    assert_type(buf, hdal.Buffer)
    assert_type(buf.shape, tuple[int, ...])
    assert_type(buf.dtype, str)
    assert_type(buf.device, hdal.Device)
    assert_type(buf.__dlpack_device__(), tuple[int, int])
    # device= as an hdal.Device, "cpu" or a DLPack pair; to_device likewise.
    for where in (cpu, "cpu", (hdal.kDLCPU, 0)):
        assert hdal.from_dlpack(a, device=where, copy=True).device.platform == "cpu"
        assert buf.to_device(where).shape == (2, 3)
    capsule = buf.__dlpack__(max_version=(1, 0), copy=None, dl_device=None, stream=None)
    assert hdal.from_dlpack(capsule).shape == (2, 3)
    assert np.from_dlpack(buf).shape == (2, 3)  # hdal.Buffer is what numpy's stubs call a DLPack producer
    assert memoryview(buf).nbytes == 24  # the buffer protocol, as typeshed's builtins have it
    try:
        hdal.from_dlpack(a[:, ::2], copy=False)
    except hdal.CopyError as e:
        assert_type(e.code, str | None)
        assert isinstance(e, (hdal.BufferError, ValueError, hdal.Error))


def near(a: hdal.Device, b: hdal.Device) -> None:
    """Never called (a binding would move the tests' threads): what links and bindings give."""
    link = a.link(b)
    assert_type(link, hdal.Link)
    assert_type(link.kind, Literal["same", "fabric", "pix", "pxb", "phb", "node", "sys"])
    assert_type(link.peer_access, bool)
    assert_type(link.fabric, str | None)
    assert_type(link.bandwidth_mbps, int | None)
    kind, peer, fabric, bandwidth, links = link
    assert_type(links, int | None)
    assert_type(a.bind(), None)
    assert_type(a.bind(process=True, memory=False), None)


def rejected(buf: hdal.Buffer, ctx: hdal.Context, a: Any) -> None:
    """Never called: misuses the stubs refuse."""
    ctx.device("0")  # type: ignore[arg-type]
    buf.to_device(device="cpu")  # type: ignore[call-arg]
    buf.to_device(0)  # type: ignore[arg-type]
    buf.__dlpack__((1, 0))  # type: ignore[call-arg, arg-type]
    buf.__dlpack__(max_version=1)  # type: ignore[arg-type]
    hdal.from_dlpack(x=a)  # type: ignore[call-arg]
    hdal.from_dlpack(a, copy="never")  # type: ignore[arg-type]
    hdal.from_dlpack(a, device=0)  # type: ignore[arg-type]
    hdal.Context(selectr="cpu")  # type: ignore[call-arg]
    hdal.Context("cpu", None, None, None)  # type: ignore[call-arg]
    buf.shape = (1,)  # type: ignore[misc]
    x: Literal["ok", "failed"] = ctx.backend_states()[0].state  # type: ignore[assignment]
    del x
    ctx.device(0).link("cpu")  # type: ignore[arg-type]
    ctx.device(0).bind(True)  # type: ignore[call-arg]
    ctx.device(0).locality.cpuset  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
    print("typed_usage: all right")
