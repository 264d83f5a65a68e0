# SPDX-License-Identifier: BSD-3-Clause
"""setuptools' part of the pip build of the Python package hdal.

pyproject.toml has the metadata; this file has what it cannot say
(docs/python.md, "Installing with pip" and "The wheel"):

* The version: version= of the top-level VERSION file, the one configure
  reads: ../VERSION in hdal's source tree, VERSION beside this file in an sdist
  (which carries a copy, with LICENSE).
* The extension hdal._hdal: every *.c of this directory, globbed so that a new
  file is built without an edit here (python/Makefile.am lists them for the
  autotools build; tests/python/python-venv.sh checks that the two agree), compiled
  with the autotools build's flags: -fvisibility=hidden, so that PyInit__hdal
  is the only symbol exported, -fno-strict-aliasing, and HDAL_CFLAGS' warnings;
  on CPython's limited API of 3.11 (abi3: one wheel for 3.11 and every later
  CPython) unless HDAL_PYTHON_LIMITED_API=0.
* hdal-ls's table (tools/ls_table.c and what it uses), built into the
  extension for `python3 -m hdal`, its one home: the files that
  tools/table-sources.am lists, the one list of them (the autotools build
  makes hdal-ls's convenience library libhdal-ls-table.la of it, which hdal-ls
  and the autotools build's extension link; without libtool, this build
  compiles the same files into the extension), from ../tools in hdal's source
  tree, from tools/ in an sdist (which carries a copy, the list included).
  Their config.h is configure's in the autotools build; here one of this
  build's own (build_temp), defining what configure's
  AC_USE_SYSTEM_EXTENSIONS does.
* libhdal, one of two ways (HDAL_PYTHON_LIBHDAL):
  - "bundled" (the default): built here from hdal's source (.. in the source
    tree, libhdal-src/ in an sdist, which carries it: HDAL_SOURCE_DIR names
    another) with configure and make, as libhdal-py.so.0 (configure
    --with-soname-tag=py: never taken for a system libhdal.so.0 in the same
    process), and shipped inside the package with every backend module it
    built: hdal/lib/libhdal-py.so.0 and hdal/lib/hdal/backends/, where libhdal
    finds its modules beside itself.  The extension finds libhdal through its
    run path $ORIGIN/lib.  hwloc and the OpenCL ICD loader are the machine's;
    `make wheel` (python/Makefile.am) puts them inside too (auditwheel), for
    other machines.  HDAL_PYTHON_CONFIGURE_FLAGS adds configure options
    (--enable-opencl=yes to insist on the OpenCL module).
  - "system": an INSTALLED libhdal, found by `pkg-config --cflags --libs
    hdal` (PKG_CONFIG names another pkg-config; PKG_CONFIG_PATH as pkg-config
    reads it), as distributions link their python3-hdal.  Without pkg-config
    or hdal.pc the build stops with an error that says so.  pkg-config prints
    no -L for the linker's own directories (/usr/lib/<triplet> and the like),
    so each -L it prints is a directory the dynamic loader does not search
    either; each becomes a run path (DT_RUNPATH) of the extension, as libtool
    gives the autotools build's extension one in such a prefix: a wheel built
    so is for this machine, not for copying to others.

setuptools runs this file in its own directory (python/ or the sdist's top).
"""

import glob
import os
import shlex
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.command.sdist import sdist as _sdist
from setuptools.errors import PlatformError

NO_PC = ("hdal.pc not found by pkg-config: install libhdal (Debian: libhdal-dev) "
         "or set PKG_CONFIG_PATH to the directory holding hdal.pc")

LIBHDAL = os.environ.get("HDAL_PYTHON_LIBHDAL") or "bundled"
if LIBHDAL not in ("bundled", "system"):
    raise SystemExit("error: HDAL_PYTHON_LIBHDAL=%s: say bundled (libhdal built here and shipped inside the "
                     "package) or system (an installed libhdal, found by pkg-config)" % LIBHDAL)
# The limited API of 3.11, the first with the buffer protocol (hdal.Buffer's on the CPU).
LIMITED_API = os.environ.get("HDAL_PYTHON_LIMITED_API", "1") != "0"
# The bundled libhdal's SONAME tag (configure --with-soname-tag) and where it goes in the package.
SONAME_TAG = "py"
LIB_SUBDIR = "lib"


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


# The list of hdal-ls's table files, in tools/ (see the docstring).
TABLE_LIST = "table-sources.am"
TABLE_VARIABLE = "libhdal_ls_table_la_SOURCES"


def tools_dir():
    """hdal's tools/ in its source tree, else tools/ beside this file (an sdist)."""
    up = os.path.join("..", "tools")
    return up if os.path.isfile(os.path.join(up, TABLE_LIST)) else "tools"


def table_files():
    """The files of hdal-ls's table, as tools/table-sources.am lists them (names relative to tools/)."""
    path = os.path.join(tools_dir(), TABLE_LIST)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise SystemExit("error: %s: %s (hdal-ls's table is built into the extension: build from hdal's "
                         "source tree or from an sdist)" % (e.filename, e.strerror))
    for line in text.replace("\\\n", " ").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == TABLE_VARIABLE:
            files = value.split()
            if files:
                return files
    raise SystemExit("error: %s: no %s = line" % (path, TABLE_VARIABLE))


TABLE_FILES = table_files()
TABLE_SOURCES = [f for f in TABLE_FILES if f.endswith(".c")]
TABLE_HEADERS = [f for f in TABLE_FILES if not f.endswith(".c")]


def is_hdal_source(d):
    return os.path.isfile(os.path.join(d, "configure.ac")) and os.path.isfile(os.path.join(d, "lib", "module.c"))


def hdal_source():
    """hdal's source tree for the bundled libhdal: HDAL_SOURCE_DIR, libhdal-src/ (an sdist) or .."""
    for d in (os.environ.get("HDAL_SOURCE_DIR"), "libhdal-src", ".."):
        if d and is_hdal_source(d):
            return os.path.abspath(d)
    raise PlatformError("hdal's C sources not found (HDAL_SOURCE_DIR, libhdal-src/ of an sdist, or .. in "
                        "hdal's source tree): build from hdal's source tree or its sdist, or set "
                        "HDAL_PYTHON_LIBHDAL=system to link an installed libhdal")


def run(cmd, cwd, what):
    print("hdal: %s: %s" % (what, " ".join(shlex.quote(c) for c in cmd)), flush=True)
    try:
        subprocess.run(cmd, cwd=cwd, check=True)
    except OSError as e:
        raise PlatformError("%s: cannot run %s: %s (hdal's build needs a C compiler, make, pkg-config, hwloc's "
                            "headers and, from a git checkout, autoconf, automake and libtool: docs/python.md)"
                            % (what, cmd[0], e.strerror))
    except subprocess.CalledProcessError as e:
        raise PlatformError("%s failed (exit status %d): %s" % (what, e.returncode, " ".join(cmd)))


def build_libhdal(build_temp):
    """configure, make and make install (staged) of hdal's C library and modules; returns the stage's
    prefix directory (include/, lib/)."""
    src = hdal_source()
    if not os.path.exists(os.path.join(src, "configure")):
        run(["autoreconf", "-fi"], src, "autoreconf (a source tree without configure)")
    build = os.path.abspath(os.environ.get("HDAL_PYTHON_LIBHDAL_BUILD") or os.path.join(build_temp, "libhdal"))
    stage = os.path.join(build, "stage")
    prefix = "/usr/local"
    os.makedirs(build, exist_ok=True)
    if not os.path.exists(os.path.join(build, "config.status")):
        flags = shlex.split(os.environ.get("HDAL_PYTHON_CONFIGURE_FLAGS", ""))
        run([os.path.join(src, "configure"), "--quiet", "--prefix=" + prefix, "--with-soname-tag=" + SONAME_TAG,
             "--enable-python=no", "--with-mpi=no", "--enable-doc=no", "--disable-dependency-tracking"] + flags,
            build, "configure libhdal")
    jobs = str(os.cpu_count() or 1)
    run(["make", "-j" + jobs], build, "make libhdal")
    shutil.rmtree(stage, ignore_errors=True)
    run(["make", "install", "DESTDIR=" + stage], build, "make install libhdal (staged)")
    return stage + prefix


def bundle_libhdal(root, package_lib):
    """libhdal-py.so.0 and the modules, from the staged prefix `root` into the package's lib/ (package_lib)."""
    lib = os.path.join(root, "lib")
    soname = "libhdal-%s.so.0" % SONAME_TAG
    if not os.path.exists(os.path.join(lib, soname)):
        raise PlatformError("the staged build has no %s in %s" % (soname, lib))
    backends = os.path.join(package_lib, "hdal", "backends")
    shutil.rmtree(package_lib, ignore_errors=True)
    os.makedirs(backends)
    shutil.copyfile(os.path.join(lib, soname), os.path.join(package_lib, soname))  # the file, not the link
    modules = sorted(glob.glob(os.path.join(lib, "hdal", "backends", "hdal_*.so")))
    for m in modules:
        shutil.copyfile(m, os.path.join(backends, os.path.basename(m)))
    print("hdal: bundled %s and %s" % (soname, ", ".join(os.path.basename(m) for m in modules) or "no module"))


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
    """Gives each extension libhdal: the bundled one, built here, or the installed one pkg-config finds."""

    def build_extensions(self):
        os.makedirs(self.build_temp, exist_ok=True)
        with open(os.path.join(self.build_temp, "config.h"), "w") as f:
            f.write("/* hdal-ls's table files' config.h (setup.py) */\n#ifndef _GNU_SOURCE\n#define _GNU_SOURCE 1\n#endif\n")
        if LIBHDAL == "bundled":
            root = build_libhdal(self.build_temp)
            bundle_libhdal(root, os.path.join(self.build_lib, "hdal", LIB_SUBDIR))
            cflags, libs = ["-I" + os.path.join(root, "include")], ["-L" + os.path.join(root, "lib"), "-lhdal"]
        else:
            cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
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
                    if LIBHDAL == "system":
                        ext.runtime_library_dirs.append(f[2:])
                elif f.startswith("-l"):
                    ext.libraries.append(f[2:])
                else:
                    ext.extra_link_args.append(f)
            if LIBHDAL == "bundled":  # beside the extension, wherever the package is installed
                ext.extra_link_args.append("-Wl,-rpath,$ORIGIN/" + LIB_SUBDIR)
        super().build_extensions()


def source_files(top, leave_out=None):
    """hdal's source files under `top`, relative to it: git's list in a checkout, else every file but
    build outputs (a `make distdir` tree, as `make wheel` gives, is exactly the release's files) and
    the directory `leave_out` (the sdist's own tree, being made inside python/)."""
    if os.path.isdir(os.path.join(top, ".git")):
        out = subprocess.run(["git", "-C", top, "ls-files", "-z"], stdout=subprocess.PIPE, check=True).stdout
        return sorted(f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(top, f)))
    skip_dirs = {".git", "autom4te.cache", "__pycache__", "build", "dist", "wheelhouse"}
    found = []
    leave_out = os.path.abspath(leave_out) if leave_out else None
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in skip_dirs and not x.startswith("_build") and not x.endswith(".egg-info")
                   and os.path.abspath(os.path.join(d, x)) != leave_out]
        found += [os.path.relpath(os.path.join(d, f), top) for f in files]
    return sorted(found)


class sdist(_sdist):
    """Ships what setuptools leaves out: the header, the tests (all of tests/), hdal-ls's table
    (tools/: its files and their list), VERSION and LICENSE; and, for the bundled libhdal, hdal's C sources in libhdal-src/."""

    def make_release_tree(self, base_dir, files):
        extra = glob.glob("*.h") + [f for f in glob.glob(os.path.join("tests", "*")) if os.path.isfile(f)]
        # ../tools/*.c (the extension's sources in hdal's tree) would be copied beside
        # base_dir, into the tree itself: they go to tools/ below.
        files = [f for f in files if not f.startswith(os.pardir + os.sep)]
        super().make_release_tree(base_dir, sorted(set(files) | set(extra)))
        self.mkpath(os.path.join(base_dir, "tools"))
        for name in [TABLE_LIST] + TABLE_FILES:
            self.copy_file(os.path.join(tools_dir(), name), os.path.join(base_dir, "tools", name))
        for name in ("VERSION", "LICENSE"):
            self.copy_file(top_file(name), os.path.join(base_dir, name))
        if LIBHDAL == "bundled":
            src = hdal_source()
            for f in source_files(src, leave_out=base_dir):
                dst = os.path.join(base_dir, "libhdal-src", f)
                self.mkpath(os.path.dirname(dst))
                self.copy_file(os.path.join(src, f), dst)


extension = Extension(
    "hdal._hdal",
    sources=sorted(glob.glob("*.c")) + [os.path.join(tools_dir(), f) for f in TABLE_SOURCES],
    depends=sorted(glob.glob("*.h")) + [os.path.join(tools_dir(), f) for f in TABLE_HEADERS],
    extra_compile_args=["-fvisibility=hidden", "-fno-strict-aliasing",
                        "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
                        "-Wmissing-prototypes", "-Wno-unused-parameter"],
    define_macros=[("Py_LIMITED_API", "0x030B0000")] if LIMITED_API else [],
    py_limited_api=LIMITED_API,
)

setup(
    version=hdal_version(),
    # Here, not in pyproject.toml: setuptools 66 (Debian 12) calls its
    # [tool.setuptools] table beta and warns.  Named, not discovered: tests/
    # goes into the sdist, never into an installation.
    packages=["hdal"],
    package_data={"hdal": ["__init__.pyi", "_hdal.pyi", "py.typed"]},
    ext_modules=[extension],
    cmdclass={"build_ext": build_ext, "sdist": sdist},
    # One wheel, cp311-abi3, for CPython 3.11 and later.
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if LIMITED_API else {},
)
