#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Validates a CDI spec (hdal-ls --of cdi) against the CDI schema that Debian
ships (golang-github-container-orchestrated-devices-container-device-interface-dev,
schema/schema.json with its defs.json) and against the rules CDI's own Go code
adds (pkg/cdi: kind, device names, unique names, non-empty edits, env entries).

  validate-cdi.py SCHEMA_DIR FILE
Exit 0 when valid, 1 when not (saying why), 77 without the schema or
python3-jsonschema."""
import json
import os
import re
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed")
    sys.exit(77)

schema_dir, path = sys.argv[1], sys.argv[2]
try:
    with open(os.path.join(schema_dir, "schema.json")) as f:
        schema = json.load(f)
except OSError as e:
    print("SKIP: no CDI schema: %s" % e)
    sys.exit(77)
with open(path, "rb") as f:
    spec = json.loads(f.read().decode("utf-8"))

resolver = jsonschema.RefResolver(base_uri="file://" + os.path.abspath(schema_dir) + "/", referrer=schema)
errors = [e.message for e in jsonschema.Draft7Validator(schema, resolver=resolver).iter_errors(spec)]

# pkg/cdi's own checks (qualified-device.go, device.go, container-edits.go).
vendor, _, cls = spec.get("kind", "").partition("/")
if not re.fullmatch(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?", vendor):
    errors.append("kind %r: bad vendor" % spec.get("kind"))
if not re.fullmatch(r"[A-Za-z]([A-Za-z0-9_-]*[A-Za-z0-9])?", cls):
    errors.append("kind %r: bad class" % spec.get("kind"))
names = [d.get("name", "") for d in spec.get("devices", [])]
for n in names:
    if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?", n):
        errors.append("device name %r" % n)
if len(set(names)) != len(names):
    errors.append("device names twice: %r" % names)
for d in spec.get("devices", []):
    edits = d.get("containerEdits", {})
    if not any(edits.get(k) for k in ("env", "deviceNodes", "hooks", "mounts")):
        errors.append("device %r: empty edits" % d.get("name"))
for edits in [spec.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in spec.get("devices", [])]:
    for v in edits.get("env", []):
        if not isinstance(v, str) or v.find("=") <= 0:
            errors.append("env entry %r" % v)
    for n in edits.get("deviceNodes", []):
        if not n.get("path"):
            errors.append("device node without a path: %r" % n)
for e in errors:
    print("invalid CDI spec: %s" % e)
sys.exit(1 if errors else 0)
