# SPDX-License-Identifier: BSD-3-Clause
# A consumer's mistakes with Buffer.__dlpack__'s capsule (docs/python.md, "A
# consumer's mistakes"; issue 46 item 2): whatever a consumer does, the
# tensor's release runs once, and the capsule's destructor never reads freed
# memory.  ctypes plays the consumers: it reads the tensor out of the capsule
# (PyCapsule_GetPointer), renames the capsule or not (PyCapsule_SetName), and
# calls the tensor's deleter through a function pointer, with the GIL
# (PYFUNCTYPE) or without it (CFUNCTYPE releases it), from this thread,
# another Python thread, or a thread of _exchange_probe's that Python never saw.
#
# Each case on three paths, legacy and versioned:
#   cpu      the package's own CPU export: the tensor holds the hdal.Buffer
#            (sys.getrefcount shows each release);
#   library  the library's zero-copy export (dl_device given): the tensor holds
#            a reference of the library's buffer, whose memory the device's
#            memory_stats counts (a second release frees it under the object);
#   copy     the library's copy (copy=True): the copy's bytes are counted.
#
# Run as a script (python3 test_capsule_misuse.py [legacy|versioned]) it runs
# every case without pytest, for valgrind (docs/python.md).
import ctypes
import gc
import importlib
import itertools
import os
import sys
import threading

import numpy as np
import pytest

import hdal
from conftest import DLManagedTensor, DLManagedTensorVersioned, assert_clean_run, capsule_name

# Functions of their own (not ctypes.pythonapi's shared ones, which other modules configure).
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))
_set_destructor = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetDestructor", ctypes.pythonapi))

NAMES = {False: "dltensor", True: "dltensor_versioned"}
# A capsule keeps the name's pointer: these live as long as the module.
USED = {False: ctypes.c_char_p(b"used_dltensor"), True: ctypes.c_char_p(b"used_dltensor_versioned")}
KINDS = [False, True]
KIND_IDS = ["legacy", "versioned"]
PATHS = ["cpu", "library", "copy"]
N = 16  # float32 elements: 64 bytes
CTX = hdal.Context(backends="cpu")
DEV = CTX.devices()[0]


def _bytes():
    return DEV.memory_stats()["bytes_in_use"]


_probe = []


def probe():
    """_exchange_probe (built for make check), for a thread Python never saw; skips without it."""
    if not _probe:
        path = os.environ.get("HDAL_EXCHANGE_PROBE")
        if not path:
            pytest.skip("HDAL_EXCHANGE_PROBE is not set (make check sets it)")
        sys.path.insert(0, path)
        try:
            _probe.append(importlib.import_module("_exchange_probe"))
        finally:
            sys.path.remove(path)
    return _probe[0]


class Subject:
    """A buffer of hdal's CPU device, its memory hdal's own (memory_stats counts it),
    and what each path's exports change while they live."""

    def __init__(self, path, shape=(N,)):
        self.path = path
        self.base_bytes = _bytes()
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        self.buf = hdal.from_dlpack(a, device=DEV).to_device(DEV)
        self.nbytes = a.nbytes
        gc.collect()
        self.refs, self.bytes = sys.getrefcount(self.buf), _bytes()
        assert self.bytes == self.base_bytes + self.nbytes

    def check(self, live):
        """`live` exports not released yet, every other one released exactly once."""
        gc.collect()
        refs = self.refs + (live if self.path == "cpu" else 0)
        nbytes = self.bytes + (live * self.nbytes if self.path == "copy" else 0)
        assert (sys.getrefcount(self.buf), _bytes()) == (refs, nbytes), "expected %d live export(s)" % live

    def finish(self):
        """The buffer dropped: nothing of it is left (a release missing would keep its memory)."""
        self.check(0)
        del self.buf
        gc.collect()
        assert _bytes() == self.base_bytes


class Consumer:
    """A consumer's hands on one export: the tensor's address, its deleter, the capsule."""

    def __init__(self, buf, versioned, path):
        kw = {"max_version": (1, 0)} if versioned else {}
        if path == "library":
            kw["dl_device"] = (1, 0)  # its own device: zero-copy, through the library
        elif path == "copy":
            kw["copy"] = True
        self.versioned = versioned
        self.capsule = buf.__dlpack__(**kw)
        assert capsule_name(self.capsule) == NAMES[versioned]
        self.address = _get_pointer(self.capsule, NAMES[versioned].encode())
        struct = DLManagedTensorVersioned if versioned else DLManagedTensor
        self.deleter = ctypes.c_void_p.from_address(self.address + struct.deleter.offset).value
        self.tensor = struct.from_address(self.address).dl_tensor

    def take(self):
        """What a consumer does first: the capsule renamed "used_*"."""
        assert _set_name(self.capsule, USED[self.versioned]) == 0

    def delete(self, gil=True):
        proto = ctypes.PYFUNCTYPE if gil else ctypes.CFUNCTYPE  # CFUNCTYPE calls it with the GIL released
        proto(None, ctypes.c_void_p)(self.deleter)(self.address)

    def values(self):
        """The tensor's data, read through the tensor: its memory still the consumer's."""
        return list((ctypes.c_float * N).from_address(self.tensor.data))

    def drop(self):
        del self.capsule
        gc.collect()


kinds = pytest.mark.parametrize("versioned", KINDS, ids=KIND_IDS)
paths = pytest.mark.parametrize("path", PATHS)
gils = pytest.mark.parametrize("gil", [True, False], ids=["gil", "nogil"])


# (a) The consumer runs the deleter and leaves the name (torch's from_dlpack
# when it fails after running it): the destructor runs nothing more.
@kinds
@paths
@gils
def test_a_deleter_run_and_name_left(versioned, path, gil):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    s.check(1)
    c.delete(gil)
    s.check(0)
    assert capsule_name(c.capsule) == NAMES[versioned]
    c.drop()
    s.check(0)
    s.finish()


# (b) The consumer renames and never runs the deleter: the tensor is the
# consumer's, and so is the leak; its memory stays usable.
@kinds
@paths
def test_b_renamed_never_deleted_stays_the_consumers(versioned, path):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    c.take()
    c.drop()
    s.check(1)
    assert c.values() == list(range(N))
    c.delete()  # the consumer's own late release, for the test's cleanliness
    s.check(0)
    s.finish()


# (c) The protocol: renamed, then the deleter, before or after the capsule goes.
@kinds
@paths
@pytest.mark.parametrize("order", ["delete_then_drop", "drop_then_delete"])
def test_c_renamed_and_deleted_once(versioned, path, order):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    c.take()
    if order == "delete_then_drop":
        c.delete()
        s.check(0)
        c.drop()
    else:
        c.drop()
        s.check(1)
        c.delete()
    s.check(0)
    s.finish()


# (d) Nobody consumes: the destructor releases it.
@kinds
@paths
def test_d_unconsumed_released_by_the_destructor(versioned, path):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    c.drop()
    s.check(0)
    s.finish()


# A consumer that takes the tensor and removes the capsule's destructor (JAX,
# MXNet: dmlc/dlpack#51): its deleter releases it all; nothing waits for a
# destructor that never comes, and the block serves the next export.
@kinds
@paths
def test_destructor_removed_by_the_consumer(versioned, path):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    c.take()
    assert _set_destructor(c.capsule, None) == 0
    c.drop()
    s.check(1)
    address = c.address
    c.delete()
    s.check(0)
    c2 = Consumer(s.buf, versioned, path)
    assert c2.address == address  # reused, not lost
    c2.drop()
    s.finish()


# (e) Threads: the capsule dropped in another thread; the deleter called from
# another Python thread without the GIL, and from a thread Python never saw.
@kinds
@paths
@pytest.mark.parametrize("taken", [False, True], ids=["unconsumed", "consumed"])
def test_e_capsule_dropped_in_another_thread(versioned, path, taken):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    if taken:
        c.take()
        c.delete()
    holder = [c.capsule]
    del c.capsule
    t = threading.Thread(target=holder.clear)
    t.start()
    t.join()
    s.check(0)
    s.finish()


@kinds
@paths
@pytest.mark.parametrize("taken", [False, True], ids=["name_left", "renamed"])
def test_e_deleter_in_a_python_thread_without_the_gil(versioned, path, taken):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    if taken:
        c.take()
    t = threading.Thread(target=c.delete, kwargs={"gil": False})
    t.start()
    t.join()
    s.check(0)
    c.drop()
    s.check(0)
    s.finish()


@kinds
@paths
@pytest.mark.parametrize("taken", [False, True], ids=["name_left", "renamed"])
def test_e_deleter_in_a_thread_python_never_saw(versioned, path, taken):
    p = probe()
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    if taken:
        c.take()
    p.deleter_thread_join(p.deleter_thread_start(c.address, versioned, 1))
    s.check(0)
    c.drop()
    s.check(0)
    s.finish()


@kinds
@paths
@pytest.mark.parametrize("taken", [False, True], ids=["name_left", "renamed"])
def test_e_deleter_racing_the_destructor(versioned, path, taken):
    # The deleter on a thread of its own while this one drops the capsule: one
    # of them releases, whichever comes first, and the other does nothing.
    p = probe()
    s = Subject(path)
    for _ in range(200):
        c = Consumer(s.buf, versioned, path)
        if taken:
            c.take()
        handle = p.deleter_thread_start(c.address, versioned, 1)
        del c.capsule
        p.deleter_thread_join(handle)
    s.check(0)
    s.finish()


# The library's tensors keep a deleter that needs no GIL, as the library's
# own: a consumer's thread may release one while the GIL's holder waits for it.
@kinds
@pytest.mark.parametrize("path", ["library", "copy"])
@pytest.mark.parametrize("taken", [False, True], ids=["name_left", "renamed"])
def test_e_library_deleter_needs_no_gil(versioned, path, taken):
    p = probe()
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    if taken:
        c.take()
    p.deleter_thread_join(p.deleter_thread_start(c.address, versioned, 2), True)  # the GIL held throughout
    s.check(0)
    c.drop()
    s.check(0)
    s.finish()


# (f) The deleter called twice (or three times): the later calls do nothing.
@kinds
@paths
@pytest.mark.parametrize("taken", [False, True], ids=["name_left", "renamed"])
def test_f_deleter_called_twice(versioned, path, taken):
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    if taken:
        c.take()
    c.delete()
    c.delete(gil=False)
    c.delete()
    s.check(0)
    c.drop()
    s.check(0)
    s.finish()


@kinds
@paths
def test_f_deleter_called_twice_from_a_thread_python_never_saw(versioned, path):
    p = probe()
    s = Subject(path)
    c = Consumer(s.buf, versioned, path)
    p.deleter_thread_join(p.deleter_thread_start(c.address, versioned, 2))
    s.check(0)
    c.drop()
    s.check(0)
    s.finish()


# A block released early (the deleter run, the name left) serves the next
# export while the first capsule still lives: that capsule's destructor must
# not release the next export.
@kinds
@paths
def test_old_capsule_does_not_release_the_next_export(versioned, path):
    s = Subject(path)
    c1 = Consumer(s.buf, versioned, path)
    c1.delete()
    c2 = Consumer(s.buf, versioned, path)
    assert c2.address == c1.address  # the same block, reused
    s.check(1)
    c1.drop()
    s.check(1)
    assert c2.values() == list(range(N))
    c2.drop()
    s.check(0)
    s.finish()


# More than 8 dimensions: the library's export, in the same kind of block.
@kinds
def test_many_dimensions(versioned):
    s = Subject("cpu", shape=(1,) * 9 + (N,))
    kw = {"max_version": (1, 0)} if versioned else {}
    a = np.from_dlpack(s.buf)
    assert a.shape == (1,) * 9 + (N,) and a.ravel().tolist() == list(range(N))
    del a
    cap = s.buf.__dlpack__(**kw)
    c = hdal.from_dlpack(cap)
    assert c.shape == (1,) * 9 + (N,) and np.asarray(c).ravel().tolist() == list(range(N))
    del c, cap
    bare = s.buf.__dlpack__(**kw)  # the torch case on this path
    address = _get_pointer(bare, NAMES[versioned].encode())
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = ctypes.c_void_p.from_address(address + struct.deleter.offset).value
    ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(deleter)(address)
    del bare
    s.check(0)
    s.finish()


# At the interpreter's exit: capsules whose deleter ran with the name left,
# unconsumed ones and consumed ones, their buffers and numpy arrays, all still
# alive when Python tears the modules down, go without a crash or a message.
def test_mistakes_left_for_the_exit():
    assert_clean_run("""
        import ctypes
        import numpy as np
        import hdal
        gp = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        kept = []
        for versioned, off in ((False, 56), (True, 16)):
            for kw in ({}, {"dl_device": (1, 0)}, {"copy": True}):
                if versioned:
                    kw = dict(kw, max_version=(1, 0))
                b = hdal.from_dlpack(np.arange(8, dtype=np.float32)).to_device("cpu")
                cap = b.__dlpack__(**kw)
                name = b"dltensor_versioned" if versioned else b"dltensor"
                t = gp(cap, name)
                ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ctypes.c_void_p.from_address(t + off).value)(t)
                kept += [b, cap, b.__dlpack__(**kw), np.from_dlpack(b)]
        print("ok")
        """, expect_out="ok\n")


def _main(argv):
    """Every case of the pytest parametrisations, for the kinds asked (legacy, versioned; both by default)."""
    want = [k for k, i in zip(KINDS, KIND_IDS) if len(argv) < 2 or i in argv[1:]]
    ran = skipped = 0
    for name, f in sorted(globals().items()):
        if not name.startswith("test_") or not callable(f):
            continue
        axes = {m.args[0]: m.args[1] for m in getattr(f, "pytestmark", []) if m.name == "parametrize"}
        if "versioned" in axes:
            axes["versioned"] = [k for k in axes["versioned"] if k in want]
        for combo in itertools.product(*axes.values()):
            try:
                f(**dict(zip(axes, combo)))
                ran += 1
            except pytest.skip.Exception as e:
                skipped += 1
                print("skipped %s: %s" % (name, e))
    print("%d cases passed, %d skipped" % (ran, skipped))


if __name__ == "__main__":
    _main(sys.argv)
