#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the OpenCL ICD vendor directories the OpenCL suite runs with, from
# what this machine has installed:
#   OUT/pocl/pocl.icd   the installed PoCL ICD, alone (other vendors' ICDs left out)
#   OUT/empty/          no ICD at all
#   OUT/pocl-devices    POCL_DEVICES for two CPU devices, from the drivers PoCL ships
#   OUT/fake/fake.icd   the suite's fake vendor FAKE_LIB (tests/fakes/cl/fakecl.c), alone
#   OUT/mixed/          the fake vendor and PoCL together
# Without PoCL, OUT/pocl and OUT/mixed are not made and the PoCL tests skip.
# Usage: make-vendors.sh OUT [FAKE_LIB]
set -u
out=${1:?usage: make-vendors.sh OUT [FAKE_LIB]}
fake=${2:-}
vendors=${OPENCL_VENDOR_PATH:-/etc/OpenCL/vendors}
rm -rf "$out/pocl" "$out/empty" "$out/pocl-devices" "$out/fake" "$out/mixed"
mkdir -p "$out/empty" || exit 1
if [ -n "$fake" ]; then
  mkdir -p "$out/fake" && echo "$fake" >"$out/fake/fake.icd" || exit 1
fi

icd=
for f in "$vendors"/*.icd; do
  [ -f "$f" ] && grep -qi pocl "$f" && { icd=$f; break; }
done
[ -n "$icd" ] || { echo "make-vendors: no PoCL ICD in $vendors: OpenCL tests will skip"; exit 0; }
lib=$(sed -n '1{s/[[:space:]]*$//;p;}' "$icd")

# Where the loader will find the library: the driver modules sit next to it.
path=
case $lib in
  /*) path=$lib ;;
  *)
    for ldc in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
      path=$("$ldc" -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }') && [ -n "$path" ] && break
    done
    if [ -z "$path" ]; then
      for d in /usr/lib/*-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
        [ -e "$d/$lib" ] && { path=$d/$lib; break; }
      done
    fi ;;
esac
[ -n "$path" ] && [ -e "$path" ] || { echo "make-vendors: $icd names $lib, not found: OpenCL tests will skip"; exit 0; }

# PoCL's CPU drivers are libpocl-devices-<name>.so: basic and pthread in
# Debian's PoCL 3.1 and 6.0 (PoCL 4 renamed their devices cpu-minimal and cpu,
# and takes both names in POCL_DEVICES); cpu-minimal and cpu where a build
# names the files so.  Two devices, from two drivers when there are two.
drivers=$(ls "$(dirname "$path")/pocl" 2>/dev/null | sed -n 's/^libpocl-devices-\(.*\)\.so$/\1/p')
has() { echo "$drivers" | grep -qx "$1"; }
devices=
for pair in "basic pthread" "cpu-minimal cpu" "pthread pthread" "cpu cpu" "basic basic"; do
  set -- $pair
  has "$1" && has "$2" && { devices=$pair; break; }
done
[ -n "$devices" ] || { echo "make-vendors: no PoCL CPU driver next to $path (found: $drivers): OpenCL tests will skip"; exit 0; }

mkdir -p "$out/pocl" && cp "$icd" "$out/pocl/pocl.icd" && echo "$devices" >"$out/pocl-devices" || exit 1
if [ -n "$fake" ]; then
  mkdir -p "$out/mixed" && cp "$icd" "$out/mixed/pocl.icd" && cp "$out/fake/fake.icd" "$out/mixed/" || exit 1
fi
echo "make-vendors: $icd ($path), POCL_DEVICES=\"$devices\""
