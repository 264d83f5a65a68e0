# SPDX-License-Identifier: BSD-3-Clause
"""hdal-ls's "same hardware" at scale, against a model written from its
definition (docs/reference.md, "Hosts and hardware"), pair by pair as the
library does not: within one host, devices joined through shared PCI bus ids
or UUIDs (without case), or whose topology cpusets intersect unless both are
kDLCPU (then: of two processes, on one NUMA node).  Checks every device of the
--json document (same_hardware_as: the smallest SHOWN partner ids, ascending;
same_hardware_count: all of them; hardware_index: the pieces of hardware), and
that the table and --of xml say the same.
Usage: same-hardware.py SHOWN JSON TABLE XML"""
import json
import re
import sys
import xml.etree.ElementTree as ET

shown_max = int(sys.argv[1])
doc = json.load(open(sys.argv[2]))
devs = doc["devices"]
n = len(devs)
fails = []

parent = list(range(n))
def find(i):
    while parent[i] != i:
        i = parent[i]
    return i
for key in ("pci_bus_id", "uuid"):
    seen = {}
    for i, d in enumerate(devs):
        v = d["attributes"].get(key)
        if v:
            k = (d["host_index"], v.lower())
            if k in seen:
                a, b = find(seen[k]), find(i)
                parent[max(a, b)] = min(a, b)
            else:
                seen[k] = i

def cpus(s):
    out = set()
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
cpuset = [cpus(d["attributes"]["cpuset"]) if "cpuset" in d["attributes"] else None for d in devs]
host = [d["dlpack_device"]["device_type_name"] == "kDLCPU" for d in devs]

def cpuset_partners(i, j):
    if cpuset[i] is None or cpuset[j] is None or not cpuset[i] & cpuset[j]:
        return False
    if not (host[i] and host[j]):
        return True
    a, b = devs[i], devs[j]
    return a["process_index"] != b["process_index"] and a["numa_node"] is not None and a["numa_node"] == b["numa_node"]

identity = [find(i) for i in range(n)]
expected = {}
for i, d in enumerate(devs):
    same = []
    for j, e in enumerate(devs):
        if i == j or d["host_index"] != e["host_index"]:
            continue
        if identity[i] == identity[j] or cpuset_partners(i, j):
            same.append(e["id"])
    expected[d["id"]] = same
    if d["same_hardware_count"] != len(same) or d["same_hardware_as"] != same[:shown_max]:
        fails.append("device %d: same_hardware_as %s count %d, expected %s count %d" % (
            d["id"], d["same_hardware_as"], d["same_hardware_count"], same[:shown_max], len(same)))

# The pieces of hardware: the identity chains, nodes of host memory of two processes, and each device
# computing on host CPUs without an identity (pure) with the lowest node of host memory it meets, else
# the lowest pure device it meets.
def pure(i):
    a = devs[i]["attributes"]
    return not host[i] and cpuset[i] is not None and not a.get("pci_bus_id") and not a.get("uuid")
for i in range(n):
    for j in range(n):
        if devs[i]["host_index"] != devs[j]["host_index"]:
            continue
        if host[i] and host[j] and cpuset_partners(i, j):
            a, b = find(i), find(j)
            parent[max(a, b)] = min(a, b)
for i in range(n):
    if not pure(i):
        continue
    met = [j for j in range(n) if devs[j]["host_index"] == devs[i]["host_index"] and cpuset[j] is not None
           and cpuset[i] & cpuset[j]]
    target = min([j for j in met if host[j]] or [j for j in met if pure(j)] or [i])
    a, b = find(i), find(target)
    parent[max(a, b)] = min(a, b)
pieces = {}
for i, d in enumerate(devs):
    r = find(i)
    pieces.setdefault(r, len(pieces))
    if d["hardware_index"] != pieces[r]:
        fails.append("device %d: hardware_index %d, expected %d" % (d["id"], d["hardware_index"], pieces[r]))
if doc["hardware_count"] != len(pieces):
    fails.append("hardware_count %d, expected %d" % (doc["hardware_count"], len(pieces)))

# The table: "    (same hardware as device[s] a, b[ and N more])" under each device's row(s).
table = {}
current = None
for line in open(sys.argv[3]):
    m = re.match(r"^(\d+) ", line)
    if m:
        current = int(m.group(1))
    m = re.match(r"^    \(same hardware as devices? ([\d, ]+?)(?: and (\d+) more)?\)$", line)
    if m:
        ids = [int(x) for x in m.group(1).split(", ")]
        table[current] = (ids, len(ids) + int(m.group(2) or 0))
for i, same in expected.items():
    want = (same[:shown_max], len(same)) if same else None
    if table.get(i) != want:
        fails.append("table, device %d: %s, expected %s" % (i, table.get(i), want))

# --of xml: one hdalSameHardwareAs info per id shown, hdalSameHardwareCount when there are any.
found = 0
for o in ET.parse(sys.argv[4]).iter("object"):
    if o.get("type") != "Misc":
        continue
    infos = [(i.get("name"), i.get("value")) for i in o.findall("info")]
    ident = [int(v) for k, v in infos if k == "hdalDeviceId"]
    if not ident:
        continue
    found += 1
    same = expected[ident[0]]
    ids = [int(v) for k, v in infos if k == "hdalSameHardwareAs"]
    count = [int(v) for k, v in infos if k == "hdalSameHardwareCount"]
    if ids != same[:shown_max] or count != ([len(same)] if same else []):
        fails.append("xml, device %d: %s %s, expected %s %d" % (ident[0], ids, count, same[:shown_max], len(same)))
if found != n:
    fails.append("xml: %d devices, expected %d" % (found, n))

for f in fails[:20]:
    print("FAIL:", f)
if fails:
    print("%d failures" % len(fails))
    sys.exit(1)
print("%d devices, %d partner links, %d pieces of hardware, checked in --json, the table and --of xml" % (
    n, sum(len(s) for s in expected.values()), len(pieces)))
