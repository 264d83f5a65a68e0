# SPDX-License-Identifier: BSD-3-Clause
"""python3 -m hdal: the device table of hdal-ls, printed by hdal-ls's own code."""

import argparse
import sys

import hdal
from hdal._hdal import _table


def table(ctx, platforms=None):
    """The device table of hdal-ls for `ctx`, as one string: printed by hdal-ls's own code,
    built into the extension (docs/python.md, "python3 -m hdal")."""
    return _table(ctx, None if platforms is None else ",".join(platforms))


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
