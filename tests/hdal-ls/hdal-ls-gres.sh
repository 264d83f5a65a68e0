#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --of gres and the device nodes of --json (hdal-ls(1)) on a fake /sys
# and /proc (tests/tools/fake-fsroot.sh): two fake CUDA GPUs and a fake HIP one,
# one gres.conf line each in PCI bus id order, the cores of their NUMA nodes,
# both vendors' env flags on every line (Slurm wants one set per node);
# a machine without GPUs; hostile names and roots that gres.conf cannot hold.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
. "$srcdir/tools/fake-fsroot.sh"
fake_fsroot_test

"$HDAL_LS" -b cpu,cuda,rocm --of gres >"$tmp/out" 2>"$tmp/err" || fail "--of gres: exit $? ($(cat "$tmp/err"))"
cat >"$tmp/want" <<END
# Slurm gres.conf for this node, written by hdal-ls (hdal $version)
Name=gpu Type=fake_gpu_1 File=$tmp/root/dev/nvidia0 Cores=0-1 Flags=nvidia_gpu_env,amd_gpu_env
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
"$HDAL_LS" -b cpu,cuda,rocm --select 'cuda:1;rocm:*' --of gres | tail -n +2 >"$tmp/out"
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
Name=gpu Type=fake_gpu_2 File=$tmp/proc-only/dev/nvidia2 Flags=nvidia_gpu_env
END
diff -u "$tmp/want" "$tmp/out" || fail "/proc only: --of gres lines"
[ -s "$tmp/err" ] && fail "/proc only: stderr: $(cat "$tmp/err")"
rm "$tmp/proc-only/proc/driver/nvidia/gpus/0000:d8:00.0/information"
HDAL_FSROOT=$tmp/proc-only FAKECUDA_DEVICES=3 FAKECUDA_PCI_BUS_IDS=0000:af:00.0,0000:3b:00.0,0000:d8:00.0 \
  "$HDAL_LS" -b cuda --of gres >"$tmp/out" 2>"$tmp/err" || fail "/proc only, one file missing: exit $?"
[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "/proc only, one file missing: $(cat "$tmp/out")"
echo "hdal-ls: GPU 0000:d8:00.0 (device 2) has no device node (no device minor in $tmp/proc-only/proc/driver/nvidia/gpus/0000:d8:00.0/information): left out" >"$tmp/want"
diff -u "$tmp/want" "$tmp/err" || fail "/proc only, one file missing: the warning"

[ $fails -eq 0 ] && echo "PASS: hdal-ls --of gres" && exit 0
exit 1
