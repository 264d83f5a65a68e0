# SPDX-License-Identifier: BSD-3-Clause
"""The links hdal-ls --json must give between GPUs, derived from an hwloc XML file alone.

expected-links.py TOPOLOGY.xml BUS_ID...   prints one line per pair i < j (indexes into the bus ids):
    i j kind fabric bandwidth_mbps fabric_links     (fabric and the numbers "null" where none)

It reads the XML's own tree and matrices with the standard library, not hwloc, by the rule of
docs/reference.md, "Links": a fabric matrix joining the two (directly, or both reaching NVSwitches);
else the PCI path between their PCI objects (one switch: pix; several: pxb; a host bridge: phb);
else where the host bridges meet (one NUMA node: node; several: sys).
"""
import sys
import xml.etree.ElementTree as ET

FABRICS = (("NVLinkBandwidth", "nvlink"), ("XGMIBandwidth", "xgmi"), ("XeLinkBandwidth", "xelink"))


def weight(hexset):
    """The number of bits of an hwloc bitmap as the XML writes it ("0x00000003", "0xf...f,0x1")."""
    if hexset.startswith("0xf...f"):
        return 1 << 30
    return sum(bin(int(word, 16)).count("1") for word in hexset.split(",") if word)


def main():
    tree = ET.parse(sys.argv[1])
    buses = sys.argv[2:]
    parent, by_gp, pci = {}, {}, {}
    for obj in tree.iter("object"):
        by_gp[obj.get("gp_index")] = obj
        for child in obj.findall("object"):
            parent[child] = obj
        if obj.get("type") == "PCIDev":
            pci[obj.get("pci_busid")] = obj

    def ancestors(obj):
        chain = []
        while obj in parent:
            obj = parent[obj]
            chain.append(obj)
        return chain

    matrices = []
    for dist in tree.getroot().iter("distances2hetero"):
        name = dist.get("name")
        fabric = dict(FABRICS).get(name)
        if not fabric:
            continue
        objs = [by_gp[ix.split(":")[1]] for idx in dist.findall("indexes") for ix in idx.text.split()]
        vals = [int(v) for values in dist.findall("u64values") for v in values.text.split()]
        matrices.append((fabric, objs, vals))

    def row(objs, dev):
        for k, o in enumerate(objs):
            if o is dev or parent.get(o) is dev:
                return k
        return None

    def fabric_of(a, b):
        for fabric, objs, vals in matrices:
            n = len(objs)
            i, j = row(objs, a), row(objs, b)
            if i is None or j is None:
                continue
            direct = vals[i * n + j] or vals[j * n + i]
            if direct:
                return fabric, direct, None
            switches = [s for s, o in enumerate(objs) if o.get("type") == "PCIDev" and o.get("subtype") == "NVSwitch"]
            sa = [vals[i * n + s] or vals[s * n + i] for s in switches]
            sb = [vals[j * n + s] or vals[s * n + j] for s in switches]
            if any(sa) and any(sb):
                return fabric, min(sum(sa), sum(sb)), min(sum(1 for v in sa if v), sum(1 for v in sb if v))
        return None

    def pci_path(a, b):
        up_a, up_b = ancestors(a), ancestors(b)
        common = next(o for o in up_a if o in up_b)
        if common.get("type") == "Bridge":
            if common.get("bridge_type", "").startswith("0-"):
                return "phb"
            below = lambda x: sum(1 for o in ancestors(x)[: ancestors(x).index(common)] if o.get("type") == "Bridge")
            return "pix" if below(a) <= 1 and below(b) <= 1 else "pxb"
        return "node" if weight(common.get("nodeset", "0x0")) == 1 else "sys"

    def text(v):
        return "null" if v is None else str(v)

    for i in range(len(buses)):
        for j in range(i + 1, len(buses)):
            a, b = pci[buses[i]], pci[buses[j]]
            f = fabric_of(a, b)
            if f:
                print(i, j, "fabric", f[0], text(f[1]), text(f[2]))
            else:
                print(i, j, pci_path(a, b), "null", "null", "null")


main()
