# SPDX-License-Identifier: BSD-3-Clause
# HDAL_BASH_COMPLETION: where hdal-ls's bash completion goes, BASH_COMPLETION_DIR:
# bash-completion's own completionsdir (pkg-config), under this build's prefix
# so that a custom --prefix installs there and no higher; without
# bash-completion, $(datadir)/bash-completion/completions, where it looks.
# --with-bash-completion-dir=DIR chooses another.
AC_DEFUN([HDAL_BASH_COMPLETION], [
  AC_ARG_WITH([bash-completion-dir],
    [AS_HELP_STRING([--with-bash-completion-dir=DIR], [where to install the bash completion of hdal-ls])],
    [BASH_COMPLETION_DIR=$withval], [
    BASH_COMPLETION_DIR=`$PKG_CONFIG --define-variable=prefix='${prefix}' --define-variable=datadir='${datadir}' --variable=completionsdir bash-completion 2>/dev/null`
    AS_IF([test -z "$BASH_COMPLETION_DIR"], [BASH_COMPLETION_DIR='${datadir}/bash-completion/completions'])])
  AC_SUBST([BASH_COMPLETION_DIR])
])
