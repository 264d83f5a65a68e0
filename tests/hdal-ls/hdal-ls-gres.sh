#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --of gres and the device nodes of --json (hdal-ls(1)) on a fake /sys
# and /proc (tests/tools/fake-fsroot.sh): two fake CUDA GPUs and a fake HIP one,
# one gres.conf line each in PCI bus id order, the cores of their locality
# (hdal_device_locality()), both vendors' env flags on every line (Slurm wants
# one set per node), a comment saying why a GPU the topology lacks has no
# Cores=; a real machine's topology (hwloc's 24em64t-2n6c2t-pci.xml), each
# GPU's Cores= what hwloc-calc finds in the file, and the same seen from a
# cgroup of part of its CPUs (slurmd numbers the whole node's cores); a
# machine without GPUs; hostile names and roots that gres.conf cannot hold.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
. "$srcdir/tools/fake-fsroot.sh"
fake_fsroot_test

"$HDAL_LS" -b cpu,cuda,rocm --of gres >"$tmp/out" 2>"$tmp/err" || fail "--of gres: exit $? ($(cat "$tmp/err"))"
cat >"$tmp/want" <<END
# Slurm gres.conf for this node, written by hdal-ls (hdal $version)
Name=gpu Type=fake_gpu_1 File=$tmp/root/dev/nvidia0 Cores=0-1 Flags=nvidia_gpu_env,amd_gpu_env
# GPU 0000:5e:00.0: no Cores= (hdal_device_locality: device 4 (rocm, Fake AMD GPU 0): hwloc's topology has no PCI object with bus id 0000:5e:00.0)
Name=gpu Type=fake_amd_gpu_0 File=$tmp/root/dev/dri/renderD129 Flags=nvidia_gpu_env,amd_gpu_env
Name=gpu Type=fake_gpu_0 File=$tmp/root/dev/nvidia1 Cores=2-3 Flags=nvidia_gpu_env,amd_gpu_env
END
diff -u "$tmp/want" "$tmp/out" || fail "--of gres lines"
[ -s "$tmp/err" ] && fail "--of gres wrote to stderr: $(cat "$tmp/err")"

# --json: each GPU's nodes, its own first; none for the CPU devices.
"$HDAL_LS" -b cpu,cuda,rocm --json >"$tmp/json" || fail "--json: exit $?"
"$JQ" -e --arg r "$tmp/root" '[.devices[] | .device_nodes] ==
  [null, null, [$r + "/dev/nvidia1", $r + "/dev/nvidiactl", $r + "/dev/nvidia-uvm"],
   [$r + "/dev/nvidia0", $r + "/dev/nvidiactl", $r + "/dev/nvidia-uvm"], [$r + "/dev/dri/renderD129", $r + "/dev/kfd"]]' \
  "$tmp/json" >/dev/null || fail "device_nodes: $(cat "$tmp/json")"

# --select keeps the lines of the GPUs it keeps.
"$HDAL_LS" -b cpu,cuda,rocm --select 'cuda:1;rocm:*' --of gres | grep -v '^#' >"$tmp/out"
[ "$(cut -d' ' -f2 "$tmp/out" | tr '\n' ' ')" = "Type=fake_gpu_1 Type=fake_amd_gpu_0 " ] || fail "--select and gres: $(cat "$tmp/out")"

# No GPU: only the comment.
HWLOC_XMLFILE= HWLOC_SYNTHETIC="numa:2 pu:1" "$HDAL_LS" -b cpu --of gres >"$tmp/out"
[ "$(cat "$tmp/out")" = "# Slurm gres.conf for this node, written by hdal-ls (hdal $version)" ] || fail "no GPU: $(cat "$tmp/out")"

# Hostile model names become one word of [a-z0-9_]; a node path gres.conf would split is left out, said on stderr.
FAKECUDA_NAMES='Evil=Type File=/etc/passwd #x,  Ünïcode  GPU ' "$HDAL_LS" -b cuda --of gres >"$tmp/out" 2>"$tmp/err"
grep -q "^Name=gpu Type=evil_type_file_etc_passwd_x File=$tmp/root/dev/nvidia1 Cores=2-3 Flags=nvidia_gpu_env\$" "$tmp/out" &&
  grep -q "^Name=gpu Type=n_code_gpu File=$tmp/root/dev/nvidia0 " "$tmp/out" || fail "hostile names: $(cat "$tmp/out")"
mkdir "$tmp/with space" && fake_fsroot "$tmp/with space/root" || exit 99
"$HDAL_LS" -b cuda --of gres >"$tmp/out" 2>"$tmp/err"
[ "$(wc -l <"$tmp/out")" -eq 1 ] && [ "$(grep -c "characters gres.conf cannot hold: left out" "$tmp/err")" -eq 2 ] ||
  fail "a root with a space: $(cat "$tmp/out" "$tmp/err")"

# A root with no sysfs, only the NVIDIA driver's /proc files (a container given
# them): the GPUs are CUDA's, hence NVIDIA's, and each has its line; one
# without its information file is named on stderr with the reason.
proc_only() { # ROOT: three GPUs, minors 0-2
  for b in 0000:3b:00.0 0000:af:00.0 0000:d8:00.0; do mkdir -p "$1/proc/driver/nvidia/gpus/$b" || return 1; done
  mkdir -p "$1/dev"
  printf 'Model: \t\t Fake GPU\nDevice Minor: \t 0\n' >"$1/proc/driver/nvidia/gpus/0000:3b:00.0/information"
  printf 'Model: \t\t Fake GPU\nDevice Minor: \t 1\n' >"$1/proc/driver/nvidia/gpus/0000:af:00.0/information"
  printf 'Model: \t\t Fake GPU\nDevice Minor: \t 2\n' >"$1/proc/driver/nvidia/gpus/0000:d8:00.0/information"
}
proc_only "$tmp/proc-only" || exit 99
HDAL_FSROOT=$tmp/proc-only FAKECUDA_DEVICES=3 FAKECUDA_PCI_BUS_IDS=0000:af:00.0,0000:3b:00.0,0000:d8:00.0 \
  "$HDAL_LS" -b cuda --of gres >"$tmp/out" 2>"$tmp/err" || fail "/proc only: exit $?"
cat >"$tmp/want" <<END
# Slurm gres.conf for this node, written by hdal-ls (hdal $version)
Name=gpu Type=fake_gpu_1 File=$tmp/proc-only/dev/nvidia0 Cores=0-1 Flags=nvidia_gpu_env
Name=gpu Type=fake_gpu_0 File=$tmp/proc-only/dev/nvidia1 Cores=2-3 Flags=nvidia_gpu_env
# GPU 0000:d8:00.0: no Cores= (hdal_device_locality: device 2 (cuda, Fake GPU 2): hwloc's topology has no PCI object with bus id 0000:d8:00.0)
Name=gpu Type=fake_gpu_2 File=$tmp/proc-only/dev/nvidia2 Flags=nvidia_gpu_env
END
diff -u "$tmp/want" "$tmp/out" || fail "/proc only: --of gres lines"
[ -s "$tmp/err" ] && fail "/proc only: stderr: $(cat "$tmp/err")"
rm "$tmp/proc-only/proc/driver/nvidia/gpus/0000:d8:00.0/information"
HDAL_FSROOT=$tmp/proc-only FAKECUDA_DEVICES=3 FAKECUDA_PCI_BUS_IDS=0000:af:00.0,0000:3b:00.0,0000:d8:00.0 \
  "$HDAL_LS" -b cuda --of gres >"$tmp/out" 2>"$tmp/err" || fail "/proc only, one file missing: exit $?"
[ "$(grep -vc '^#' "$tmp/out")" -eq 2 ] || fail "/proc only, one file missing: $(cat "$tmp/out")"
echo "hdal-ls: GPU 0000:d8:00.0 (device 2) has no device node (no device minor in $tmp/proc-only/proc/driver/nvidia/gpus/0000:d8:00.0/information): left out" >"$tmp/want"
diff -u "$tmp/want" "$tmp/err" || fail "/proc only, one file missing: the warning"

# A real machine's topology (tools/fake-fsroot.sh, xml_machine): each GPU's
# Cores= the logical indexes of the cores of its PCI object's locality, as
# hwloc-calc finds them in the same file (two threads a core: the cpuset of
# package 0 is CPUs 0, 2, ..., 22, its cores 0-5); a synthetic topology has
# no PCI objects: no Cores=, a comment each saying so, and slurmd reads the
# rest.
xml_machine "$tmp/xml" || exit 99
xml=$HWLOC_XMLFILE
"$HDAL_LS" -b cpu,cuda --of gres >"$tmp/out" 2>"$tmp/err" || fail "XML machine: exit $? ($(cat "$tmp/err"))"
[ -s "$tmp/err" ] && fail "XML machine: stderr: $(cat "$tmp/err")"
if xml_cores "$xml" 0000:06:00.0 >/dev/null; then
  { echo "# Slurm gres.conf for this node, written by hdal-ls (hdal $version)"; i=0
    for b in $xml_gpus; do
      echo "Name=gpu Type=fake_gpu_$i File=$tmp/xml/dev/nvidia$i Cores=$(xml_cores "$xml" "$b") Flags=nvidia_gpu_env"
      i=$((i + 1))
    done; } >"$tmp/want"
  diff -u "$tmp/want" "$tmp/out" || fail "XML machine: Cores= as hwloc-calc says"
else
  echo "hwloc-calc not found (Debian: hwloc-nox): the XML machine's cores not derived"
fi
grep -q '^Name=gpu Type=fake_gpu_0 .* Cores=0-5 ' "$tmp/out" && grep -q '^Name=gpu Type=fake_gpu_2 .* Cores=6-11 ' "$tmp/out" ||
  fail "XML machine: package 0's cores 0-5, package 1's 6-11: $(cat "$tmp/out")"
# The same machine seen from a cgroup of NUMA node 1's CPUs (the file's
# allowed sets): slurmd numbers the whole node's cores, so the lines are the
# same, GPU 0 near the CPUs this process may not use included.
cp "$tmp/out" "$tmp/whole"
sed 's/allowed_cpuset="0x00ffffff"/allowed_cpuset="0x00aaaaaa"/; s/allowed_nodeset="0x00000003"/allowed_nodeset="0x00000002"/' \
  "$xml" >"$tmp/restricted.xml"
grep -q 'allowed_cpuset="0x00aaaaaa"' "$tmp/restricted.xml" || fail "restricted machine: the file's allowed sets not found"
HWLOC_XMLFILE=$tmp/restricted.xml "$HDAL_LS" -b cpu,cuda --of gres >"$tmp/out" 2>"$tmp/err" ||
  fail "restricted machine: exit $? ($(cat "$tmp/err"))"
diff -u "$tmp/whole" "$tmp/out" || fail "restricted machine: Cores= as the whole node's"
HWLOC_XMLFILE= HWLOC_SYNTHETIC="pack:2 core:6 pu:2" "$HDAL_LS" -b cpu,cuda --of gres >"$tmp/out" 2>"$tmp/err"
[ "$(grep -c '^Name=gpu .* Cores=' "$tmp/out")" -eq 0 ] && [ "$(grep -c '^Name=gpu ' "$tmp/out")" -eq 3 ] &&
  [ "$(grep -c '^# GPU 0000:..:00.0: no Cores= (hdal_device_locality: .*the topology has no PCI objects' "$tmp/out")" -eq 3 ] ||
  fail "synthetic machine: $(cat "$tmp/out")"

[ $fails -eq 0 ] && echo "PASS: hdal-ls --of gres" && exit 0
exit 1
