#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Validates hdal-ls --json documents against the installed format's JSON Schema
(draft 2020-12) with Debian's python3-jsonschema, and checks that the schema
refuses what it must (a wrong type, an unknown runtime_class...).

  validate-json.py SCHEMA FILE...      each FILE valid, strict UTF-8; exit 1 if not
  validate-json.py --mutants SCHEMA FILE   every broken copy of FILE refused
Exit 77 (skip) without python3-jsonschema."""
import copy
import json
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    print("SKIP: python3-jsonschema is not installed")
    sys.exit(77)


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))  # strict: no surrogates, no overlongs


def validator(path):
    schema = load(path)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def mutants(doc):
    """(what, broken document) pairs that format 1 must refuse."""
    def m(what, fn):
        d = copy.deepcopy(doc)
        fn(d)
        return what, d
    dev = "devices"
    out = [
        m("format_version 2", lambda d: d.__setitem__("format_version", 2)),
        m("format_version missing", lambda d: d.pop("format_version")),
        m("backends missing", lambda d: d.pop("backends")),
        m("backend state 'fine'", lambda d: d["backends"][0].__setitem__("state", "fine")),
        m("backend device_count a string", lambda d: d["backends"][0].__setitem__("device_count", "1")),
    ]
    if doc[dev]:
        out += [
            m("unknown runtime_class", lambda d: d[dev][0].__setitem__("runtime_class", "gpu")),
            m("id a string", lambda d: d[dev][0].__setitem__("id", "0")),
            m("memory_bytes negative", lambda d: d[dev][0].__setitem__("memory_bytes", -1)),
            m("memory_bytes a string", lambda d: d[dev][0].__setitem__("memory_bytes", "1024")),
            m("is_addressable a string", lambda d: d[dev][0].__setitem__("is_addressable", "yes")),
            m("numa_node -1", lambda d: d[dev][0].__setitem__("numa_node", -1)),
            m("attribute a negative number", lambda d: d[dev][0]["attributes"].__setitem__("some_name", -3)),
            m("attribute an object", lambda d: d[dev][0]["attributes"].__setitem__("some_name", {})),
            m("cores a fraction", lambda d: d[dev][0]["attributes"].__setitem__("cores", 2.5)),
            m("same_hardware_as strings", lambda d: d[dev][0].__setitem__("same_hardware_as", ["1"])),
            m("identity type 'serial'", lambda d: d[dev][0].__setitem__("identity", {"type": "serial", "value": "1"})),
            m("device without kind", lambda d: d[dev][0].pop("kind")),
        ]
    if doc[dev] and "host_index" in doc[dev][0]:
        out += [
            m("host_index negative", lambda d: d[dev][0].__setitem__("host_index", -1)),
            m("host a number", lambda d: d[dev][0].__setitem__("host", 0)),
            m("hardware_index a string", lambda d: d[dev][0].__setitem__("hardware_index", "0")),
        ]
    if doc.get("hosts"):
        out += [
            m("hosts entry without processes", lambda d: d["hosts"][0].pop("processes")),
            m("host_count negative", lambda d: d.__setitem__("host_count", -1)),
            m("hosts entry hardware_count a string", lambda d: d["hosts"][0].__setitem__("hardware_count", "2")),
        ]
    if "topology" in doc and doc["topology"]:
        out.append(m("topology cores negative", lambda d: d["topology"][0].__setitem__("cores", -2)))
        out.append(m("topology cpuset a number", lambda d: d["topology"][0].__setitem__("cpuset", 3)))
    return out


def main(argv):
    if len(argv) >= 3 and argv[0] == "--mutants":
        v = validator(argv[1])
        doc = load(argv[2])
        v.validate(doc)
        bad = [what for what, d in mutants(doc) if v.is_valid(d)]
        for what in bad:
            print(f"FAIL: the schema accepts {argv[2]} with {what}")
        return 1 if bad else 0
    if len(argv) < 2:
        print(__doc__)
        return 2
    v = validator(argv[0])
    fails = 0
    for path in argv[1:]:
        try:
            doc = load(path)
        except (UnicodeDecodeError, ValueError) as e:
            print(f"FAIL: {path}: not strict UTF-8 JSON: {e}")
            fails += 1
            continue
        for e in sorted(v.iter_errors(doc), key=lambda e: list(e.path)):
            print(f"FAIL: {path}: {'/'.join(map(str, e.path))}: {e.message}")
            fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
