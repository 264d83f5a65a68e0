# SPDX-License-Identifier: BSD-3-Clause
"""python3 -m hdal: the device table of hdal-ls, made with the Python API."""

import argparse
import sys

import hdal

_HEADERS = ("ID", "PROC", "PLATFORM", "KIND", "CLASS", "ADDR", "MEMORY", "NUMA", "DLPACK")


def _human_bytes(b):
    # As hdal-ls: "-" for unknown, bytes below 1 KiB, else one decimal.
    if b == 0:
        return "-"
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    v, u = float(b), 0
    while v >= 1024 and u < 5:
        v, u = v / 1024, u + 1
    return "%d B" % b if u == 0 else "%.1f %s" % (v, units[u])


def _cells(d):
    t, i = d.dlpack_device
    return (str(d.id), str(d.process_index), d.platform, d.kind, d.runtime_class,
            "yes" if d.is_addressable else "no", _human_bytes(d.memory_bytes),
            "-" if d.numa_node < 0 else str(d.numa_node), "%s:%d" % ((hdal.dlpack_device_type_name(t) or "unknown"), i))


def _width(s):
    return len(s.encode("utf-8", "surrogateescape"))  # hdal-ls pads by bytes


def table(ctx, platforms=None):
    """The device table of hdal-ls for `ctx`, as one string."""
    devs = [d for d in ctx.devices() if platforms is None or d.platform in platforms]
    rows = [_cells(d) for d in devs]
    width = [max([_width(h)] + [_width(r[c]) for r in rows]) for c, h in enumerate(_HEADERS)]

    def line(cells):
        return "".join(c + " " * (width[i] - _width(c)) + "  " for i, c in enumerate(cells[:-1])) + cells[-1] + "\n"

    out = [line(_HEADERS)]
    for d, r in zip(devs, rows):
        out.append(line(r))
        if d.runtime_class_reason is not None:
            out.append("    (%s)\n" % d.runtime_class_reason)
    out.append("\nBackends:\n")
    backends = ctx.backends()
    name_width = max([8] + [len(name) for name, _ in backends if len(name) < 64])  # statuses in one column, as hdal-ls
    for name, status in backends:
        out.append("  %-*s %s\n" % (name_width, name, status))
    return "".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m hdal",
                                description="List the compute devices hdal finds, as hdal-ls does.")
    p.add_argument("-p", "--platform", help="only devices of these platforms (comma-separated)")
    p.add_argument("-b", "--backends", help="backends to use, as HDAL_BACKENDS (e.g. cpu,opencl or -cuda)")
    p.add_argument("-V", "--version", action="version", version="hdal %s" % hdal.__version__)
    a = p.parse_args(argv)
    try:
        ctx = hdal.Context(backends=a.backends)
    except hdal.Error as e:
        print("python3 -m hdal: %s (%s)" % (e, e.code), file=sys.stderr)
        return 1
    sys.stdout.write(table(ctx, a.platform.split(",") if a.platform else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
