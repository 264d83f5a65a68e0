#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --of cdi (hdal-ls(1)) on the fake machine of tests/tools/fake-fsroot.sh:
# one CDI device per GPU named by index and by UUID, plus "all", each with its
# own node and a selector that keeps the same GPU in every backend, and the
# PCIe root of each GPU (HDAL_PCIE_ROOT, as hwloc-info finds the host bridge
# above it in the XML: Kubernetes' pcieRoot), none for the GPU the XML lacks;
# the shared nodes once; the spec valid against Debian's CDI schema (and CDI's own name
# rules); hostile roots escaped.  Then Debian's podman (as root, with runc and
# busybox-static) runs a container with one of the devices: the node is there
# and the selector set.  Parts whose tools are missing are skipped, and the
# test skips (77) at the end if nothing failed.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}" "${JQ:=jq}"
. "$srcdir/tools/fake-fsroot.sh"
fake_fsroot_test
spec= skipped=
trap 'rm -rf "$tmp"; [ -z "$spec" ] || rm -f "$spec"' EXIT
skip() { echo "skipped: $*"; skipped=yes; }
python=/usr/bin/python3
# Debian's golang CDI package: the Go module moved from
# github.com/container-orchestrated-devices to tags.cncf.io in CDI 0.7 (Debian 13).
schema=${HDAL_CDI_SCHEMA:-}
if [ -z "$schema" ]; then
  for m in tags.cncf.io github.com/container-orchestrated-devices; do
    schema=/usr/share/gocode/src/$m/container-device-interface/schema
    [ -f "$schema/schema.json" ] && break
  done
fi
validate() { # FILE WHAT
  "$python" "$srcdir/tools/validate-cdi.py" "$schema" "$1" >"$tmp/why"
  case $? in 0) ;; 77) skip "schema: $(cat "$tmp/why")" ;; *) fail "$2: $(cat "$tmp/why")" ;; esac
}

"$HDAL_LS" -b cpu,cuda,rocm --of cdi >"$tmp/cdi.json" 2>"$tmp/err" || fail "--of cdi: exit $? ($(cat "$tmp/err"))"
[ -s "$tmp/err" ] && fail "--of cdi wrote to stderr: $(cat "$tmp/err")"
validate "$tmp/cdi.json" "--of cdi"
# The devices in bus id order (3b, 5e, af), each by index and by UUID, then all.
"$JQ" -e '.cdiVersion == "0.5.0" and .kind == "hdal/gpu" and ([.devices[].name] ==
  ["0", "GPU-facec0da-0001-4000-8000-000000000001", "1", "GPU-fa7eb1d0c0de0000",
   "2", "GPU-facec0da-0001-4000-8000-000000000000", "all"])' "$tmp/cdi.json" >/dev/null ||
  fail "names: $(cat "$tmp/cdi.json")"
# The PCIe roots of the two NVIDIA GPUs, from the XML (pci0000:3a and pci0000:ae).
root3b=$(xml_pcie_root "$HWLOC_XMLFILE" 0000:3b:00.0) && rootaf=$(xml_pcie_root "$HWLOC_XMLFILE" 0000:af:00.0) ||
  { root3b=pci0000:3a rootaf=pci0000:ae; echo "hwloc-info not found (Debian: hwloc-nox): the PCIe roots not derived"; }
[ "$root3b $rootaf" = "pci0000:3a pci0000:ae" ] || fail "the XML's PCIe roots: $root3b $rootaf"
"$JQ" -e --arg r "$tmp/root" --arg p3b "HDAL_PCIE_ROOT=$root3b" --arg paf "HDAL_PCIE_ROOT=$rootaf" \
  '[.devices[] | [.name, .containerEdits.env, .containerEdits.deviceNodes]] == [
  ["0", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:3b:00.0", $p3b], [{"path": "/dev/nvidia0", "hostPath": ($r + "/dev/nvidia0")}]],
  ["GPU-facec0da-0001-4000-8000-000000000001", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:3b:00.0", $p3b],
   [{"path": "/dev/nvidia0", "hostPath": ($r + "/dev/nvidia0")}]],
  ["1", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:5e:00.0"],
   [{"path": "/dev/dri/renderD129", "hostPath": ($r + "/dev/dri/renderD129")}]],
  ["GPU-fa7eb1d0c0de0000", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:5e:00.0"],
   [{"path": "/dev/dri/renderD129", "hostPath": ($r + "/dev/dri/renderD129")}]],
  ["2", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:af:00.0", $paf], [{"path": "/dev/nvidia1", "hostPath": ($r + "/dev/nvidia1")}]],
  ["GPU-facec0da-0001-4000-8000-000000000000", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:af:00.0", $paf],
   [{"path": "/dev/nvidia1", "hostPath": ($r + "/dev/nvidia1")}]],
  ["all", ["HDAL_DEVICE_SELECTOR=*:cpu;*:pci=0000:3b:00.0,pci=0000:5e:00.0,pci=0000:af:00.0",
           ($p3b + ",," + ($paf | ltrimstr("HDAL_PCIE_ROOT=")))],
   [{"path": "/dev/nvidia0", "hostPath": ($r + "/dev/nvidia0")},
    {"path": "/dev/dri/renderD129", "hostPath": ($r + "/dev/dri/renderD129")},
    {"path": "/dev/nvidia1", "hostPath": ($r + "/dev/nvidia1")}]]]
  and .containerEdits.deviceNodes == [{"path": "/dev/nvidiactl", "hostPath": ($r + "/dev/nvidiactl")},
    {"path": "/dev/nvidia-uvm", "hostPath": ($r + "/dev/nvidia-uvm")}, {"path": "/dev/kfd", "hostPath": ($r + "/dev/kfd")}]' \
  "$tmp/cdi.json" >/dev/null || fail "devices: $(cat "$tmp/cdi.json")"

# Each device's selector keeps, here too, the CPU devices and that GPU in every backend that sees it.
for i in 0 2 4; do
  sel=$("$JQ" -r ".devices[$i].containerEdits.env[0]" "$tmp/cdi.json" | sed 's/^HDAL_DEVICE_SELECTOR=//')
  bus=${sel##*pci=}
  got=$("$HDAL_LS" -b cpu,cuda,rocm --select "$sel" --query=platform,pci.bus_id --format=csv,noheader | tr '\n' ' ')
  case $bus in
    0000:5e:00.0) want="cpu, [N/A] cpu, [N/A] rocm, $bus " ;;
    *) want="cpu, [N/A] cpu, [N/A] cuda, $bus " ;;
  esac
  [ "$got" = "$want" ] || fail "selector '$sel' kept '$got', expected '$want'"
done

# --select narrows the spec; no GPU: no device, still a valid spec.
"$HDAL_LS" -b cpu,cuda,rocm --select 'cpu:*;rocm:*' --of cdi >"$tmp/one.json" || fail "--select: exit $?"
"$JQ" -e '[.devices[].name] == ["0", "GPU-fa7eb1d0c0de0000", "all"] and
  [.containerEdits.deviceNodes[].path] == ["/dev/kfd"]' "$tmp/one.json" >/dev/null || fail "--select: $(cat "$tmp/one.json")"
HWLOC_XMLFILE= HWLOC_SYNTHETIC="numa:2 pu:1" "$HDAL_LS" -b cpu --of cdi >"$tmp/none.json" || fail "no GPU: exit $?"
"$JQ" -e '.devices == [] and .containerEdits.deviceNodes == []' "$tmp/none.json" >/dev/null || fail "no GPU: $(cat "$tmp/none.json")"
validate "$tmp/none.json" "no GPU"

# A root of quotes, a backslash, spaces and a newline: escaped, the spec still valid and the paths exact.
hostile="$tmp/a \"q\" \\ b
c"
mkdir -p "$hostile" && fake_fsroot "$hostile/root" || exit 99
"$HDAL_LS" -b cuda --of cdi >"$tmp/hostile.json" 2>"$tmp/err" || fail "hostile root: exit $?"
validate "$tmp/hostile.json" "hostile root"
"$JQ" -e --arg r "$hostile/root" '.devices[0].containerEdits.deviceNodes == [{"path": "/dev/nvidia0", "hostPath": ($r + "/dev/nvidia0")}]' \
  "$tmp/hostile.json" >/dev/null || fail "hostile root: $(cat "$tmp/hostile.json")"

# A root with no sysfs, only the NVIDIA driver's /proc files: the three CUDA
# GPUs are NVIDIA's, each a device; one without its information file is named
# on stderr with the reason.
mkdir -p "$tmp/proc-only/dev" || exit 99
for b in 0000:3b:00.0 0000:af:00.0 0000:d8:00.0; do mkdir -p "$tmp/proc-only/proc/driver/nvidia/gpus/$b" || exit 99; done
printf 'Device Minor: \t 0\n' >"$tmp/proc-only/proc/driver/nvidia/gpus/0000:3b:00.0/information"
printf 'Device Minor: \t 1\n' >"$tmp/proc-only/proc/driver/nvidia/gpus/0000:af:00.0/information"
printf 'Device Minor: \t 2\n' >"$tmp/proc-only/proc/driver/nvidia/gpus/0000:d8:00.0/information"
proc_only() {
  HDAL_FSROOT=$tmp/proc-only FAKECUDA_DEVICES=3 FAKECUDA_PCI_BUS_IDS=0000:af:00.0,0000:3b:00.0,0000:d8:00.0 \
    "$HDAL_LS" -b cuda --of cdi >"$tmp/proc.json" 2>"$tmp/err" || fail "/proc only: exit $?"
}
proc_only
"$JQ" -e '[.devices[] | select(.name | test("^[0-9]+$")) | .containerEdits.deviceNodes[0].path] ==
  ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"] and .containerEdits.deviceNodes[0].path == "/dev/nvidiactl"' \
  "$tmp/proc.json" >/dev/null || fail "/proc only: $(cat "$tmp/proc.json")"
[ -s "$tmp/err" ] && fail "/proc only: stderr: $(cat "$tmp/err")"
rm "$tmp/proc-only/proc/driver/nvidia/gpus/0000:af:00.0/information"
proc_only
"$JQ" -e '[.devices[] | select(.name | test("^[0-9]+$")) | .containerEdits.deviceNodes[0].path] ==
  ["/dev/nvidia0", "/dev/nvidia2"]' "$tmp/proc.json" >/dev/null || fail "/proc only, one file missing: $(cat "$tmp/proc.json")"
echo "hdal-ls: GPU 0000:af:00.0 (device 0) has no device node (no device minor in $tmp/proc-only/proc/driver/nvidia/gpus/0000:af:00.0/information): left out" >"$tmp/want"
diff -u "$tmp/want" "$tmp/err" || fail "/proc only, one file missing: the warning"
fake_fsroot "$tmp/root" || exit 99

# Debian's podman runs a container with device "1" (the AMD GPU: its own node and /dev/kfd).
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || [ ! -x /bin/busybox ]; then
  skip "podman: needs podman, runc and busybox-static (Debian)"
elif [ "$(id -u)" -ne 0 ]; then
  skip "podman: runs as root here (CDI specs in /run/cdi)"
else
  mkdir -p "$tmp/root/dev/dri" "$tmp/image/bin" && cp /bin/busybox "$tmp/image/bin/" && ln -s busybox "$tmp/image/bin/sh" &&
    ln -s busybox "$tmp/image/bin/ls" || exit 99
  # Character devices with /dev/null's numbers: the container may open them.
  for n in nvidia0 nvidia1 nvidiactl nvidia-uvm kfd dri/renderD129; do mknod "$tmp/root/dev/$n" c 1 3 || exit 99; done
  "$HDAL_LS" -b cpu,cuda,rocm --of cdi >"$tmp/cdi.json" || fail "--of cdi: exit $?"
  # podman 4.3 reads /etc/cdi and /run/cdi only (one name: a spec left by a killed run is replaced,
  # not doubled); a storage of the test's own (removed with $tmp).
  mkdir -p /run/cdi && spec=/run/cdi/hdal-test.json && cp "$tmp/cdi.json" "$spec" || exit 99
  podman="podman --root $tmp/storage --runroot $tmp/run --storage-driver vfs --cgroup-manager cgroupfs --events-backend none"
  run="run --rm --runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
  if ! tar -C "$tmp/image" -c . | $podman import -q - hdal-test-busybox >/dev/null 2>"$tmp/err" ||
     ! timeout 120 $podman $run hdal-test-busybox sh -c : 2>>"$tmp/err"; then
    skip "podman cannot run a container here: $(tail -3 "$tmp/err")"
  else
    timeout 120 $podman $run --device hdal/gpu=1 hdal-test-busybox \
      sh -c 'ls /dev/dri/renderD129 /dev/kfd && echo "$HDAL_DEVICE_SELECTOR" && ls /dev/nvidia0 2>&1' >"$tmp/out" 2>&1
    rc=$?
    printf '/dev/dri/renderD129\n/dev/kfd\n*:cpu;*:pci=0000:5e:00.0\nls: /dev/nvidia0: No such file or directory\n' >"$tmp/want"
    [ $rc -eq 1 ] && diff -u "$tmp/want" "$tmp/out" || fail "podman --device hdal/gpu=1 (exit $rc): $(cat "$tmp/out")"
    timeout 120 $podman $run --device hdal/gpu=GPU-facec0da-0001-4000-8000-000000000000 hdal-test-busybox \
      sh -c 'ls /dev/nvidia1 /dev/nvidiactl /dev/nvidia-uvm /dev/kfd >/dev/null && echo "$HDAL_PCIE_ROOT"' >"$tmp/out" 2>&1
    [ $? -eq 0 ] && [ "$(cat "$tmp/out")" = "$rootaf" ] || fail "podman --device by UUID: $(cat "$tmp/out")"
    $podman rmi -a -f >/dev/null 2>&1
  fi
fi

[ $fails -eq 0 ] || exit 1
[ -z "$skipped" ] && echo "PASS: hdal-ls --of cdi" && exit 0
echo "SKIP: parts of hdal-ls --of cdi were skipped"
exit 77
