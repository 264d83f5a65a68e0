#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The gres.conf of hdal-ls --of gres read by Debian's real Slurm: `slurmd -G`
# parses it offline and prints what it understood.  Each GPU with its Type,
# Count 1, its Index, File and Cores, and no error (a node of two vendors'
# GPUs: Slurm also checks their env flags agree).  slurmd checks Cores=
# against the cores its own hwloc finds (gres.conf(5): Slurm's core ids are
# hwloc's logical core indexes; one past them: "xcpuinfo_abs_to_mac: failed",
# "Invalid GRES data"), and hwloc reads HWLOC_XMLFILE for slurmd as for
# hdal: so each machine is the one both see, and the node is configured as it
# is, no SlurmdParameters=config_overrides:
#   - the fake machine of tests/tools/fake-fsroot.sh (cuda-two-numa.xml),
#     device nodes made by mknod (root only), a GPU the topology lacks (no
#     Cores=, a comment line saying why);
#   - a real machine with PCI GPUs (hwloc's 24em64t-2n6c2t-pci.xml, xml_machine),
#     two packages of six cores: Cores= of package 1 are 6-11;
#   - an NVIDIA DGX-2 (hwloc's nvidiaDGX2.xml): 16 GPUs, Links= of their NVSwitch
#     fabric, 6 to each other GPU;
#   - this machine itself, no HWLOC_XMLFILE: a fake GPU at the bus id of one
#     of its real PCI devices, so that its locality, its Cores= and slurmd's
#     cores are this machine's (skipped where hwloc sees no PCI device: a
#     container).
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
host=$(hostname -s)

# slurmd_reads NAME NODE: slurmd -G on $tmp/NAME/gres.conf (written by the
# caller) with a slurm.conf of node NODE (its CPUs and Gres=), as the
# machine's hwloc finds it; what it understood, field by field (Index is the
# device node's minor number, as Slurm takes it from File; ID and CoreCnt are
# its own), in $tmp/NAME/got; false on an exit status or an error.
slurmd_reads() {
  sr_etc=$tmp/$1
  mkdir -p "$sr_etc/spool" || return 1
  # Beyond the node and its gres: slurmd's spool in the test's directory
  # (24.11 checks it), no plugin that needs cgroups.
  cat >"$sr_etc/slurm.conf" <<END
ClusterName=hdal
SlurmctldHost=$host
GresTypes=gpu
NodeName=$host $2 State=UNKNOWN
PartitionName=all Nodes=$host Default=YES
AuthInfo=socket=$socket
SlurmdSpoolDir=$sr_etc/spool
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
END
  timeout 60 slurmd -G -f "$sr_etc/slurm.conf" >"$sr_etc/out" 2>&1
  sr_rc=$?
  # Slurm 24.11's slurmd starts its cgroup plugin for -G too and fails where no
  # cgroup hierarchy is mounted (a container); reading gres.conf needs none.
  if [ $sr_rc -ne 0 ] && slurm_cgroup_off "$sr_etc" "$sr_etc/out"; then
    timeout 60 slurmd -G -f "$sr_etc/slurm.conf" >"$sr_etc/out" 2>&1
    sr_rc=$?
  fi
  echo "--- $1:"
  cat "$sr_etc/gres.conf" "$sr_etc/out"
  sed -n 's/.*Gres Name=\(gpu\) Type=\([^ ]*\) Count=\([0-9]*\) Index=\([0-9]*\) ID=[0-9]* File=\([^ ]*\) \(Cores=[^ ]* \)\{0,1\}.*/\2 \3 \4 \5 \6/p' \
    "$sr_etc/out" >"$sr_etc/got"
  [ $sr_rc -eq 0 ] || { fail "$1: slurmd -G: exit $sr_rc"; return 1; }
  ! grep -qi "error" "$sr_etc/out" || { fail "$1: slurmd reported an error"; return 1; }
}
# The node as hwloc finds the machine (hwloc-calc, of hwloc-nox) and its GPUs' Gres=.
node_of() { # GRES
  echo "CPUs=$(hwloc-calc --number-of pu all) Boards=1 SocketsPerBoard=$(hwloc-calc --number-of package all)" \
    "CoresPerSocket=$(($(hwloc-calc --number-of core all) / $(hwloc-calc --number-of package all)))" \
    "ThreadsPerCore=$(($(hwloc-calc --number-of pu all) / $(hwloc-calc --number-of core all))) Gres=$1"
}
command -v hwloc-calc >/dev/null || { echo "SKIP: no hwloc-calc (Debian: hwloc-nox)"; exit 77; }

# The fake machine: 4 CPUs, two NVIDIA GPUs on its two NUMA nodes, an AMD one it lacks.
mkdir "$tmp/fake" && "$HDAL_LS" -b cpu,cuda,rocm --of gres >"$tmp/fake/gres.conf" || fail "fake: hdal-ls --of gres: exit $?"
slurmd_reads fake "$(node_of gpu:fake_gpu_1:1,gpu:fake_amd_gpu_0:1,gpu:fake_gpu_0:1)"
grep -q '^# GPU 0000:5e:00.0: no Cores= ' "$tmp/fake/gres.conf" || fail "fake: no comment for the AMD GPU"
cat >"$tmp/want" <<END
fake_gpu_1 1 0 $tmp/root/dev/nvidia0 Cores=0-1 
fake_amd_gpu_0 1 129 $tmp/root/dev/dri/renderD129 
fake_gpu_0 1 1 $tmp/root/dev/nvidia1 Cores=2-3 
END
diff -u "$tmp/want" "$tmp/fake/got" || fail "fake: what slurmd understood"

# A real machine's topology: its GPUs' Cores= as hwloc-calc finds them in the file.
xml_machine "$tmp/xml" || exit 99
for i in 0 1 2; do mknod "$tmp/xml/dev/nvidia$i" c 195 $i || exit 99; done
mkdir "$tmp/xml-etc" && "$HDAL_LS" -b cpu,cuda --of gres >"$tmp/xml-etc/gres.conf" || fail "xml: hdal-ls --of gres: exit $?"
slurmd_reads xml-etc "$(node_of gpu:fake_gpu_0:1,gpu:fake_gpu_1:1,gpu:fake_gpu_2:1)"
i=0
for b in $xml_gpus; do
  echo "fake_gpu_$i 1 $i $tmp/xml/dev/nvidia$i Cores=$(xml_cores "$HWLOC_XMLFILE" "$b") "
  i=$((i + 1))
done >"$tmp/want"
diff -u "$tmp/want" "$tmp/xml-etc/got" || fail "xml: what slurmd understood"
grep -q "fake_gpu_2 .* Cores=6-11 $" "$tmp/xml-etc/got" || fail "xml: package 1's cores are 6-11"
# No fabric there: no Links= (hdal-ls(1): only where two of the node's GPUs share one).
! grep -q 'Links=' "$tmp/xml-etc/gres.conf" || fail "xml: Links= without a fabric"

# An NVIDIA DGX-2 (hwloc's nvidiaDGX2.xml): 16 GPUs, each joined to the 15 others through the NVSwitches
# by its 6 NVLinks (docs/reference.md, "Links"): Links=6 to each but itself, read by slurmd.
dgx_gpus=$(sed -n 's/.*type="PCIDev".*pci_busid="\([0-9a-f:.]*\)".*pci_type="0302.*/\1/p' "$srcdir/topologies/nvidiaDGX2.xml")
[ "$(echo $dgx_gpus | wc -w)" -eq 16 ] || fail "dgx-2: $(echo $dgx_gpus | wc -w) GPUs in the XML, expected 16"
xml_machine "$tmp/dgx" nvidiaDGX2.xml $dgx_gpus || exit 99
for i in $(seq 0 15); do mknod "$tmp/dgx/dev/nvidia$i" c 195 $i || exit 99; done
mkdir "$tmp/dgx-etc" && FAKECUDA_NAMES=$(for i in $(seq 16); do printf 'Tesla V100-SXM3-32GB-H,'; done) \
  "$HDAL_LS" -b cpu,cuda --of gres >"$tmp/dgx-etc/gres.conf" || fail "dgx-2: hdal-ls --of gres: exit $?"
slurmd_reads dgx-etc "$(node_of gpu:tesla_v100_sxm3_32gb_h:16)"
i=0
for b in $xml_gpus; do
  links=$(seq 0 15 | awk -v s=$i '{ printf("%s%d", (NR > 1 ? "," : ""), ($1 == s ? -1 : 6)) }')
  echo "$i Cores=$(xml_cores "$HWLOC_XMLFILE" "$b") Links=$links"
  i=$((i + 1))
done >"$tmp/want"
sed -n 's/.*Gres Name=gpu .* Index=\([0-9]*\) .* \(Cores=[^ ]*\) .*Links=\([^ ]*\).*/\1 \2 Links=\3/p' "$tmp/dgx-etc/out" >"$tmp/dgx-etc/links"
diff -u "$tmp/want" "$tmp/dgx-etc/links" || fail "dgx-2: Cores= and Links= as slurmd read them"

# This machine: a fake NVIDIA GPU at the bus id of a real PCI device that hwloc sees here.
unset HWLOC_XMLFILE
bus=$(lstopo-no-graphics --of xml 2>/dev/null | sed -n 's/.* pci_busid="\([0-9a-f:.]*\)".*/\1/p' | head -1)
if [ -z "$bus" ]; then
  echo "hwloc sees no PCI device here (a container?): this machine's own cores are not checked"
else
  mkdir -p "$tmp/this/sys/bus/pci/devices/$bus" "$tmp/this/proc/driver/nvidia/gpus/$bus" "$tmp/this/dev" "$tmp/this-etc" &&
    echo 0x10de >"$tmp/this/sys/bus/pci/devices/$bus/vendor" &&
    printf 'Device Minor: \t 0\n' >"$tmp/this/proc/driver/nvidia/gpus/$bus/information" &&
    mknod "$tmp/this/dev/nvidia0" c 195 0 || exit 99
  HDAL_FSROOT=$tmp/this FAKECUDA_DEVICES=1 FAKECUDA_PCI_BUS_IDS=$bus "$HDAL_LS" -b cpu,cuda --of gres \
    >"$tmp/this-etc/gres.conf" || fail "this machine: hdal-ls --of gres: exit $?"
  cores=$(hwloc-calc "pci=$bus" --intersect core --sep ' ' | tr ' ' '\n' | awk '
    { if (n && $1 == last + 1) { last = $1; next }
      if (n) out = out (first == last ? first : first "-" last) ","
      first = last = $1; n++ }
    END { if (n) print out (first == last ? first : first "-" last) }')
  slurmd_reads this-etc "$(node_of gpu:fake_gpu_0:1)"
  echo "fake_gpu_0 1 0 $tmp/this/dev/nvidia0 Cores=$cores " >"$tmp/want"
  diff -u "$tmp/want" "$tmp/this-etc/got" || fail "this machine ($bus): what slurmd understood"
fi

[ $fails -eq 0 ] && echo "PASS: slurmd -G reads hdal-ls --of gres" && exit 0
exit 1
