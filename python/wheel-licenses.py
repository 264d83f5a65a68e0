#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Adds the licences of the libraries auditwheel put inside a wheel.

`make wheel` (python/Makefile.am) runs this on the repaired wheel: auditwheel
copies hwloc, the OpenCL ICD loader and what they need (libudev) into
hdal.libs/, and names the Debian package of each in its SBOM
(<dist-info>/sboms/auditwheel.cdx.json).  Each such package's copyright file
(/usr/share/doc/<package>/copyright, Debian's machine-readable record of its
authors and licence) goes into <dist-info>/licenses/<package>.copyright, as
PEP 639 places a wheel's licence files, and RECORD is written anew.  A library
whose package is not Debian's, or whose copyright file is missing, stops the
build: a wheel must not carry code without its licence.

usage: wheel-licenses.py WHEEL   (the wheel is rewritten in place)
"""
import base64
import hashlib
import json
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main(path):
    with zipfile.ZipFile(path) as z:
        entries = [(i, z.read(i.filename)) for i in z.infolist()]
    names = [i.filename for i, _ in entries]
    dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
    sbom_name = dist_info + "/sboms/auditwheel.cdx.json"
    if sbom_name not in names:
        sys.exit("wheel-licenses: %s has no %s (auditwheel 6.4 or later writes it)" % (path, sbom_name))
    sbom = json.loads(dict((i.filename, d) for i, d in entries)[sbom_name])
    packages = sorted({c["name"] for c in sbom.get("components", []) if c.get("purl", "").startswith("pkg:deb/")})
    grafted = [n for n in names if n.startswith("hdal.libs/") and not n.endswith("/")]
    if grafted and not packages:
        sys.exit("wheel-licenses: %s carries %s, whose packages the SBOM does not name" % (path, ", ".join(grafted)))
    added = []
    for p in packages:
        src = "/usr/share/doc/%s/copyright" % p
        try:
            with open(src, "rb") as f:
                added.append(("%s/licenses/%s.copyright" % (dist_info, p), f.read()))
        except OSError as e:
            sys.exit("wheel-licenses: %s: %s (the licence of %s, inside the wheel)" % (src, e.strerror, p))
    record = dist_info + "/RECORD"
    kept = [(i, d) for i, d in entries if i.filename != record and i.filename not in dict(added)]
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        lines = []
        for info, data in kept:
            z.writestr(info, data)
            if not info.filename.endswith("/"):
                lines.append(record_line(info.filename, data))
        for name, data in added:
            info = zipfile.ZipInfo(name, date_time=kept[0][0].date_time)
            info.external_attr = 0o644 << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)
            lines.append(record_line(name, data))
        lines.append(record + ",,")
        z.writestr(zipfile.ZipInfo(record, date_time=kept[0][0].date_time), "\n".join(lines) + "\n",
                   zipfile.ZIP_DEFLATED)
    os.replace(tmp, path)
    print("wheel-licenses: %s" % (", ".join(n.split("/")[-1] for n, _ in added) or "no library grafted"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
