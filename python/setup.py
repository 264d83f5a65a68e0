# SPDX-License-Identifier: BSD-3-Clause
"""setuptools' part of the pip build of the Python package hdal.

pyproject.toml has the metadata; this file has what it cannot say
(docs/python.md, "Installing with pip"):

* The version: version= of the top-level VERSION file, the one configure
  reads: ../VERSION in hdal's source tree, VERSION beside this file in an sdist
  (which carries a copy, with LICENSE).
* The extension hdal._hdal: every *.c of this directory, globbed so that a new
  file is built without an edit here (python/Makefile.am lists them for the
  autotools build; tests/python-venv.sh checks that the two agree), compiled
  with the autotools build's flags: -fvisibility=hidden, so that PyInit__hdal
  is the only symbol exported, -fno-strict-aliasing, and HDAL_CFLAGS' warnings.
* hdal-ls's table (tools/ls_table.c and what it uses: TABLE_SOURCES), built
  into the extension for `python3 -m hdal`, its one home: from ../tools in
  hdal's source tree, from tools/ in an sdist (which carries a copy).  Their
  config.h is configure's in the autotools build; here one of this build's
  own (build_temp), defining what configure's AC_USE_SYSTEM_EXTENSIONS does.
* libhdal: an INSTALLED one, found by `pkg-config --cflags --libs hdal`
  (PKG_CONFIG names another pkg-config; PKG_CONFIG_PATH as pkg-config reads it),
  asked when the extension is built, so that an sdist needs no libhdal.
  Without pkg-config or hdal.pc the build stops with an error that says so.
* The run path: pkg-config prints no -L for the linker's own directories
  (/usr/lib/<triplet> and the like), so each -L it prints is a directory the
  dynamic loader does not search either; each becomes a run path (DT_RUNPATH)
  of the extension, as libtool gives the autotools build's extension one in
  such a prefix.  A libhdal from Debian's libhdal-dev gives none.  The path is
  the one of this machine: a wheel built so is for this machine, not for
  copying to others.

setuptools runs this file in its own directory (python/ or the sdist's top).
"""

import glob
import os
import shlex
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.command.sdist import sdist as _sdist
from setuptools.errors import PlatformError

NO_PC = ("hdal.pc not found by pkg-config: install libhdal (Debian: libhdal-dev) "
         "or set PKG_CONFIG_PATH to the directory holding hdal.pc")


def top_file(name):
    """VERSION or LICENSE: beside this file in an sdist, else hdal's top directory."""
    return name if os.path.exists(name) else os.path.join("..", name)


def hdal_version():
    try:
        with open(top_file("VERSION")) as f:
            for line in f:
                if line.startswith("version="):
                    return line[len("version="):].strip()
    except OSError as e:
        raise SystemExit("error: %s: %s (the package's version is that of hdal's top-level VERSION file: "
                         "build from hdal's source tree or from an sdist)" % (e.filename, e.strerror))
    raise SystemExit("error: %s: no version= line" % top_file("VERSION"))


# tools/ files of hdal-ls's table (python/Makefile.am: hdal_ls_table_sources).
TABLE_SOURCES = ["ls_table.c", "ls_view.c", "ls_hardware.c", "text.c", "json.c"]
TABLE_HEADERS = ["ls.h", "text.h", "json.h"]


def tools_dir():
    """hdal's tools/ in its source tree, else tools/ beside this file (an sdist)."""
    up = os.path.join("..", "tools")
    return up if os.path.isfile(os.path.join(up, TABLE_SOURCES[0])) else "tools"


def pkg_config(what):
    """`pkg-config WHAT hdal`, split as a shell would."""
    cmd = shlex.split(os.environ.get("PKG_CONFIG") or "pkg-config") + [what, "hdal"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    except OSError as e:
        raise PlatformError("cannot run pkg-config (%s: %s), which finds the installed libhdal by its "
                            "hdal.pc: install pkg-config and libhdal (Debian: pkg-config, libhdal-dev) "
                            "or set PKG_CONFIG to a pkg-config and PKG_CONFIG_PATH to the directory "
                            "holding hdal.pc" % (cmd[0], e.strerror))
    if p.returncode != 0:
        said = " ".join(p.stderr.split())
        raise PlatformError(NO_PC + (" (pkg-config said: %s)" % said if said else ""))
    return shlex.split(p.stdout)


class build_ext(_build_ext):
    """Adds libhdal's flags from pkg-config to each extension, when it is built."""

    def build_extensions(self):
        cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
        os.makedirs(self.build_temp, exist_ok=True)
        with open(os.path.join(self.build_temp, "config.h"), "w") as f:
            f.write("/* hdal-ls's table files' config.h (setup.py) */\n#ifndef _GNU_SOURCE\n#define _GNU_SOURCE 1\n#endif\n")
        for ext in self.extensions:
            ext.include_dirs += [self.build_temp, tools_dir()]
            for f in cflags:
                if f.startswith("-I"):
                    ext.include_dirs.append(f[2:])
                else:
                    ext.extra_compile_args.append(f)
            for f in libs:
                if f.startswith("-L"):
                    ext.library_dirs.append(f[2:])
                    ext.runtime_library_dirs.append(f[2:])
                elif f.startswith("-l"):
                    ext.libraries.append(f[2:])
                else:
                    ext.extra_link_args.append(f)
        super().build_extensions()


class sdist(_sdist):
    """Ships what setuptools leaves out: the header, the tests (all of tests/), hdal-ls's table
    (tools/), VERSION and LICENSE."""

    def make_release_tree(self, base_dir, files):
        extra = glob.glob("*.h") + [f for f in glob.glob(os.path.join("tests", "*")) if os.path.isfile(f)]
        super().make_release_tree(base_dir, sorted(set(files) | set(extra)))
        self.mkpath(os.path.join(base_dir, "tools"))
        for name in TABLE_SOURCES + TABLE_HEADERS:
            self.copy_file(os.path.join(tools_dir(), name), os.path.join(base_dir, "tools", name))
        for name in ("VERSION", "LICENSE"):
            self.copy_file(top_file(name), os.path.join(base_dir, name))


setup(
    version=hdal_version(),
    # Here, not in pyproject.toml: setuptools 66 (Debian 12) calls its
    # [tool.setuptools] table beta and warns.  Named, not discovered: tests/
    # goes into the sdist, never into an installation.
    packages=["hdal"],
    package_data={"hdal": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension(
        "hdal._hdal",
        sources=sorted(glob.glob("*.c")) + [os.path.join(tools_dir(), f) for f in TABLE_SOURCES],
        depends=sorted(glob.glob("*.h")) + [os.path.join(tools_dir(), f) for f in TABLE_HEADERS],
        extra_compile_args=["-fvisibility=hidden", "-fno-strict-aliasing",
                            "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
                            "-Wmissing-prototypes", "-Wno-unused-parameter"],
    )],
    cmdclass={"build_ext": build_ext, "sdist": sdist},
)
