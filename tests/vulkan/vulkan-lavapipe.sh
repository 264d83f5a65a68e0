#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Vulkan backend through hdal-ls (docs/vulkan.md): Mesa's lavapipe for
# real, its fields against `vulkaninfo --summary` (vulkan-tools); the fake
# driver's GPUs paired with the fake CUDA driver's as the same hardware (where
# the CUDA backend is built).  77 without lavapipe or vulkaninfo.
set -u
: "${HDAL_LS:?run me from make check}" "${JQ:=jq}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# Sanitizer builds: lavapipe's frames have no frame pointers, so only the slow
# unwinder reaches the loader's call that tests/vulkan/lsan-vulkan.supp names.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"; export ASAN_OPTIONS

# The fake driver's two GPUs and the fake CUDA driver's two are the same
# hardware (UUID and PCI id); the fake CUDA driver is built with the CUDA backend.
fakes="$HDAL_TEST_MODULES"
if [ -f "$fakes/fakecuda.so" ]; then
  json=$(VK_DRIVER_FILES="$fakes/../fakevk_icd.json" HDAL_CUDA_LIBRARY="$fakes/fakecuda.so" FAKECUDA_DEVICES=2 \
    "$HDAL_LS" -b cuda,vulkan --json) || bad "hdal-ls with the fake drivers"
  printf '%s\n' "$json" | "$JQ" -e '
    [.devices[] | {p: .platform, id: .id, same: .same_hardware_as}] as $d |
    ($d | length) == 4 and
    ([$d[] | select(.p == "cuda")] | map(.id)) as $cuda |
    ([$d[] | select(.p == "vulkan")] | map(.same)) == [[$cuda[0]], [$cuda[1]]]' >/dev/null ||
    bad "fake Vulkan GPUs are not paired with the fake CUDA GPUs: $json"
fi

lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd*.json /etc/vulkan/icd.d/lvp_icd*.json; do [ -f "$f" ] && lvp=$f && break; done
if [ -z "$lvp" ] || ! command -v vulkaninfo >/dev/null; then
  echo "SKIP: lavapipe (mesa-vulkan-drivers) or vulkaninfo (vulkan-tools) not installed"
  [ $fail -eq 0 ] && exit 77
  exit 1
fi
export VK_DRIVER_FILES="$lvp"
summary=$(vulkaninfo --summary 2>/dev/null) || { echo "FAIL: vulkaninfo --summary"; exit 1; }
field() { printf '%s\n' "$summary" | sed -n "s/^[[:space:]]*$1 *= \(.*\)$/\1/p" | head -n 1; }
json=$("$HDAL_LS" -b cpu,vulkan --json) || bad "hdal-ls -b cpu,vulkan --json"
attr() { printf '%s\n' "$json" | "$JQ" -r --arg k "$1" '.devices[] | select(.platform == "vulkan") | .attributes[$k] // empty'; }
check() { [ "$(attr "$1")" = "$2" ] || bad "$1: hdal-ls says '$(attr "$1")', vulkaninfo '$2'"; }
check name "$(field deviceName)"
check uuid "$(field deviceUUID)"
check driver_uuid "$(field driverUUID)"
check driver_name "$(field driverName)"
check driver_info "$(field driverInfo)"
check vulkan_version "$(field apiVersion)"
check driver_version "$(field driverVersion)"
check vendor_id "$(field vendorID)"
check device_id "$(field deviceID)"
[ "$(field deviceType)" = PHYSICAL_DEVICE_TYPE_CPU ] && check vulkan_device_type cpu
printf '%s\n' "$json" | "$JQ" -e '
  [.devices[] | select(.platform == "vulkan")] | length == 1 and
  (.[0].runtime_class == "ifrt-native") and (.[0].dlpack_device.device_type_name == "kDLVulkan") and
  (.[0].runtime_class_reason == "Vulkan memory has no DLPack convention (kDLVulkan); hdal lists this device but does not create buffers on it") and
  (.[0].same_hardware_as | length) == 1' >/dev/null ||
  bad "lavapipe's device in --json: $json"
# The table a user sees, for the log.
"$HDAL_LS" -b cpu,vulkan
[ $fail -eq 0 ] && echo "ok: lavapipe as vulkaninfo lists it, IFRT-native, paired with the CPU device"
exit $fail
