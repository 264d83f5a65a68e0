# SPDX-License-Identifier: BSD-3-Clause
# HDAL_SONAME: --with-soname-tag=TAG names the library libhdal-TAG.so.0 (its
# file and its SONAME, libtool's -release) instead of libhdal.so.0.  For a copy
# of libhdal that travels inside another package, the Python wheel
# (docs/python.md, "The wheel"): the dynamic loader shares a library between
# everything in a process that asks for its SONAME, so a wheel's libhdal.so.0
# and the system's would be taken for one another; under another name each
# copy stays with the code linked against it, and finds its own modules
# (lib/module.c).  Programs still link with -lhdal.
AC_DEFUN([HDAL_SONAME], [
  AC_ARG_WITH([soname-tag],
    [AS_HELP_STRING([--with-soname-tag=TAG],
      [name the library libhdal-TAG.so.0, for a private copy (the Python wheel uses "py"; default: none)])],
    [], [with_soname_tag=no])
  HDAL_SONAME_LDFLAGS=
  hdal_soname=libhdal.so.0
  AS_CASE([$with_soname_tag],
    [no|""], [],
    [yes], [AC_MSG_ERROR([--with-soname-tag needs a tag: --with-soname-tag=py])],
    [*[[!a-z0-9]]*], [AC_MSG_ERROR([--with-soname-tag=$with_soname_tag: the tag is lower-case letters and digits])],
    [HDAL_SONAME_LDFLAGS="-release $with_soname_tag"; hdal_soname=libhdal-$with_soname_tag.so.0
     AC_DEFINE_UNQUOTED([HDAL_SONAME_TAG], ["$with_soname_tag"],
       [The tag of a private copy's name, libhdal-TAG.so.0 (--with-soname-tag); its hwloc loads no plugin])])
  AC_SUBST([HDAL_SONAME_LDFLAGS])
])
