#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks what `make wheel` made, as a user and a distribution would look at it.

* the name: hdal-<version>-cp311-abi3-<the tag asked for>.whl
  (manylinux_2_34_x86_64 by default: glibc 2.34, Debian 12, Ubuntu 22.04,
  RHEL 9, Fedora 35 and later), and `auditwheel show` agrees that the wheel
  is consistent with that tag;
* inside: the package, its extension on the limited API (_hdal.abi3.so),
  libhdal-py.so.0 and every backend module in hdal/lib/, hwloc and the
  OpenCL ICD loader in hdal.libs/ with their licences; no vendor runtime (CUDA,
  HIP/ROCm, Level Zero, Vulkan, an OpenCL driver): hdal opens those from the
  system at run time;
* at most 5 MiB.

usage: wheel-check.py WHEEL AUDITWHEEL PLATFORM   (AUDITWHEEL: the auditwheel program;
PLATFORM: the tag make wheel asked for, or auto: then any manylinux tag)
Prints the wheel's name, tag, size and files; exits 1 with every problem found.
"""
import fnmatch
import os
import re
import subprocess
import sys
import zipfile

MODULES = ["cuda", "opencl", "rocm", "levelzero", "vulkan"]
# Vendor runtimes and drivers: never inside (docs/python.md, "The wheel").
VENDOR = ["libcuda.so*", "libnvidia*", "libcudart*", "libamdhip64*", "libhsa-runtime*", "libamd_comgr*",
          "librocm*", "libze_loader*", "libze_intel*", "libigdrcl*", "libvulkan*", "libvulkan_*", "libpocl*",
          "libLLVM*", "libintelocl*", "libmesa*", "libGL*"]
MAX_BYTES = 5 * 1024 * 1024


def main(path, auditwheel, platform):
    problems = []
    name = os.path.basename(path)
    m = re.fullmatch(r"hdal-([0-9.]+)-cp311-abi3-manylinux_2_([0-9]+)_x86_64\.whl", name)
    if not m:
        problems.append("%s: not hdal-<version>-cp311-abi3-manylinux_2_<N>_x86_64.whl" % name)
    elif platform != "auto" and not name.endswith("-%s.whl" % platform):
        problems.append("%s: not the %s asked for" % (name, platform))
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        problems.append("%s: %d bytes, over 5 MiB" % (name, size))
    with zipfile.ZipFile(path) as z:
        files = sorted(n for n in z.namelist() if not n.endswith("/"))
    base = {os.path.basename(f): f for f in files}
    want = ["hdal/__init__.py", "hdal/__main__.py", "hdal/__init__.pyi", "hdal/_hdal.pyi", "hdal/py.typed",
            "hdal/_hdal.abi3.so",
            "hdal/lib/libhdal-py.so.0"] + ["hdal/lib/hdal/backends/hdal_%s.so" % b for b in MODULES]
    problems += ["%s lacks %s" % (name, f) for f in want if f not in files]
    for lib, what in (("libhwloc-*.so*", "hwloc"), ("libOpenCL-*.so*", "the OpenCL ICD loader")):
        if not any(fnmatch.fnmatch(f, "hdal.libs/" + lib) for f in files):
            problems.append("%s lacks %s (hdal.libs/%s)" % (name, what, lib))
    for f in files:
        if any(fnmatch.fnmatch(os.path.basename(f), v) for v in VENDOR):
            problems.append("%s carries a vendor runtime: %s" % (name, f))
    if any(f.startswith("hdal.libs/") for f in files) and not any("/licenses/" in f for f in files):
        problems.append("%s carries libraries in hdal.libs/ without their licences" % name)
    shown = subprocess.run([auditwheel, "show", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True).stdout
    said = re.search(r'consistent with\s+the\s+following\s+platform\s+tag:\s+"([^"]+)"', shown)
    tag = said.group(1) if said else None
    if not said:
        problems.append("auditwheel show %s says no platform tag:\n%s" % (name, shown))
    elif m and tag != "manylinux_2_%s_x86_64" % m.group(2):
        problems.append("auditwheel show %s: consistent with %s, not the name's tag" % (name, tag))
    print("wheel: %s, %d bytes (%.2f MiB), auditwheel: %s" % (name, size, size / 1048576.0, tag))
    for f in files:
        if f.startswith(("hdal/lib/", "hdal.libs/")) or f.endswith(".so") or "/licenses/" in f:
            print("  %s" % f)
    for p in problems:
        print("wheel-check: %s" % p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("\n".join(__doc__.strip().splitlines()[-3:-1]))
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
