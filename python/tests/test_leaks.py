# SPDX-License-Identifier: BSD-3-Clause
# No leak of buffers, capsules or contexts over 100,000 imports: Python's
# allocations (tracemalloc), references (sys.getrefcount) and the process's
# memory (hdal's own mallocs, which tracemalloc does not see).
import gc
import sys
import tracemalloc

import numpy as np

import hdal

N = 100_000


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def _round(a, dev):
    b = hdal.from_dlpack(a)
    np.from_dlpack(b)
    hdal.from_dlpack(b.__dlpack__(max_version=(1, 0)), device=dev)
    b.__dlpack__()  # an export nobody consumes
    cap = a.__dlpack__()
    hdal.from_dlpack(cap)
    try:
        hdal.from_dlpack(cap)  # consumed: refused
    except hdal.Error:
        pass


def test_no_leak_over_100000_imports():
    a = np.arange(16, dtype=np.float32)
    ctx = hdal.Context(backends="cpu")
    dev = ctx.devices()[0]
    for _ in range(2000):  # warm up caches and free lists
        _round(a, dev)
    gc.collect()
    refs_a, refs_ctx = sys.getrefcount(a), sys.getrefcount(ctx)
    rss = _rss_kib()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(N // 2):  # two imports per round, three with the failed one
        _round(a, dev)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert sys.getrefcount(a) == refs_a and sys.getrefcount(ctx) == refs_ctx
    assert grown < 64 * 1024, "%d bytes of Python memory kept" % grown
    assert _rss_kib() - rss < 8 * 1024, "RSS grew by %d KiB" % (_rss_kib() - rss)


def test_no_leak_of_contexts():
    a = np.arange(4, dtype=np.float32)
    for _ in range(20):
        hdal.from_dlpack(a, device=hdal.Context(backends="cpu").devices()[0])
    gc.collect()
    rss = _rss_kib()
    refs = sys.getrefcount(a)
    for _ in range(300):
        ctx = hdal.Context(backends="cpu")
        b = hdal.from_dlpack(a, device=ctx.devices()[0])
        del ctx  # the buffer keeps it
        assert b.device.context.devices()[0].platform == "cpu"
        del b
    gc.collect()
    assert sys.getrefcount(a) == refs
    assert _rss_kib() - rss < 8 * 1024, "RSS grew by %d KiB" % (_rss_kib() - rss)


def test_legacy_producer_classes_are_not_kept_alive():
    # hdal remembers producer types whose __dlpack__ takes no max_version; the
    # memory is bounded (docs/python.md), so classes made on the fly die.
    import weakref

    refs = []
    for i in range(1000):
        cls = type(f"Legacy{i}", (), {
            "__init__": lambda self: setattr(self, "a", np.arange(4, dtype=np.int32)),
            "__dlpack__": lambda self, stream=None: self.a.__dlpack__(),
            "__dlpack_device__": lambda self: self.a.__dlpack_device__(),
        })
        b = hdal.from_dlpack(cls())
        assert np.asarray(b).tolist() == [0, 1, 2, 3]
        del b
        refs.append(weakref.ref(cls))
        del cls
    gc.collect()
    alive = sum(r() is not None for r in refs)
    assert alive <= 64, f"{alive} of 1000 producer classes still alive"
