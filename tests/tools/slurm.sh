# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests that run Debian's Slurm (tests/hdal-ls/hdal-ls-slurmd.sh,
# tests/mpi/hosts-slurm.test): MUNGE, which Slurm authenticates through
# (AuthType=auth/munge), run as a node runs it but with everything under the
# test's directory, and what Slurm 24.11 needs where no cgroup hierarchy is
# mounted.

# munge_prepare DIR: DIR/munge (the socket's, searchable by all, as munged
# wants) and DIR/munge-key (the key, readable by its user only); sets
# munge_socket and munge_opts, the options of a munged that uses them.
munge_prepare() {
  chmod 711 "$1" && mkdir -m 711 "$1/munge" && mkdir -m 700 "$1/munge-key" &&
    dd if=/dev/urandom of="$1/munge-key/munge.key" bs=1024 count=1 2>/dev/null &&
    chmod 600 "$1/munge-key/munge.key" || return 1
  munge_socket=$1/munge/munge.socket
  munge_opts="--socket=$munge_socket --key-file=$1/munge-key/munge.key --pid-file=$1/munge/munged.pid
    --log-file=$1/munge-key/munged.log --seed-file=$1/munge-key/munged.seed"
}

# munge_start DIR: munged as a daemon, with what munge_prepare made (its pid
# in DIR/munge/munged.pid, for munge_stop); on failure, munged's error is in
# munge_error.
munge_start() {
  # shellcheck disable=SC2086
  munged $munge_opts 2>"$1/munged.err" || { munge_error=$(grep -i error "$1/munged.err"); return 1; }
}

munge_stop() { [ -s "$1/munge/munged.pid" ] && kill "$(cat "$1/munge/munged.pid")"; }

# slurm_cgroup_off ETC OUTPUT: where a Slurm daemon's OUTPUT says it could
# not start its cgroup plugin (Slurm 24.11 starts it in slurmd, -G included,
# and fails where no cgroup hierarchy is mounted: a container, a chroot),
# writes ETC/cgroup.conf leaving it off (CgroupPlugin=disabled, a value 22.05
# rejects) and succeeds: the caller runs it again.  Fails otherwise.
slurm_cgroup_off() {
  grep -q "Unable to initialize cgroup plugin" "$2" 2>/dev/null && [ ! -e "$1/cgroup.conf" ] &&
    echo "CgroupPlugin=disabled" >"$1/cgroup.conf"
}
