# SPDX-License-Identifier: BSD-3-Clause
# Level Zero devices from Python (docs/levelzero.md): the tests' fake driver
# loaded by the system's real loader (Debian's libze1) through
# ZE_ENABLE_ALT_DRIVERS, in a child interpreter: kDLOneAPI devices, a host
# array copied onto one and back, the tensor's DLPack device.
import ctypes
import os

import pytest

import hdal
from conftest import assert_clean_run


def test_kdloneapi_devices_and_a_round_trip():
    try:
        ctypes.CDLL("libze_loader.so.1")
    except OSError:
        pytest.skip("no Level Zero loader (Debian: libze1)")
    fake = os.path.join(os.environ.get("HDAL_TEST_MODULES", ""), "fakeze.so")
    if not os.path.exists(fake):
        pytest.skip("the fake Level Zero driver was not built (%s)" % fake)
    assert hdal.kDLOneAPI == 14
    env = {"ZE_ENABLE_ALT_DRIVERS": fake, "FAKEZE_DEVICES": "2"}
    assert_clean_run("""
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,levelzero")
ze = [d for d in ctx.devices() if d.platform == "levelzero"]
assert [d.dlpack_device for d in ze] == [(hdal.kDLOneAPI, 0), (hdal.kDLOneAPI, 1)], ctx.backends()
assert all(d.runtime_class == "pjrt" for d in ze)
assert all(d.runtime_vendor == 0x8086 for d in ze), [d.runtime_vendor for d in ze]  # Level Zero: Intel's, its module says
a = np.arange(12, dtype=np.float32).reshape(3, 4)
g = hdal.from_dlpack(a, device=ze[1])
assert g.device == ze[1] and not g.is_view and g.__dlpack_device__() == (14, 1)
h = g.to_device(ctx.devices()[0])
assert np.array_equal(np.asarray(h), a)
""", env=env)
