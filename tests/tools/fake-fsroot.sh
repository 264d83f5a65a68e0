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
