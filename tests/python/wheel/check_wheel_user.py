# SPDX-License-Identifier: BSD-3-Clause
# What a user of hdal's wheel does first, checked inside a fresh Debian system's
# venv by tests/python/wheel/fresh-systems.sh: `python -m hdal`, a numpy 2 round trip,
# the seed's refusal, and (phase pocl) a round trip through PoCL's OpenCL
# device.  Standard library, numpy and hdal only: nothing else is there.
#
#   python check_wheel_user.py plain   # the system has python3 and the venv only
#   python check_wheel_user.py pocl    # pocl-opencl-icd and lavapipe installed
#
# Lines "summary: KEY: VALUE" are collected by the shell script for its summary.
# Any failed check exits non-zero with one line that says what was expected.
import os
import re
import subprocess
import sys
import sysconfig

PHASE = sys.argv[1] if len(sys.argv) == 2 else ""
if PHASE not in ("plain", "pocl"):
    sys.exit("usage: check_wheel_user.py plain|pocl")


def check(cond, what):
    """One assertion; its message says what a user would have met."""
    if not cond:
        sys.exit("check_wheel_user.py %s: FAILED: %s" % (PHASE, what))


def summary(key, value):
    print("summary: %s: %s" % (key, value), flush=True)


# A user's venv, not the system's python: the wheel must be all it needs.
check(sys.prefix != sys.base_prefix, "not running in a venv (sys.prefix %s)" % sys.prefix)
SITE = sorted({os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")})


def in_site(path):
    p = os.path.realpath(path)
    return any(p.startswith(s + os.sep) for s in SITE)


def mapped():
    """Every file mapped into this process now (/proc/self/maps)."""
    files = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                files.add(parts[5].rstrip("\n").removesuffix(" (deleted)"))
    return files


def mapped_named(word):
    return sorted(p for p in mapped() if word in os.path.basename(p))


import numpy as np  # noqa: E402  (after the venv check: a system numpy would say less)

import hdal  # noqa: E402

check(in_site(hdal.__file__), "hdal imported from %s, not from the venv's site-packages %s" % (hdal.__file__, SITE))
check(np.__version__.startswith("2."), "numpy %s, not numpy 2" % np.__version__)

# The libhdal the extension linked is the wheel's own copy (auditwheel puts it
# in site-packages), not one the system could have.
libhdal = mapped_named("libhdal")
check(libhdal, "no libhdal mapped after `import hdal` (/proc/self/maps)")
check(all(in_site(p) for p in libhdal), "libhdal loaded from outside the venv's site-packages: %s" % libhdal)


def run_ls(*args):
    """`python -m hdal` as a user types it: its table, parsed; no crash, nothing on stderr."""
    p = subprocess.run([sys.executable, "-m", "hdal", *args], capture_output=True, text=True, timeout=300)
    cmd = " ".join(["python -m hdal", *args])
    print("$ %s\n%s" % (cmd, p.stdout), end="", flush=True)
    check(p.returncode == 0, "%s: exit status %d, stderr: %s" % (cmd, p.returncode, p.stderr.strip()))
    check(p.stderr == "", "%s wrote to stderr: %s" % (cmd, p.stderr.strip()))
    rows, backends, in_backends = [], {}, False
    for line in p.stdout.splitlines():
        # ID PROC PLATFORM KIND CLASS ...: KIND may hold spaces, CLASS is one of two words.
        m = re.match(r"^(\d+)\s+(\d+)\s+(\S+)\s+(.*?)\s+(pjrt|ifrt-native)\s", line)
        if m and not in_backends:
            rows.append({"id": int(m[1]), "platform": m[3], "kind": m[4], "class": m[5]})
        elif line.strip() == "Backends:":
            in_backends = True
        elif in_backends and line.strip():
            m = re.match(r"^\s+(\S+)\s+(ok|disabled|unavailable|failed)(?::\s*(.*))?$", line)
            check(m, "%s: unreadable backend line %r" % (cmd, line))
            backends[m[1]] = (m[2], m[3] or "")
    check(rows, "%s listed no device row:\n%s" % (cmd, p.stdout))
    check(backends, "%s printed no backend list:\n%s" % (cmd, p.stdout))
    return rows, backends


def check_modules_loaded(backends, cmd):
    """Every backend module of the wheel was found and loaded: a missing module
    file, or one whose libraries the wheel lacks, names its file in the reason."""
    for name in ("cpu", "cuda", "opencl", "rocm", "levelzero", "vulkan"):
        check(name in backends, "%s lists no %s backend: %s" % (cmd, name, sorted(backends)))
        state, reason = backends[name]
        check(not re.search(r"hdal_\w+\.so|module ABI|cannot open shared object file.*hdal", reason),
              "%s: the %s module did not load from the wheel: %s: %s" % (cmd, name, state, reason))
    check(backends["cpu"][0] == "ok", "%s: cpu backend %s: %s" % (cmd, *backends["cpu"]))


def rows_text(rows):
    return "; ".join("%d %s %s (%s)" % (r["id"], r["platform"], r["kind"], r["class"]) for r in rows)


def round_trip_numpy(ctx):
    """numpy 2 -> hdal -> numpy on the CPU, zero-copy both ways."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = hdal.from_dlpack(a)
    check(b.is_view, "hdal.from_dlpack(numpy array) copied (is_view False)")
    check(b.device.platform == "cpu", "hdal.from_dlpack(numpy array) on %s" % b.device.platform)
    c = np.from_dlpack(b)
    check(c.ctypes.data == a.ctypes.data, "np.from_dlpack(hdal buffer) copied: %#x != %#x" % (c.ctypes.data, a.ctypes.data))
    check(c.shape == (3, 4) and c.dtype == np.float32, "round trip gave %s %s" % (c.shape, c.dtype))
    check(np.array_equal(c, np.arange(12, dtype=np.float32).reshape(3, 4)), "round trip values: %s" % c)
    c[1, 2] = 1234.5
    check(a[1, 2] == 1234.5, "a write through the round-tripped array is not seen in the source")
    del b, c


def check_refusal(dev, where):
    """The seed's refusal: no import onto a device no buffer runtime serves; the source intact."""
    check(dev.runtime_class != "pjrt", "%s is PjRt-compatible" % dev)
    a = np.arange(6, dtype=np.float32)
    try:
        hdal.from_dlpack(a, device=dev)
    except hdal.Error as e:
        got = (str(e), e.code)
        want = ("DLPack is supported for PjRt-compatible backends only.", "FAILED_PRECONDITION")
        check(got == want, "refusal on %s: %r, expected %r" % (where, got, want))
    except Exception as e:  # noqa: BLE001  (anything else is the failure to report)
        check(False, "hdal.from_dlpack(a, device=%s device) raised %s: %s, not hdal.Error" % (
            where, type(e).__name__, e))
    else:
        check(False, "hdal.from_dlpack(a, device=%s device) imported onto an IFRT-native device" % where)
    check(np.array_equal(a, np.arange(6, dtype=np.float32)), "the refused source array changed: %s" % a)
    summary("refusal", "%s device %d (%s, %s): FAILED_PRECONDITION as expected" % (
        where, dev.id, dev.kind, dev.runtime_class))


class Capsule:
    """A bare DLPack capsule for np.from_dlpack, as python/tests/test_opencl.py wraps one."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, stream=None):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def round_trip_opencl(ctx):
    """host -> PoCL's OpenCL device -> host, as the package's own test_opencl.py does."""
    cpu = [d for d in ctx.devices() if d.platform == "cpu"]
    ocl = [d for d in ctx.devices() if d.platform == "opencl"]
    check(cpu, "no CPU device with PoCL installed: %s" % ctx.backends())
    check(ocl, "no OpenCL device with pocl-opencl-icd installed: %s" % ctx.backends())
    pocl = [d for d in ocl if "Portable Computing Language" in d.attributes.get("opencl_platform", "")]
    check(pocl, "no PoCL platform among the OpenCL devices: %s" % [d.attributes.get("opencl_platform") for d in ocl])
    dev = pocl[0]
    check(dev.runtime_class == "pjrt", "PoCL's device is %s, not pjrt: %s" % (dev.runtime_class, dev.runtime_class_reason))
    check(dev.dlpack_device[0] == hdal.kDLOpenCL, "PoCL's device DLPack type %s" % (dev.dlpack_device,))
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = a.copy()
    g = hdal.from_dlpack(a, device=dev)               # host -> OpenCL: a copy
    check(g.device == dev and not g.is_view, "import onto PoCL: device %s, is_view %s" % (g.device, g.is_view))
    check(g.__dlpack_device__() == dev.dlpack_device, "PoCL buffer's __dlpack_device__ %s" % (g.__dlpack_device__(),))
    a[0, 0] = 1000                                    # the device copy is its own
    h = g.to_device(cpu[0])                           # OpenCL -> host
    check(h.device == cpu[0], "to_device(cpu) gave a buffer on %s" % h.device)
    check(np.array_equal(np.from_dlpack(h), want), "PoCL -> CPU values: %s" % np.from_dlpack(h))
    n = np.from_dlpack(Capsule(g.__dlpack__(dl_device=(1, 0))))  # exported to the CPU on request
    check(np.array_equal(n, want), "PoCL buffer exported with dl_device=(1, 0): %s" % n)
    summary("opencl round trip", "numpy -> %s device %d (%s) -> numpy: values equal" % (
        dev.attributes.get("opencl_platform"), dev.id, dev.kind))
    del g, h, n


def phase_plain():
    rows, backends = run_ls()
    check_modules_loaded(backends, "python -m hdal")
    check(any(r["platform"] == "cpu" for r in rows), "python -m hdal lists no cpu device: %s" % rows_text(rows))
    check(not any(r["platform"] == "opencl" for r in rows),
          "python -m hdal lists an OpenCL device on a system without any OpenCL driver: %s" % rows_text(rows))
    # No OpenCL driver here: the wheel's ICD loader finds no platform
    # ("ok: 0 devices", as hdal-ls says for an empty vendors directory), or
    # the backend says why it is unavailable; never a crash.
    state, reason = backends["opencl"]
    check(state == "unavailable" and reason or (state, reason) == ("ok", "0 devices"),
          "opencl backend without a driver: %s: %s" % (state, reason))
    summary("devices", rows_text(rows))
    summary("opencl backend", "%s: %s" % (state, reason))
    summary("backends", ", ".join("%s %s" % (n, s) for n, (s, _) in backends.items()))

    ctx = hdal.Context()
    # Every backend module is the wheel's: the module loader looks beside the
    # libhdal it runs in, and the wheel carries them there.
    mods = [p for p in mapped() if re.fullmatch(r"hdal_\w+\.so", os.path.basename(p))]
    for name in ("cuda", "opencl", "rocm", "levelzero", "vulkan"):
        check(any(os.path.basename(p) == "hdal_%s.so" % name for p in mods),
              "hdal_%s.so not loaded by a context (mapped modules: %s)" % (name, mods))
    check(all(in_site(p) for p in mods), "backend modules loaded from outside the venv: %s" % mods)
    # The wheel's own hwloc and ICD loader, not any system copy (there is none).
    for word in ("libhwloc", "libOpenCL"):
        libs = mapped_named(word)
        check(libs, "no %s mapped once a context exists: the wheel's copy was not used" % word)
        check(all(in_site(p) for p in libs), "%s mapped from outside the venv: %s" % (word, libs))
    summary("libraries", ", ".join(os.path.relpath(p, SITE[0]) for p in libhdal + mapped_named("libhwloc") +
                                   mapped_named("libOpenCL")))

    round_trip_numpy(ctx)
    summary("numpy round trip", "numpy %s -> hdal -> numpy: zero-copy, writes shared" % np.__version__)

    odd = [d for d in ctx.devices() if d.runtime_class != "pjrt"]
    if odd:
        check_refusal(odd[0], odd[0].platform)
    else:
        print("no IFRT-native device on this system: the seed's refusal is checked in phase pocl (lavapipe)")


def phase_pocl():
    rows, backends = run_ls()
    check_modules_loaded(backends, "python -m hdal")
    ocl_rows = [r for r in rows if r["platform"] == "opencl"]
    check(ocl_rows, "python -m hdal lists no OpenCL device with pocl-opencl-icd installed:\n%s" % rows_text(rows))
    check(all(r["class"] == "pjrt" for r in ocl_rows), "PoCL's row is not pjrt: %s" % rows_text(ocl_rows))
    check(any(r["platform"] == "cpu" for r in rows), "python -m hdal lists no cpu device: %s" % rows_text(rows))
    summary("devices", rows_text(rows))
    # lavapipe is listed when vulkan is named (docs/vulkan.md): there, the
    # IFRT-native device of the seed's refusal.
    vrows, vbackends = run_ls("-b", "cpu,opencl,vulkan")
    vk_rows = [r for r in vrows if r["platform"] == "vulkan"]
    check(vk_rows, "python -m hdal -b cpu,opencl,vulkan lists no Vulkan device with lavapipe installed: %s: %s" % (
        vbackends.get("vulkan"), rows_text(vrows)))
    check(all(r["class"] == "ifrt-native" for r in vk_rows), "lavapipe's row is not ifrt-native: %s" % rows_text(vk_rows))
    summary("devices -b cpu,opencl,vulkan", rows_text(vrows))

    ctx = hdal.Context(backends="cpu,opencl,vulkan")
    round_trip_numpy(ctx)
    summary("numpy round trip", "numpy %s -> hdal -> numpy: zero-copy, writes shared" % np.__version__)
    round_trip_opencl(ctx)

    vk = [d for d in ctx.devices() if d.platform == "vulkan"]
    check(vk, "no Vulkan device in a context that names vulkan: %s" % ctx.backends())
    check(all(d.runtime_class == "ifrt-native" for d in vk), "Vulkan devices: %s" % [d.runtime_class for d in vk])
    # hdal's Vulkan module opened the system's loader, which the wheel does not carry.
    vulkan = [p for p in mapped() if os.path.basename(p).startswith("libvulkan.so.1")]
    check(vulkan and not any(in_site(p) for p in vulkan),
          "the Vulkan loader mapped: %s (the system's libvulkan.so.1 expected)" % vulkan)
    check_refusal(vk[0], "vulkan")

    # PoCL brings the system's libhwloc with it; the ICD loader stays the wheel's.
    libs = mapped_named("libOpenCL")
    check(libs and all(in_site(p) for p in libs), "libOpenCL mapped from outside the venv: %s" % libs)
    check(all(in_site(p) for p in mapped_named("libhdal")), "a second libhdal: %s" % mapped_named("libhdal"))
    summary("libraries", ", ".join(mapped_named("libOpenCL") + mapped_named("libhwloc") + vulkan))


try:
    phase_plain() if PHASE == "plain" else phase_pocl()
except Exception:  # noqa: BLE001  (an unexpected exception is a failed check too, said as one)
    import traceback

    traceback.print_exc()
    check(False, "unexpected %s: %s" % (sys.exc_info()[0].__name__, sys.exc_info()[1]))
print("check_wheel_user.py %s: all checks passed" % PHASE)
