# SPDX-License-Identifier: BSD-3-Clause
# Vulkan devices from Python (docs/vulkan.md): the tests' fake driver loaded by
# the system's real Vulkan loader (Debian's libvulkan1) through
# VK_DRIVER_FILES, in a child interpreter: IFRT-native kDLVulkan devices with
# their reason, and the seed's refusal of an import onto one, the array intact.
import ctypes
import os

import pytest

import hdal
from conftest import assert_clean_run


def test_kdlvulkan_devices_listed_and_refused():
    try:
        ctypes.CDLL("libvulkan.so.1")
    except OSError:
        pytest.skip("no Vulkan loader (Debian: libvulkan1)")
    manifest = os.path.join(os.environ.get("HDAL_TEST_MODULES", ""), "..", "fakevk_icd.json")
    if not os.path.exists(manifest):
        pytest.skip("the fake Vulkan driver was not built (%s)" % manifest)
    assert hdal.kDLVulkan == 7
    assert_clean_run("""
import numpy as np, hdal
ctx = hdal.Context(backends="cpu,vulkan")
vk = [d for d in ctx.devices() if d.platform == "vulkan"]
assert [d.dlpack_device for d in vk] == [(hdal.kDLVulkan, 0), (hdal.kDLVulkan, 1)], ctx.backends()
assert all(d.runtime_class == "ifrt-native" for d in vk)
assert vk[0].runtime_class_reason == ("Vulkan memory has no DLPack convention (kDLVulkan); "
                                      "hdal lists this device but does not create buffers on it")
assert vk[0].attributes["uuid"] == "GPU-facec0da-0001-4000-8000-000000000000"
a = np.arange(4, dtype=np.float32)
try:
    hdal.from_dlpack(a, device=vk[1])
except hdal.Error as e:
    assert (e.code, str(e)) == ("FAILED_PRECONDITION", "DLPack is supported for PjRt-compatible backends only.")
else:
    raise AssertionError("imported onto a Vulkan device")
assert np.array_equal(a, np.arange(4, dtype=np.float32))
""", env={"VK_DRIVER_FILES": manifest})
