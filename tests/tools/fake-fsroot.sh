# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the hdal-ls --of gres tests: a fake /sys and /proc under $1 (for
# HDAL_FSROOT) with two NVIDIA GPUs at 0000:3b:00.0 (minor 0, NUMA node 0)
# and 0000:af:00.0 (minor 1, node 1) and an AMD one at 0000:5e:00.0
# (renderD129), the fake CUDA driver giving the first two (as CUDA devices 1
# and 0), the fake HIP runtime the third, and the two-NUMA XML machine they sit in (without its comment,
# which hwloc's own XML reader does not take).
fake_fsroot() {
  root=$1
  for b in 0000:3b:00.0 0000:af:00.0 0000:5e:00.0; do mkdir -p "$root/sys/bus/pci/devices/$b" || return 1; done
  echo 0x10de >"$root/sys/bus/pci/devices/0000:3b:00.0/vendor"
  echo 0x10de >"$root/sys/bus/pci/devices/0000:af:00.0/vendor"
  echo 0x1002 >"$root/sys/bus/pci/devices/0000:5e:00.0/vendor"
  mkdir -p "$root/sys/bus/pci/devices/0000:5e:00.0/drm/card1" "$root/sys/bus/pci/devices/0000:5e:00.0/drm/renderD129"
  mkdir -p "$root/proc/driver/nvidia/gpus/0000:3b:00.0" "$root/proc/driver/nvidia/gpus/0000:af:00.0" "$root/dev"
  printf 'Model: \t\t Fake GPU\nIRQ:   \t\t 42\nDevice Minor: \t 0\n' >"$root/proc/driver/nvidia/gpus/0000:3b:00.0/information"
  printf 'Model: \t\t Fake GPU\nDevice Minor: \t 1\n' >"$root/proc/driver/nvidia/gpus/0000:af:00.0/information"
  grep -v '^<!--' "$srcdir/topologies/cuda-two-numa.xml" >"$root/machine.xml"
  HDAL_FSROOT=$root HWLOC_XMLFILE=$root/machine.xml HDAL_CUDA_LIBRARY=$HDAL_TEST_MODULES/fakecuda.so
  FAKECUDA_DEVICES=2 FAKECUDA_PCI_BUS_IDS=0000:af:00.0,0000:3b:00.0
  HDAL_ROCM_LIBRARY=$HDAL_TEST_MODULES/fakehip6.so FAKEHIP_DEVICES=1 FAKEHIP_PCI_BUS_IDS=0000:5e:00.0
  export HDAL_FSROOT HWLOC_XMLFILE HDAL_CUDA_LIBRARY FAKECUDA_DEVICES FAKECUDA_PCI_BUS_IDS HDAL_ROCM_LIBRARY
  export FAKEHIP_DEVICES FAKEHIP_PCI_BUS_IDS
}

# What each test of these outputs starts with: $tmp (removed at exit), $fails
# counted by fail(), hdal's variables cleared, the fake machine at $tmp/root,
# and hdal-ls's $version.
fake_fsroot_test() {
  tmp=$(mktemp -d) || exit 99
  trap 'rm -rf "$tmp"' EXIT
  fails=0
  unset HDAL_BACKENDS HWLOC_SYNTHETIC HDAL_DEVICE_SELECTOR HDAL_DEBUG
  fake_fsroot "$tmp/root" || exit 99
  version=$("$HDAL_LS" --version | sed 's/.* //')
}
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# fake_cuda_host ROOT N: a host of N NVIDIA GPUs (1 to 4) for the simulated
# hosts of tests/mpi/simhosts.sh: under ROOT (its HDAL_FSROOT) the PCI
# functions and the driver's /proc entries, and /dev/nvidia0 .. N-1 made by
# mknod (Slurm's gres.conf names them), GPU i at the i-th bus id in bus id
# order, which is also CUDA's order here (Slurm's CUDA_VISIBLE_DEVICES
# indexes gres.conf, which hdal-ls writes in bus id order).  Prints the host's
# environment, one `export VAR=value` a line (what a shell sources and what
# Slurm's TaskProlog prints).
fake_cuda_host() {
  fch_root=$1 fch_n=$2 fch_ids= fch_i=0
  mkdir -p "$fch_root/dev" || return 1
  for fch_b in 0000:3b:00.0 0000:5e:00.0 0000:af:00.0 0000:d8:00.0; do
    [ $fch_i -lt "$fch_n" ] || break
    mkdir -p "$fch_root/sys/bus/pci/devices/$fch_b" "$fch_root/proc/driver/nvidia/gpus/$fch_b" || return 1
    echo 0x10de >"$fch_root/sys/bus/pci/devices/$fch_b/vendor"
    printf 'Model: \t\t Fake GPU\nDevice Minor: \t %d\n' $fch_i >"$fch_root/proc/driver/nvidia/gpus/$fch_b/information"
    mknod "$fch_root/dev/nvidia$fch_i" c 195 $fch_i || return 1
    fch_ids=$fch_ids${fch_ids:+,}$fch_b
    fch_i=$((fch_i + 1))
  done
  echo "export HDAL_FSROOT=$fch_root"
  echo "export HDAL_CUDA_LIBRARY=$HDAL_TEST_MODULES/fakecuda.so"
  echo "export FAKECUDA_DEVICES=$fch_n"
  echo "export FAKECUDA_PCI_BUS_IDS=$fch_ids"
}
