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

# xml_machine ROOT [XML BUS...]: a real machine with PCI GPUs, by default hwloc's
# 24em64t-2n6c2t-pci.xml (tests/core/test_locality.c says more): two packages of
# six cores with two threads, three NVIDIA GPUs in its PCI tree, 0000:06:00.0
# under package 0, 0000:11:00.0 and 0000:14:00.0 under package 1; or topology
# XML (under topologies/) with the GPUs at BUS...; under ROOT (its HDAL_FSROOT)
# their PCI functions and the driver's /proc entries, minors in the order
# given, and the fake CUDA driver giving those bus ids.  Sets and exports the
# variables as fake_fsroot does; xml_gpus holds the bus ids.
xml_machine() {
  xm_root=$1 xm_file=24em64t-2n6c2t-pci.xml xml_gpus="0000:06:00.0 0000:11:00.0 0000:14:00.0"
  if [ $# -gt 1 ]; then xm_file=$2; shift 2; xml_gpus=$*; fi
  xm_i=0
  for xm_b in $xml_gpus; do
    mkdir -p "$xm_root/sys/bus/pci/devices/$xm_b" "$xm_root/proc/driver/nvidia/gpus/$xm_b" "$xm_root/dev" || return 1
    echo 0x10de >"$xm_root/sys/bus/pci/devices/$xm_b/vendor"
    printf 'Model: \t\t Fake GPU\nDevice Minor: \t %d\n' $xm_i >"$xm_root/proc/driver/nvidia/gpus/$xm_b/information"
    xm_i=$((xm_i + 1))
  done
  HDAL_FSROOT=$xm_root HWLOC_XMLFILE=$srcdir/topologies/$xm_file HDAL_CUDA_LIBRARY=$HDAL_TEST_MODULES/fakecuda.so
  FAKECUDA_DEVICES=$xm_i FAKECUDA_PCI_BUS_IDS=$(echo $xml_gpus | tr ' ' ,)
  export HDAL_FSROOT HWLOC_XMLFILE HDAL_CUDA_LIBRARY FAKECUDA_DEVICES FAKECUDA_PCI_BUS_IDS
}

# What hwloc's own tools say of PCI device BUS in hwloc XML file XML (hwloc-nox:
# hwloc-calc, hwloc-info; each fails, printing nothing, without them):
# xml_cores XML BUS: the logical indexes of the cores its locality meets, as
# a range list ("0-5,12-17"), which is how gres.conf(5)'s Cores= numbers them.
xml_cores() {
  command -v hwloc-calc >/dev/null || return 1
  hwloc-calc --if xml -i "$1" "pci=$2" --intersect core --sep ' ' | tr ' ' '\n' | awk '
    NF { if (n && $1 == last + 1) { last = $1; next }
         if (n) out = out (first == last ? first : first "-" last) ","
         first = last = $1; n++ }
    END { if (n) print out (first == last ? first : first "-" last) }'
}
# xml_pcie_root XML BUS: its PCIe root as Kubernetes' pcieRoot spells it,
# "pci<domain>:<bus>": the domain of its bus id (a host bridge's domain is its
# devices'), the secondary bus of the host bridge above it (hwloc-info 2.9 says
# "attr PCI secondary bus = 00", 2.12 "attr PCI secondary bus bus = 00").
xml_pcie_root() {
  command -v hwloc-info >/dev/null || return 1
  xpr_bus=$(hwloc-info --if xml -i "$1" --ancestors "pci=$2" 2>/dev/null |
    sed -n '/full type = HostBridge/,/secondary bus/s/.*attr PCI secondary bus\( bus\)\{0,1\} = \([0-9a-f]*\)$/\2/p')
  [ -n "$xpr_bus" ] && echo "pci${2%%:*}:$xpr_bus"
}
