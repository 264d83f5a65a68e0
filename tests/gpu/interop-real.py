# SPDX-License-Identifier: BSD-3-Clause
"""jax, torch and cupy through hdal on a real CUDA GPU (issue 36, item 5).

Run by tests/gpu/device-run.sh with the hdal package on PYTHONPATH:

    PYTHONPATH=<package> python3 tests/gpu/interop-real.py

Each check prints one line, "ok", "FAIL" or "SKIP", with what it saw; a part
whose library (jax with CUDA, torch with CUDA, cupy) or GPU is missing is
skipped with the reason.  The last line is "N passed, N failed, N skipped".
Exit status 0 when nothing failed and something ran, 77 when everything was
skipped (no GPU any framework can use), 1 when a check failed.

What is checked:
  * zero-copy on the GPU, the data pointers read through each library's own
    API (torch data_ptr(), jax unsafe_buffer_pointer(), cupy .data.ptr):
    jax -> hdal -> torch, torch -> hdal -> jax (jax.dlpack.from_dlpack of an
    hdal buffer, the seed's own call), cupy -> hdal -> torch/jax and back;
  * stream ordering: work queued on a framework's non-default stream, then
    imported by hdal through the exchange table (torch's current stream) or
    __dlpack__(stream=) as DLPack says, the values those of the last kernel;
  * torch's C exchange table (type(t).__dlpack_c_exchange_api__, torch >=
    2.10): hdal takes it (torch.Tensor.__dlpack__ is not called; counted by
    wrapping it) unless stream= is given;
  * memory back to its start once every owner lets go: torch's allocator,
    cupy's pool, hdal's pool, and the driver's free memory (cuMemGetInfo);
  * H2D, D2H and D2D copies of 256 MiB through hdal against the driver's own
    copies (cupy's cudaMemcpy, else torch's copy_), in GB/s, with the ratio.
"""
import gc
import os
import sys
import time
import traceback

# jax takes 75% of the GPU at start unless told otherwise, and keeps freed
# memory in its own allocator: neither suits memory accounting beside torch.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")

MIB = 1 << 20
BIG = 256 * MIB  # bytes, the size of the memory and bandwidth checks
SMALL = 1 << 20  # elements, the size of the exchange checks

passed = failed = skipped = 0


class Skip(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Skip(why)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def check(name, fn):
    """Runs fn(); one line: ok (fn's return value as detail), FAIL (the exception) or SKIP (why)."""
    global passed, failed, skipped
    try:
        detail = fn()
    except Skip as e:
        skipped += 1
        print("SKIP %s: %s" % (name, e), flush=True)
        return False
    except Exception as e:
        failed += 1
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
        tb = traceback.extract_tb(e.__traceback__)
        for fr in tb[-3:]:
            print("       at %s:%d %s" % (os.path.basename(fr.filename), fr.lineno, fr.line), flush=True)
        return False
    passed += 1
    print("ok   %s%s" % (name, (": " + str(detail)) if detail else ""), flush=True)
    return True


def finish():
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    if failed:
        sys.exit(1)
    if passed_gpu == 0:
        print("SKIP: no GPU check ran (%s)" % no_gpu_why, flush=True)
        sys.exit(77)
    sys.exit(0)


# ---------------------------------------------------------------- the libraries
import hdal  # noqa: E402

try:
    import numpy as np
except ImportError as e:
    print("0 passed, 0 failed, 0 skipped\nSKIP: no numpy (%s), which every check uses" % e, flush=True)
    sys.exit(77)

passed_gpu = 0
no_gpu_why = ""
ctx = hdal.default_context()
gpus = [d for d in ctx.devices() if d.platform == "cuda"]
cpu = next(d for d in ctx.devices() if d.platform == "cpu")
print("hdal %s from %s; backends %s" % (hdal.__version__, hdal.__file__, ctx.backends()), flush=True)

torch = jax = jnp = cupy = None
why = {}
try:
    import torch as _t
    if _t.cuda.is_available():
        torch = _t
    else:
        why["torch"] = "torch %s sees no CUDA GPU (torch.version.cuda=%s)" % (_t.__version__, _t.version.cuda)
except Exception as e:  # ImportError, or a CUDA library that does not load
    why["torch"] = "no torch (%s: %s)" % (type(e).__name__, e)
try:
    import jax as _j
    try:
        if _j.devices("gpu"):
            jax = _j
            import jax.numpy as jnp
            import jax.dlpack  # noqa: F401
        else:
            why["jax"] = "jax %s lists no GPU" % _j.__version__
    except Exception as e:  # RuntimeError: no GPU backend (the plugin did not load, no device)
        why["jax"] = "jax %s has no GPU backend (%s)" % (_j.__version__, (str(e).splitlines() or [""])[0][:160])
except Exception as e:
    why["jax"] = "no jax (%s: %s)" % (type(e).__name__, e)
try:
    import cupy as _c
    try:
        if _c.cuda.runtime.getDeviceCount() > 0:
            cupy = _c
        else:
            why["cupy"] = "cupy %s sees no GPU" % _c.__version__
    except Exception as e:  # cupy's CUDARuntimeError without a driver
        why["cupy"] = "cupy %s sees no GPU (%s)" % (_c.__version__, e)
except Exception as e:
    why["cupy"] = "no cupy (%s: %s)" % (type(e).__name__, e)
for name, mod in (("torch", torch), ("jax", jax), ("cupy", cupy)):
    print("%-5s %s" % (name, ("%s on the GPU" % mod.__version__) if mod else why[name]), flush=True)

if not gpus:
    no_gpu_why = "hdal has no CUDA device: %s" % dict(ctx.backends()).get("cuda", "no cuda backend")
elif not (torch or jax or cupy):
    no_gpu_why = "no framework with a CUDA GPU (torch, jax, cupy)"


def need_torch():
    need(gpus, no_gpu_why or "no hdal CUDA device")
    need(torch, why.get("torch"))


def need_jax():
    need(gpus, no_gpu_why or "no hdal CUDA device")
    need(jax, why.get("jax"))


def need_cupy():
    need(gpus, no_gpu_why or "no hdal CUDA device")
    need(cupy, why.get("cupy"))


def gpu_check(name, fn):
    global passed_gpu
    if check(name, fn):
        passed_gpu += 1


def sync():
    if torch:
        torch.cuda.synchronize()
    if cupy:
        cupy.cuda.runtime.deviceSynchronize()


# ---------------------------------------------------------------- devices
def devices_agree():
    need(gpus and (torch or jax or cupy), no_gpu_why)
    counts = {"hdal": len(gpus)}
    if torch:
        counts["torch"] = torch.cuda.device_count()
    if jax:
        counts["jax"] = len(jax.devices("gpu"))
    if cupy:
        counts["cupy"] = cupy.cuda.runtime.getDeviceCount()
    expect(len(set(counts.values())) == 1, "GPU counts differ: %s" % counts)
    g = gpus[0]
    expect(g.dlpack_device == (2, 0), "hdal's first GPU is %s, not (kDLCUDA, 0)" % (g.dlpack_device,))
    return "%s; %s" % (counts, g.kind)


gpu_check("every library sees the same GPUs", devices_agree)
gpu = gpus[0] if gpus else None


def hdal_ptr(b):
    """An hdal CUDA buffer's data pointer, read by a consumer (cupy, else torch)."""
    if cupy:
        return cupy.from_dlpack(b).data.ptr
    return torch.from_dlpack(b).data_ptr()


# ---------------------------------------------------------------- zero-copy across the three
def jax_to_torch():
    need_jax()
    need_torch()
    x = jnp.arange(SMALL, dtype=jnp.float32) * 2
    x.block_until_ready()
    p = x.unsafe_buffer_pointer()
    b = hdal.from_dlpack(x)
    expect(b.device == gpu and b.is_view, "hdal's import of a jax array: device %s, is_view %s" % (b.device, b.is_view))
    t = torch.from_dlpack(b)
    expect(t.device.type == "cuda", "torch got a tensor on %s" % t.device)
    expect(t.data_ptr() == p, "pointers differ: jax %#x, torch %#x" % (p, t.data_ptr()))
    expect(np.array_equal(t.cpu().numpy(), np.asarray(x)), "values differ")
    return "%#x, hdal read_only=%s" % (p, b.read_only)


def torch_to_jax():
    need_jax()
    need_torch()
    t = torch.arange(SMALL, dtype=torch.float32, device="cuda") * 3
    b = hdal.from_dlpack(t)
    expect(b.is_view and b.device == gpu, "hdal's import of a torch tensor: is_view %s, device %s" % (b.is_view, b.device))
    j = jax.dlpack.from_dlpack(b)  # the seed's own call
    j.block_until_ready()
    expect(j.unsafe_buffer_pointer() == t.data_ptr(),
           "pointers differ: torch %#x, jax %#x" % (t.data_ptr(), j.unsafe_buffer_pointer()))
    expect(np.array_equal(np.asarray(j), t.cpu().numpy()), "values differ")
    expect(list(j.devices())[0].platform == "gpu", "jax put it on %s" % j.devices())
    return "%#x" % t.data_ptr()


def hdal_buffer_to_jax():
    need_jax()
    h = np.arange(SMALL, dtype=np.float32)
    b = hdal.from_dlpack(h, device=gpu)  # hdal's own memory, copied onto the GPU
    expect(not b.is_view and b.device == gpu, "not an hdal copy on the GPU")
    p = hdal_ptr(b) if (cupy or torch) else None
    j = jax.dlpack.from_dlpack(b)
    j.block_until_ready()
    if p is not None:
        expect(j.unsafe_buffer_pointer() == p, "pointers differ: hdal %#x, jax %#x" % (p, j.unsafe_buffer_pointer()))
    del b
    gc.collect()
    expect(np.array_equal(np.asarray(j + 0), h), "values differ (after hdal's reference went)")
    return "%#x" % j.unsafe_buffer_pointer()


def cupy_round():
    need_cupy()
    c = cupy.arange(SMALL, dtype=cupy.float32) * 5
    b = hdal.from_dlpack(c)
    expect(b.is_view and b.device == gpu, "hdal's import of a cupy array: is_view %s" % b.is_view)
    c2 = cupy.from_dlpack(b)
    expect(c2.data.ptr == c.data.ptr, "pointers differ: cupy %#x, back %#x" % (c.data.ptr, c2.data.ptr))
    seen = ["cupy->hdal->cupy"]
    if torch:
        t = torch.from_dlpack(b)
        expect(t.data_ptr() == c.data.ptr, "pointers differ: cupy %#x, torch %#x" % (c.data.ptr, t.data_ptr()))
        t2 = torch.arange(SMALL, dtype=torch.float32, device="cuda")
        c3 = cupy.from_dlpack(hdal.from_dlpack(t2))
        expect(c3.data.ptr == t2.data_ptr(), "torch->hdal->cupy: pointers differ")
        expect(bool((c3 == cupy.arange(SMALL, dtype=cupy.float32)).all()), "torch->hdal->cupy: values differ")
        seen += ["cupy->hdal->torch", "torch->hdal->cupy"]
    if jax:
        j = jax.dlpack.from_dlpack(b)
        j.block_until_ready()
        expect(j.unsafe_buffer_pointer() == c.data.ptr, "pointers differ: cupy %#x, jax %#x" % (c.data.ptr, j.unsafe_buffer_pointer()))
        x = jnp.ones(SMALL, dtype=jnp.float32)
        x.block_until_ready()
        c4 = cupy.from_dlpack(hdal.from_dlpack(x))
        expect(c4.data.ptr == x.unsafe_buffer_pointer(), "jax->hdal->cupy: pointers differ")
        seen += ["cupy->hdal->jax", "jax->hdal->cupy"]
    expect(bool((c2 == c).all()), "values differ")
    return ", ".join(seen)


gpu_check("jax -> hdal -> torch, zero-copy", jax_to_torch)
gpu_check("torch -> hdal -> jax.dlpack.from_dlpack, zero-copy", torch_to_jax)
gpu_check("hdal's own CUDA buffer -> jax.dlpack.from_dlpack, zero-copy, outlives the buffer", hdal_buffer_to_jax)
gpu_check("cupy <-> hdal <-> torch/jax, zero-copy", cupy_round)

# ---------------------------------------------------------------- streams
K = 24  # kernels queued before the hand-over: the last one's values must be read


def queued_torch(stream):
    with torch.cuda.stream(stream):
        t = torch.zeros(BIG // 4, dtype=torch.float32, device="cuda")
        for _ in range(K):
            t.add_(1.0)
    return t


def expect_all(host, value, what):
    a = np.asarray(host)
    bad = np.count_nonzero(a != value)
    expect(bad == 0, "%s: %d of %d elements are not %s (first %s)" % (what, bad, a.size, value, a.flat[0]))


def torch_stream_table():
    need_torch()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = queued_torch(s)
        b = hdal.from_dlpack(t, device=cpu)  # no stream=: the table's current_work_stream (s), or __dlpack__
    expect_all(b, float(K), "hdal's copy of torch's side-stream tensor")
    s.synchronize()
    return "%d kernels on a side stream (%#x), 256 MiB copied to the host" % (K, s.cuda_stream)


def torch_stream_kw(which):
    def run():
        need_torch()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            t = queued_torch(s)
            st = 1 if which == "legacy" else s.cuda_stream
            b = hdal.from_dlpack(t, device=cpu, stream=st)
        expect_all(b, float(K), "hdal's copy with stream=%s" % which)
        s.synchronize()
        return "__dlpack__(stream=%s)" % ("1, the legacy default stream" if which == "legacy" else "torch's side stream")
    return run


def torch_consumes_on_side_stream():
    need_torch()
    b = hdal.from_dlpack(np.full(BIG // 4, 7.0, dtype=np.float32), device=gpu)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.from_dlpack(b)  # torch passes its stream to hdal's __dlpack__
        u = t * 2
    s.synchronize()
    if cupy:
        expect(t.data_ptr() == hdal_ptr(b), "not zero-copy")
    expect_all(u.cpu(), 14.0, "torch's kernel on hdal's buffer")
    return "hdal's buffer read on torch's side stream"


def cupy_stream(kw):
    def run():
        need_cupy()
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            c = cupy.zeros(BIG // 4, dtype=cupy.float32)
            for _ in range(K):
                c += 1
            b = hdal.from_dlpack(c, device=cpu, **kw)
        expect_all(b, float(K), "hdal's copy of cupy's non-blocking-stream array %s" % (kw or "(no stream=)"))
        s.synchronize()
        return "%d kernels on a non-blocking stream, %s" % (K, "stream=1" if kw else "no stream=")
    return run


def jax_async():
    need_jax()
    x = jnp.zeros(BIG // 4, dtype=jnp.float32)
    for _ in range(K):
        x = x + 1.0  # dispatched asynchronously; no block_until_ready
    b = hdal.from_dlpack(x, device=cpu)
    expect_all(b, float(K), "hdal's copy of jax's pending result")
    return "jax's pending work, imported without waiting"


gpu_check("stream: torch side stream -> hdal (table or __dlpack__), values of the last kernel", torch_stream_table)
gpu_check("stream: torch side stream -> hdal stream=1", torch_stream_kw("legacy"))
gpu_check("stream: torch side stream -> hdal stream=<side stream>", torch_stream_kw("side"))
gpu_check("stream: hdal buffer -> torch on a side stream", torch_consumes_on_side_stream)
gpu_check("stream: cupy non-blocking stream -> hdal stream=1", cupy_stream({"stream": 1}))
gpu_check("stream: cupy non-blocking stream -> hdal, no stream=", cupy_stream({}))
gpu_check("stream: jax async dispatch -> hdal", jax_async)


# ---------------------------------------------------------------- torch's exchange table
def torch_table():
    need_torch()
    api = getattr(type(torch.empty(0)), "__dlpack_c_exchange_api__", None)
    need(api is not None, "torch %s has no __dlpack_c_exchange_api__ (torch >= 2.10 has)" % torch.__version__)
    own = "__dlpack__" in torch.Tensor.__dict__
    orig = torch.Tensor.__dict__.get("__dlpack__", torch.Tensor.__dlpack__)
    calls = []

    def counting(self, *a, **k):
        calls.append(k.get("stream"))
        return orig(self, *a, **k)

    torch.Tensor.__dlpack__ = counting
    try:
        t = torch.arange(SMALL, dtype=torch.float32, device="cuda")
        b = hdal.from_dlpack(t)
        expect(not calls, "torch.Tensor.__dlpack__ was called %d time(s): hdal did not take torch's table" % len(calls))
        expect(b.is_view and hdal_ptr(b) == t.data_ptr(), "the table's import is not zero-copy")
        b2 = hdal.from_dlpack(t, stream=1)
        expect(calls == [1], "with stream=1 hdal should ask __dlpack__(stream=1), got calls %s" % calls)
        expect(b2.is_view, "not zero-copy through __dlpack__")
    finally:
        if own:
            torch.Tensor.__dlpack__ = orig
        else:
            del torch.Tensor.__dlpack__
    return "table used without stream= (0 __dlpack__ calls), __dlpack__ with stream=1 (1 call); %r" % (api,)


gpu_check("torch's C exchange table taken by hdal.from_dlpack", torch_table)


# ---------------------------------------------------------------- memory back to its start
def snapshot(release):
    gc.collect()
    sync()
    if release:
        if torch:
            torch.cuda.empty_cache()
        if cupy:
            cupy.get_default_memory_pool().free_all_blocks()
        gpu.trim()
        sync()
    s = {"hdal": gpu.memory_stats()["bytes_in_use"]}
    if torch:
        s["torch"] = torch.cuda.memory_allocated()
    if cupy:
        s["cupy"] = cupy.get_default_memory_pool().used_bytes()
        s["free"] = cupy.cuda.runtime.memGetInfo()[0]
    elif torch:
        s["free"] = torch.cuda.mem_get_info()[0]
    return s


def one_round(r):
    """256 MiB tensors of each library passed through hdal to the others, all alive at once."""
    n = BIG // 4
    keep = []
    h = hdal.from_dlpack(np.full(n, r, dtype=np.float32), device=gpu)  # hdal's pool
    keep.append(h)
    if torch:
        t = torch.full((n,), float(r), device="cuda")
        bt = hdal.from_dlpack(t)
        keep += [t, bt, torch.from_dlpack(h)]
    if cupy:
        c = cupy.full(n, r, dtype=cupy.float32)
        bc = hdal.from_dlpack(c)
        keep += [c, bc, cupy.from_dlpack(h)]
        if torch:
            keep += [torch.from_dlpack(bc), cupy.from_dlpack(bt)]
    if jax:
        x = jnp.full(n, r, dtype=jnp.float32)
        bx = hdal.from_dlpack(x)
        keep += [x, bx, jax.dlpack.from_dlpack(h)]
        if torch:
            keep += [torch.from_dlpack(bx), jax.dlpack.from_dlpack(bt)]
        if cupy:
            keep += [cupy.from_dlpack(bx), jax.dlpack.from_dlpack(bc)]
    sync()
    # let go in an order unlike the making: consumers before and after producers
    keep.reverse()
    keep = keep[1::2] + keep[0::2]
    while keep:
        keep.pop()
    gc.collect()


def memory_back():
    need(gpus, no_gpu_why)
    need(torch or cupy, "neither torch nor cupy to read the driver's free memory")
    one_round(0)  # warm-up: kernels loaded, pools made
    base_live = snapshot(False)
    base = snapshot(True)
    for r in range(1, 4):
        one_round(r)
    live = snapshot(False)
    for k in ("hdal", "torch", "cupy"):
        if k in live:
            expect(live[k] == base_live[k], "%s's bytes in use: %d before, %d after (%+d)" %
                   (k, base_live[k], live[k], live[k] - base_live[k]))
    after = snapshot(True)
    drop = base["free"] - after["free"]
    expect(drop < 64 * MIB, "the driver's free memory is %.1f MiB lower after 3 rounds of 256 MiB exchanges "
           "and every pool emptied (%s -> %s)" % (drop / MIB, base, after))
    return "allocators back to %s; driver free memory %+.1f MiB (libraries: %s)" % (
        {k: v for k, v in live.items() if k != "free"}, -drop / MIB,
        "+".join(k for k, m in (("torch", torch), ("jax", jax), ("cupy", cupy)) if m))


gpu_check("memory back to its start after everyone lets go (3 rounds of 256 MiB)", memory_back)


# ---------------------------------------------------------------- bandwidth
def best(fn, rounds=5):
    fn()  # warm-up (pools, page tables)
    ts = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def gbs(t):
    return BIG / t / 1e9


def bandwidth():
    need(gpus, no_gpu_why)
    need(cupy or torch, "neither cupy nor torch for the driver's own copies")
    n = BIG // 4
    host = np.arange(n, dtype=np.float32)
    host_out = np.empty_like(host)
    rows = []
    out = {}

    def h2d_hdal():
        out["g"] = hdal.from_dlpack(host, device=gpu)

    def d2h_hdal():
        out["h"] = out["g"].to_device(cpu)

    def d2d_hdal():
        out["d"] = out["g"].to_device(gpu)

    if cupy:
        dev_a = cupy.empty(n, dtype=cupy.float32)
        dev_b = cupy.empty(n, dtype=cupy.float32)
        rt = cupy.cuda.runtime
        ref = "cupy cudaMemcpy"

        def h2d_ref():
            rt.memcpy(dev_a.data.ptr, host.ctypes.data, BIG, rt.memcpyHostToDevice)

        def d2h_ref():
            rt.memcpy(host_out.ctypes.data, dev_a.data.ptr, BIG, rt.memcpyDeviceToHost)

        def d2d_ref():
            rt.memcpy(dev_b.data.ptr, dev_a.data.ptr, BIG, rt.memcpyDeviceToDevice)
    else:
        dev_a = torch.empty(n, dtype=torch.float32, device="cuda")
        dev_b = torch.empty_like(dev_a)
        th, tho = torch.from_numpy(host), torch.from_numpy(host_out)
        ref = "torch copy_"

        def h2d_ref():
            dev_a.copy_(th)

        def d2h_ref():
            tho.copy_(dev_a)

        def d2d_ref():
            dev_b.copy_(dev_a)

    for what, mine, theirs in (("H2D", h2d_hdal, h2d_ref), ("D2H", d2h_hdal, d2h_ref), ("D2D", d2d_hdal, d2d_ref)):
        a, r = gbs(best(mine)), gbs(best(theirs))
        rows.append("%s hdal %.1f GB/s, %s %.1f GB/s, ratio %.2f%s" % (
            what, a, ref, r, a / r, "  (below half the driver's)" if a < r / 2 else ""))
    # the copies were right
    expect(np.array_equal(np.asarray(out["h"]), host), "D2H through hdal: values differ")
    expect(np.array_equal(np.asarray(out["d"].to_device(cpu)), host), "D2D through hdal: values differ")
    if torch:  # pinned host memory, which hdal's import gets from torch as plain kDLCPU memory
        pinned = torch.arange(n, dtype=torch.float32).pin_memory()
        dst = torch.empty(n, dtype=torch.float32, device="cuda")
        a = gbs(best(lambda: out.__setitem__("p", hdal.from_dlpack(pinned, device=gpu))))
        r = gbs(best(lambda: dst.copy_(pinned)))
        # Pinned memory the GPU addresses is imported as a view (docs/cuda.md):
        # no transfer happens, so there is no bandwidth to compare.
        if torch.from_dlpack(out["p"]).data_ptr() == pinned.data_ptr():
            rows.append("H2D pinned hdal: a zero-copy view of the pinned memory (no transfer), torch copy_ %.1f GB/s" % r)
        else:
            rows.append("H2D pinned hdal %.1f GB/s, torch copy_ %.1f GB/s, ratio %.2f" % (a, r, a / r))
        expect(torch.equal(torch.from_dlpack(out["p"]), dst), "pinned H2D through hdal: values differ")
    for row in rows:
        print("       " + row, flush=True)
    return "256 MiB, best of 5"


gpu_check("bandwidth of hdal's copies against the driver's (values right)", bandwidth)

finish()
