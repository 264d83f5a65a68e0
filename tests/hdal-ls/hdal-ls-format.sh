#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hdal-ls as a contract (docs: hdal-ls(1)): JSON format 1 against its JSON
# Schema with a real validator (Debian's python3-jsonschema, run by
# /usr/bin/python3), goldens for JSON, --list and --of xml on synthetic and XML
# machines, lstopo drawing the XML with every device named, and one GPU seen by
# CUDA (the fake driver) and OpenCL (the fake ICD) listed as one piece of hardware.
set -u
: "${HDAL_LS:?run me from make check}" "${srcdir:=.}" "${top_srcdir:=..}"
golden="$srcdir/golden"
schema="$top_srcdir/tools/hdal-ls.schema.json"
python=/usr/bin/python3
validate="$srcdir/tools/validate-json.py"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0; passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Without a validator, everything else is still checked, and the test skips (77) at the end.
have_validator=yes
"$python" -c 'import jsonschema' 2>/dev/null || { have_validator=; echo "$python has no jsonschema (Debian: python3-jsonschema): schema checks skipped"; }

run() { "$HDAL_LS" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
expect_rc() { [ "$rc" -eq "$1" ] && ok || fail "$2: exit $rc, expected $1 (stderr: $(cat "$tmp/err"))"; }
# The output against a golden; JSON goldens say "@VERSION@" for hdal_version
# and "@HOST@" for this machine's name, XML ones leave out the two lines that
# name hwloc's version and the process; the topology's file is the test's own (hdal-ls-links.sh checks it).
normalise() {
  sed -e 's/^  "hdal_version": ".*",$/  "hdal_version": "@VERSION@",/' -e 's/^      "host": ".*",$/      "host": "@HOST@",/' \
      -e 's/^    "detail": ".*"$/    "detail": "@TOPOLOGY_FILE@"/' \
      -e '/<info name="hwlocVersion" value=".*"\/>$/d' -e '/<info name="ProcessName" value=".*"\/>$/d' "$tmp/out"
}
expect_golden() {
  normalise >"$tmp/norm"
  diff -u "$1" "$tmp/norm" >"$tmp/diff" && ok || { fail "$2 differs from $1"; cat "$tmp/diff"; }
}
# The output is valid format 1.
expect_valid() {
  [ -n "$have_validator" ] || return 0
  cp "$tmp/out" "$tmp/$1.json"
  "$python" "$validate" "$schema" "$tmp/$1.json" && ok || fail "$1: not valid against $schema"
}
# lstopo draws the XML in $tmp/out, as SVG and as text, naming every device of
# the --list in $tmp/list (its "Device N: ..." lines give the labels).
expect_drawn() {
  if ! command -v lstopo-no-graphics >/dev/null 2>&1; then echo "lstopo-no-graphics not found: drawing not checked"; return; fi
  cp "$tmp/out" "$tmp/m.xml"
  lstopo-no-graphics -i "$tmp/m.xml" -f "$tmp/m.svg" 2>"$tmp/lerr" && lstopo-no-graphics -i "$tmp/m.xml" -f --of console >"$tmp/m.txt" 2>>"$tmp/lerr" \
    || { fail "$1: lstopo cannot draw it: $(cat "$tmp/lerr")"; return; }
  n=0
  while IFS= read -r line; do
    # "Device 3: opencl Fake GPU (pjrt, kDLOpenCL:1, PCI ...)" -> "hdal 3: opencl Fake GPU (pjrt, kDLOpenCL:1)"
    label=$(printf '%s\n' "$line" | sed 's/^Device \([0-9]*\): \(.*(\)\([^,]*, [^,)]*\).*$/hdal \1: \2\3)/')
    grep -qF ">$label</text>" "$tmp/m.svg" || fail "$1: the SVG does not name '$label'"
    grep -qF "Misc $label" "$tmp/m.txt" || fail "$1: lstopo's text does not name '$label'"
    n=$((n + 1))
  done <"$tmp/list"
  [ "$n" -gt 0 ] && [ "$(grep -c '<text[^>]*>hdal [0-9]*: ' "$tmp/m.svg")" -eq "$n" ] && ok || fail "$1: $n devices, SVG labels: $(grep -c 'hdal [0-9]*: ' "$tmp/m.svg")"
}

# The XML in $tmp/out holds the objects lstopo's own --of xml of the same
# input holds, type by type (instruction caches included), besides the devices.
objects() { grep -o '<object type="[A-Za-z0-9]*"' | grep -v '"Misc"' | sort | uniq -c; }
expect_lstopo_objects() {
  if ! command -v lstopo-no-graphics >/dev/null 2>&1; then echo "lstopo-no-graphics not found: objects not compared"; return; fi
  lstopo-no-graphics --of xml - 2>/dev/null | objects >"$tmp/lstopo-objects"
  objects <"$tmp/out" >"$tmp/hdal-objects"
  diff -u "$tmp/lstopo-objects" "$tmp/hdal-objects" >"$tmp/diff" && ok ||
    { fail "$1: the objects differ from lstopo's"; cat "$tmp/diff"; }
}

unset HDAL_BACKENDS HWLOC_XMLFILE HWLOC_SYNTHETIC HDAL_DEBUG

# lstopo's objects, instruction caches included, on a machine that has some.
HWLOC_SYNTHETIC="pack:2 l2:2 l1i:1 l1d:1 core:2 pu:1" run -b cpu --of xml
expect_rc 0 "synthetic with icaches --of xml"
HWLOC_SYNTHETIC="pack:2 l2:2 l1i:1 l1d:1 core:2 pu:1" expect_lstopo_objects "synthetic with icaches --of xml"
[ "$(grep -c '<object type="L1iCache"' "$tmp/out")" -eq 4 ] && ok || fail "synthetic --of xml: $(grep -c L1iCache "$tmp/out") instruction caches, 4 expected"
SUITE_BACKEND_PATH=${HDAL_BACKEND_PATH:-}
HDAL_BACKEND_PATH=/nonexistent/hdal-modules; export HDAL_BACKEND_PATH
synth="pack:2 numa:2 core:4 pu:2"

# The schema itself is draft 2020-12 and refuses broken documents.
[ -z "$have_validator" ] || for g in "$golden"/*.json; do
  "$python" "$validate" "$schema" "$g" && ok || fail "golden $g: not valid"
  "$python" "$validate" --mutants "$schema" "$g" && ok || fail "golden $g: the schema accepts broken copies"
done

# The man page documents every member the schema names.
if [ -x "$python" ]; then
"$python" - "$schema" "$top_srcdir/tools/hdal-ls.1" <<'PY' && ok || fail "the man page misses members of the schema"
import json, re, sys
names = set()
def walk(node):
    if isinstance(node, dict):
        names.update(node.get("properties", {}).keys())
        for v in node.values():
            walk(v)
    elif isinstance(node, list):
        for v in node:
            walk(v)
walk(json.load(open(sys.argv[1])))
man = open(sys.argv[2]).read()
def documented(n):
    # \\fBname\\fR, a .B or .BR heading, or "name": inside a documented object
    return re.search(r'(\\fB%s\\fR|^\.BR? %s(\s|$)|"%s":)' % (n, n, n), man, re.M) is not None
missing = sorted(n for n in names if not documented(n))
for n in missing:
    print("FAIL: hdal-ls.1 does not document", n)
sys.exit(1 if missing else 0)
PY
fi

# A synthetic machine: JSON, --list, XML.
HWLOC_SYNTHETIC="$synth" run -b cpu --json --topology
expect_rc 0 "synthetic --json"; expect_golden "$golden/synthetic-4nodes.json" "synthetic --json"; expect_valid synthetic
HWLOC_SYNTHETIC="$synth" run -b cpu -L
expect_rc 0 "synthetic -L"; expect_golden "$golden/synthetic-4nodes.list" "synthetic -L"; cp "$tmp/out" "$tmp/list"
HWLOC_SYNTHETIC="$synth" run -b cpu --of xml
expect_rc 0 "synthetic --of xml"; expect_golden "$golden/synthetic-4nodes.xml" "synthetic --of xml"
expect_drawn "synthetic --of xml"

# An XML machine next to the IFRT-native test module.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run -b cpu,ifrttest --json --topology
expect_rc 0 "xml --json"; expect_golden "$golden/xml-ifrt.json" "xml + ifrttest --json"; expect_valid xml-ifrt
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run -b cpu,ifrttest -L
cp "$tmp/out" "$tmp/list"
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run -b cpu,ifrttest --of xml
expect_rc 0 "xml --of xml"; expect_golden "$golden/xml-ifrt.xml" "xml + ifrttest --of xml"
expect_drawn "xml + ifrttest --of xml"
# --platform keeps the other devices out of the picture.
HWLOC_XMLFILE="$srcdir/topologies/two-numa.xml" HDAL_BACKEND_PATH=$HDAL_TEST_MODULES run -b cpu,ifrttest --of xml -p ifrttest
[ "$(grep -c 'type="Misc"' "$tmp/out")" -eq 2 ] && ok || fail "--of xml -p ifrttest: $(grep 'type="Misc"' "$tmp/out")"

# This machine, every backend of the build: valid JSON with and without --topology, an XML lstopo draws.
HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH run --json --topology
expect_rc 0 "this machine --json"; expect_valid this-machine
HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH run -L
cp "$tmp/out" "$tmp/list"
HDAL_BACKEND_PATH=$SUITE_BACKEND_PATH run --of xml
expect_rc 0 "this machine --of xml"; expect_drawn "this machine --of xml"; expect_lstopo_objects "this machine --of xml"

# This machine as a VM whose sysfs has no cache folders shows it: a copy of its
# CPU and NUMA folders without cpu*/cache, under HWLOC_FSROOT.  lstopo then has
# its caches from CPUID (hwloc's x86 component), and so must --of xml.
case $(uname -m) in x86_64 | i?86) x86=yes ;; *) x86= ;; esac
if [ -n "$x86" ] && command -v lstopo-no-graphics >/dev/null 2>&1 && [ -d /sys/devices/system/cpu/cpu0 ]; then
  fs="$tmp/nocache"
  mkdir -p "$fs/sys/devices/system" "$fs/proc"
  cp -R /sys/devices/system/cpu "$fs/sys/devices/system/" 2>/dev/null
  [ -d /sys/devices/system/node ] && cp -R /sys/devices/system/node "$fs/sys/devices/system/" 2>/dev/null
  rm -rf "$fs"/sys/devices/system/cpu/cpu*/cache
  cp /proc/cpuinfo /proc/meminfo "$fs/proc/"
  if HWLOC_FSROOT="$fs" HWLOC_THISSYSTEM=1 lstopo-no-graphics --of xml - 2>/dev/null | grep -q '<object type="L[0-9]'; then
    HWLOC_FSROOT="$fs" HWLOC_THISSYSTEM=1 run -b cpu --of xml
    expect_rc 0 "no sysfs caches --of xml"
    HWLOC_FSROOT="$fs" HWLOC_THISSYSTEM=1 expect_lstopo_objects "no sysfs caches --of xml"
  else
    echo "lstopo finds no cache without sysfs here (no CPUID cache leaves): that case not checked"
  fi
fi

# The machines of the GPU checks below: one GPU on each NUMA node.  hwloc
# without libxml2 (hdal-ls leaves it out) takes no comment before <topology>.
grep -v '^<!--' "$srcdir/topologies/cuda-two-numa.xml" >"$tmp/gpus.xml"
builddir=$(cd "${top_builddir:-..}" && pwd) # module directories must be absolute

# One GPU, two backends: the fake CUDA driver and the fake ICD (tests/fakes/cl/fakecl.c)
# report PCI 0000:3b:00.0 and 0000:af:00.0, which the XML machine holds, one on each node.
fakecuda="$HDAL_TEST_MODULES/fakecuda.so"
if [ -f "$fakecuda" ] && [ -f "${HDAL_TEST_ICD:-/nonexistent}/fake/fake.icd" ]; then
  same() {
    HWLOC_XMLFILE="$tmp/gpus.xml" HDAL_CUDA_LIBRARY=$fakecuda FAKECUDA_DEVICES=2 \
      FAKECUDA_PCI_BUS_IDS=0000:3b:00.0,0000:af:00.0 OCL_ICD_VENDORS="$HDAL_TEST_ICD/fake" \
      HDAL_BACKEND_PATH="$builddir/backends/opencl/.libs:$builddir/backends/cuda/.libs" run -b cpu,cuda,opencl "$@"
  }
  same
  expect_rc 0 "same hardware table"; expect_golden "$golden/same-hardware.txt" "same hardware table"
  same -L
  expect_rc 0 "same hardware -L"; expect_golden "$golden/same-hardware.list" "same hardware -L"; cp "$tmp/out" "$tmp/list"
  same --json --topology
  expect_rc 0 "same hardware --json"; expect_golden "$golden/same-hardware.json" "same hardware --json"
  expect_valid same-hardware
  same --of xml
  expect_rc 0 "same hardware --of xml"; expect_golden "$golden/same-hardware.xml" "same hardware --of xml"
  expect_drawn "same hardware --of xml"
else
  echo "no fake CUDA driver or fake ICD in this build: same-hardware checks skipped"
fi

# One Intel GPU, two backends: the fake Level Zero driver (loaded by the system's
# real loader, Debian's libze1) and the fake ICD both report PCI 0000:3b:00.0.
fakeze="$HDAL_TEST_MODULES/fakeze.so"
if [ -f "$fakeze" ] && [ -f "${HDAL_TEST_ICD:-/nonexistent}/fake/fake.icd" ] && ldconfig -p | grep -q 'libze_loader\.so\.1 '; then
  HWLOC_XMLFILE="$tmp/gpus.xml" ZE_ENABLE_ALT_DRIVERS=$fakeze FAKEZE_DEVICES=1 FAKEZE_PCI_BUS_IDS=0000:3b:00.0 \
    OCL_ICD_VENDORS="$HDAL_TEST_ICD/fake" HDAL_BACKEND_PATH="$builddir/backends/opencl/.libs:$builddir/backends/levelzero/.libs" \
    run -b cpu,levelzero,opencl --json
  expect_rc 0 "Level Zero and OpenCL --json"
  expect_valid levelzero-opencl
  if "$JQ" -e '[.devices[] | select(.attributes.pci_bus_id == "0000:3b:00.0")] as $g |
      ($g | map(.platform) | sort) == ["levelzero", "opencl"] and
      ($g[0].same_hardware_as == [$g[1].id]) and ($g[1].same_hardware_as == [$g[0].id])' "$tmp/out" >/dev/null; then ok
  else fail "Level Zero and OpenCL devices of one GPU not linked: $(cat "$tmp/out")"; fi
else
  echo "no fake Level Zero driver, Level Zero loader or fake ICD: the Level Zero same-hardware check skipped"
fi

# A Vulkan device of the fake driver (through the system's real loader, Debian's
# libvulkan1) at PCI 0000:3b:00.0: drawn under that PCI object, NUMA node from it.
vkicd="$builddir/tests/fakevk_icd.json"
if [ -f "$vkicd" ] && ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
  vk() {
    HWLOC_XMLFILE="$tmp/gpus.xml" VK_DRIVER_FILES="$vkicd" FAKEVK_DEVICES=1 \
      FAKEVK_PCI_BUS_IDS=0000:3b:00.0 HDAL_BACKEND_PATH="$builddir/backends/vulkan/.libs" run -b cpu,vulkan "$@"
  }
  vk --of xml
  expect_rc 0 "Vulkan --of xml"
  if grep -A1 'pci_busid="0000:3b:00.0"' "$tmp/out" | grep -q 'name="hdal 2: vulkan Fake GPU 0 (ifrt-native, kDLVulkan:0)"'; then ok
  else fail "the Vulkan device is not under its PCI object: $(cat "$tmp/out")"; fi
  vk --json
  if "$JQ" -e '[.devices[] | select(.platform == "vulkan")] | length == 1 and .[0].numa_node == 0' "$tmp/out" >/dev/null; then ok
  else fail "the Vulkan device's NUMA node from its PCI bus id: $(cat "$tmp/out")"; fi
else
  echo "no fake Vulkan driver or Vulkan loader: the Vulkan --of xml check skipped"
fi

echo "hdal-ls-format: $passes passed, $fails failed"
[ "$fails" -eq 0 ] || exit 1
[ -n "$have_validator" ] || exit 77
