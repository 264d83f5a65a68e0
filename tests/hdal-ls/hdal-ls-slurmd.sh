#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The gres.conf of hdal-ls --of gres read by Debian's real Slurm: `slurmd -G`
# parses it offline and prints what it understood.  On the fake machine of
# tests/tools/fake-fsroot.sh, with device nodes made by mknod (root only):
# each GPU with its Type, Count 1, its Index, File and Cores, and no error
# (a node of two vendors' GPUs: Slurm also checks their env flags agree).
# slurmd authenticates through MUNGE (AuthType=auth/munge, Slurm's default;
# Slurm 24.11's slurmd -G creates a credential before it reads gres.conf), so
# the test starts its own munged, as a node runs one: its own key, socket, pid,
# log and seed under the test's directory, slurmd pointed at that socket
# (AuthInfo=socket=...).  Skips (77) without slurmd, munged or root.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
command -v slurmd >/dev/null || { echo "SKIP: no slurmd (Debian: slurmd)"; exit 77; }
PATH=$PATH:/usr/sbin:/sbin
command -v munged >/dev/null || { echo "SKIP: no munged, which slurmd authenticates through (Debian: munge)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: mknod needs root"; exit 77; }
. "$srcdir/tools/fake-fsroot.sh"
. "$srcdir/tools/slurm.sh"
fake_fsroot_test
trap 'munge_stop "$tmp"; rm -rf "$tmp"' EXIT
munge_prepare "$tmp" || exit 99
munge_start "$tmp" || { echo "SKIP: munged did not start: $munge_error"; exit 77; }
socket=$munge_socket
mknod "$tmp/root/dev/nvidia0" c 195 0 && mknod "$tmp/root/dev/nvidia1" c 195 1 && mkdir "$tmp/root/dev/dri" &&
  mknod "$tmp/root/dev/dri/renderD129" c 226 129 || { echo "SKIP: mknod refused"; exit 77; }
mkdir "$tmp/etc" "$tmp/spool" || exit 99
"$HDAL_LS" -b cpu,cuda,rocm --of gres >"$tmp/etc/gres.conf" || { echo "FAIL: hdal-ls --of gres: exit $?"; exit 1; }
host=$(hostname -s)
# Beyond the node and its gres: slurmd's spool in the test's directory (24.11
# checks it), no plugin that needs cgroups, and the node taken as configured
# (the fake machine's 4 CPUs are not the host's: an error for 24.11 otherwise).
cat >"$tmp/etc/slurm.conf" <<END
ClusterName=hdal
SlurmctldHost=$host
GresTypes=gpu
NodeName=$host CPUs=4 Gres=gpu:fake_gpu_1:1,gpu:fake_amd_gpu_0:1,gpu:fake_gpu_0:1 State=UNKNOWN
PartitionName=all Nodes=$host Default=YES
AuthInfo=socket=$socket
SlurmdSpoolDir=$tmp/spool
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
END
timeout 60 slurmd -G -f "$tmp/etc/slurm.conf" >"$tmp/out" 2>&1
rc=$?
# Slurm 24.11's slurmd starts its cgroup plugin for -G too and fails where no
# cgroup hierarchy is mounted (a container); reading gres.conf needs none.
if [ $rc -ne 0 ] && slurm_cgroup_off "$tmp/etc" "$tmp/out"; then
  timeout 60 slurmd -G -f "$tmp/etc/slurm.conf" >"$tmp/out" 2>&1
  rc=$?
fi
cat "$tmp/out"
fails=0
[ $rc -eq 0 ] || { echo "FAIL: slurmd -G: exit $rc"; fails=1; }
grep -qi "error" "$tmp/out" && { echo "FAIL: slurmd reported an error"; fails=1; }
# What Slurm understood, field by field: Index is the device node's minor
# number, as Slurm takes it from File; ID and CoreCnt are its own.
sed -n 's/.*Gres Name=\(gpu\) Type=\([^ ]*\) Count=\([0-9]*\) Index=\([0-9]*\) ID=[0-9]* File=\([^ ]*\) \(Cores=[^ ]* \)\{0,1\}.*/\2 \3 \4 \5 \6/p' "$tmp/out" >"$tmp/got"
cat >"$tmp/want" <<END
fake_gpu_1 1 0 $tmp/root/dev/nvidia0 Cores=0-1 
fake_amd_gpu_0 1 129 $tmp/root/dev/dri/renderD129 
fake_gpu_0 1 1 $tmp/root/dev/nvidia1 Cores=2-3 
END
diff -u "$tmp/want" "$tmp/got" || { echo "FAIL: what slurmd understood"; fails=1; }
[ $fails -eq 0 ] && echo "PASS: slurmd -G reads hdal-ls --of gres" && exit 0
exit 1
