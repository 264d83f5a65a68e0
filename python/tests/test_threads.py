# SPDX-License-Identifier: BSD-3-Clause
# Several threads importing and exporting at once (the GIL is released
# around hdal's work), and one capsule raced by many importers.
import threading

import numpy as np

import hdal
from conftest import assert_clean_run, capsule_name


def _worker(a, n, errors):
    try:
        for i in range(n):
            b = hdal.from_dlpack(a)
            c = np.from_dlpack(b)
            assert c[3] == 3
            d = hdal.from_dlpack(b.__dlpack__(max_version=(1, 0)))
            assert d.is_view and np.asarray(d)[5] == 5
            if i % 16 == 0:
                e = hdal.from_dlpack(a[::2])  # a copy, without the GIL
                assert np.asarray(e).tolist()[:2] == [0, 2]
                assert np.asarray(b.to_device(b.device))[7] == 7
    except BaseException as exc:  # noqa: B036 - reported to the main thread
        errors.append(exc)


def test_threads_import_and_export():
    a = np.arange(64, dtype=np.float32)
    errors = []
    ts = [threading.Thread(target=_worker, args=(a, 400, errors)) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_one_capsule_many_importers():
    for _ in range(50):
        a = np.arange(4, dtype=np.int32)
        cap = a.__dlpack__()
        got, errors = [], []
        barrier = threading.Barrier(6)

        def imp():
            barrier.wait()
            try:
                got.append(hdal.from_dlpack(cap))
            except hdal.Error as e:
                errors.append(str(e))

        ts = [threading.Thread(target=imp) for _ in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(got) == 1 and len(errors) == 5  # consumed exactly once
        assert capsule_name(cap) == "used_dltensor"
        assert all('got "used_dltensor"' in e for e in errors)


def test_clean_exit_with_threads():
    assert_clean_run("""
        import threading, numpy as np, hdal
        a = np.arange(32, dtype=np.float64)
        keep = []
        def work():
            for _ in range(300):
                keep.append(hdal.from_dlpack(a))
                np.from_dlpack(keep[-1])
        ts = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print(len(keep))
        """, expect_out="1200\n")


def test_contexts_created_from_several_threads():
    # With the OpenCL backend on PoCL, two discoveries at once used to crash in
    # PoCL; the library serialises PoCL's part itself, the package adds no lock.
    assert_clean_run("""
        import threading, hdal
        out = []
        def work():
            c = hdal.Context(backends="cpu,opencl")
            out.append(len(c.devices()))
            hdal.devices()
        ts = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print(len(set(out)), len(out))
        """, expect_out="1 4\n")
