#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls --of nfd (hdal-ls(1)): Node Feature Discovery features per platform
# on the fake machine of tests/tools/fake-fsroot.sh, with the PCIe roots of
# the GPUs its XML places (Kubernetes' pcieRoot, ':' made '_', as hwloc-info
# finds the host bridge above each); --select; hostile names
# from a module (tests/modules/hostile_ls.c) and the fake drivers: every line a
# feature NFD takes (a name of at most 63 characters of [a-z0-9._-], a value
# of [A-Za-z0-9._-]), nothing read as another key, memory that does not wrap.
set -u
: "${HDAL_LS:?run me from make check}" "${HDAL_TEST_MODULES:?run me from make check}" "${srcdir:=.}"
. "$srcdir/tools/fake-fsroot.sh"
fake_fsroot_test
# Every line but the comment: name=value as NFD's local source reads it.
well_formed() {
  ! tail -n +2 "$1" | grep -v -E '^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?=[A-Za-z0-9._-]{1,63}$'
}

# The roots of the CUDA devices 0 (0000:af:00.0) and 1 (0000:3b:00.0); none for the AMD GPU the XML lacks.
root0=$(xml_pcie_root "$HWLOC_XMLFILE" 0000:af:00.0 | tr : _) && root1=$(xml_pcie_root "$HWLOC_XMLFILE" 0000:3b:00.0 | tr : _) ||
  { root0=pci0000_ae root1=pci0000_3a; echo "hwloc-info not found (Debian: hwloc-nox): the PCIe roots not derived"; }
[ "$root0 $root1" = "pci0000_ae pci0000_3a" ] || fail "the XML's PCIe roots: $root0 $root1"
"$HDAL_LS" -b cpu,cuda,rocm --of nfd >"$tmp/out" 2>"$tmp/err" || fail "--of nfd: exit $? ($(cat "$tmp/err"))"
cat >"$tmp/want" <<END
# Node Feature Discovery features of this node, written by hdal-ls (hdal $version)
hdal-cpu.present=true
hdal-cpu.count=2
hdal-cpu.memory-mib=49152
hdal-cpu.model.test_cpu_model_9000=2
hdal-cuda.present=true
hdal-cuda.count=2
hdal-cuda.memory-mib=32768
hdal-cuda.model.fake_gpu_0=1
hdal-cuda.model.fake_gpu_1=1
hdal-cuda.pcie-root.$root0=1
hdal-cuda.pcie-root.$root1=1
hdal-rocm.present=true
hdal-rocm.count=1
hdal-rocm.memory-mib=65536
hdal-rocm.model.fake_amd_gpu_0=1
END
diff -u "$tmp/want" "$tmp/out" || fail "--of nfd lines"
[ -s "$tmp/err" ] && fail "--of nfd wrote to stderr: $(cat "$tmp/err")"

# --select: one GPU of two, one model.
"$HDAL_LS" -b cpu,cuda --select 'cuda:1' --of nfd | tail -n +2 >"$tmp/out"
printf 'hdal-cuda.present=true\nhdal-cuda.count=1\nhdal-cuda.memory-mib=16384\nhdal-cuda.model.fake_gpu_1=1\nhdal-cuda.pcie-root.%s=1\n' \
  "$root1" >"$tmp/want"
diff -u "$tmp/want" "$tmp/out" || fail "--select"

# Hostile model names from the fake driver, one a long name cut to the 47 characters left: one word each.
long=$(printf 'Model%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
FAKECUDA_NAMES="Evil=Type File=/etc/passwd #x
y=z,$long" "$HDAL_LS" -b cuda --of nfd >"$tmp/out" 2>"$tmp/err"
well_formed "$tmp/out" || fail "hostile names: lines NFD would not take: $(cat "$tmp/out")"
grep -qx 'hdal-cuda.model.evil_type_file_etc_passwd_x_y_z=1' "$tmp/out" &&
  grep -qx "hdal-cuda.model.$(printf '%s' "$long" | tr 'A-Z' 'a-z' | cut -c1-47)=1" "$tmp/out" ||
  fail "hostile names: $(cat "$tmp/out")"

# A module's devices: ESC, CR, LF and broken UTF-8 in names, 2^64-1 bytes of memory (saturated, not wrapped).
mkdir "$tmp/mods" && ln -s "$HDAL_TEST_MODULES/mod_hostilels.so" "$tmp/mods/hdal_hostilels.so" || exit 99
HWLOC_XMLFILE= HWLOC_SYNTHETIC="numa:2 core:2 pu:1" HDAL_BACKEND_PATH="$tmp/mods" "$HDAL_LS" -b cpu,hostilels --of nfd \
  >"$tmp/out" 2>"$tmp/err" || fail "hostile module: exit $?"
well_formed "$tmp/out" || fail "hostile module: lines NFD would not take: $(cat "$tmp/out")"
grep -qx 'hdal-cpu.memory-mib=17592186044415' "$tmp/out" || fail "hostile module: memory: $(cat "$tmp/out")"
[ "$(grep -c '^hdal-cpu.count=' "$tmp/out")" -eq 1 ] || fail "hostile module: one platform, one count: $(cat "$tmp/out")"

# A real machine's topology (xml_machine): three GPUs under two roots, counted per root.
xml_machine "$tmp/xml" || exit 99
"$HDAL_LS" -b cuda --of nfd >"$tmp/out" 2>"$tmp/err" || fail "XML machine: exit $?"
for b in $xml_gpus; do xml_pcie_root "$HWLOC_XMLFILE" "$b" | tr : _; done | uniq -c |
  awk '{ print "hdal-cuda.pcie-root." $2 "=" $1 }' >"$tmp/want"
[ -s "$tmp/want" ] || printf 'hdal-cuda.pcie-root.pci0000_00=1\nhdal-cuda.pcie-root.pci0000_10=2\n' >"$tmp/want"
grep pcie-root "$tmp/out" | diff -u "$tmp/want" - || fail "XML machine: the PCIe roots"
well_formed "$tmp/out" || fail "XML machine: lines NFD would not take: $(cat "$tmp/out")"

[ $fails -eq 0 ] && echo "PASS: hdal-ls --of nfd" && exit 0
exit 1
