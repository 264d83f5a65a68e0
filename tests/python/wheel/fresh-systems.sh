#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hdal's wheel where users are (issue 45): `pip install` of the wheel that
# `make wheel` writes, on fresh Debian 12 (bookworm) and Debian 13 (trixie)
# systems that hold nothing of hdal, hwloc or OpenCL, then what a user does
# first.  For each system, one after the other:
#  1. `debootstrap --variant=minbase`, new every run, under the tree
#     (_build-wheel-<suite>), mounted as .ci/debian13 mounts its system; only
#     python3 and python3-venv installed (--no-install-recommends); fails if
#     any package or library of hdal, hwloc or OpenCL is there;
#  2. a venv, and `pip install` of the wheel and numpy (pinned by
#     tests/python/wheel/constraints.txt) from PyPI;
#  3. check_wheel_user.py plain: `python -m hdal` lists a cpu device and every
#     backend module loads from the wheel; numpy 2 -> hdal -> numpy zero-copy;
#     libhdal, hwloc and the ICD loader mapped from the venv only;
#  4. pocl-opencl-icd and Mesa's lavapipe (mesa-vulkan-drivers, libvulkan1)
#     installed from Debian; check_wheel_user.py pocl: PoCL's device listed as
#     pjrt and a round trip through it; lavapipe's device (IFRT-native,
#     through the system's libvulkan) refusing an import with the seed's text;
#  5. a short summary; the system unmounted and removed.
#
#   tests/python/wheel/fresh-systems.sh WHEEL        (as root: debootstrap, chroot)
#
# HDAL_WHEEL_MIRROR: another Debian mirror (default: Debian's own).
# HDAL_WHEEL_SUITES: the systems, in order (default: "bookworm trixie").
# Logs of each system's debootstrap, apt and pip: _build-wheel-<suite>.*.log.
set -euo pipefail

usage() { echo "usage: $0 WHEEL (hdal-*.whl, from make wheel)" >&2; exit 2; }
[ $# -eq 1 ] || usage
if [ ! -f "$1" ] || [[ $1 != *.whl ]]; then echo "fresh-systems: no wheel file '$1'" >&2; usage; fi
wheel=$(realpath "$1")
wheel_name=$(basename "$wheel")
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mirror=${HDAL_WHEEL_MIRROR:-http://deb.debian.org/debian}
read -r -a suites <<<"${HDAL_WHEEL_SUITES:-bookworm trixie}"

[ "$(id -u)" -eq 0 ] || { echo "fresh-systems: debootstrap and chroot need root"; exit 1; }
command -v debootstrap >/dev/null ||
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }

step() { printf '\n==== wheel on %s: %s (%s)\n' "$suite" "$*" "$(date -u +%H:%M:%S)"; }
die() { echo "fresh-systems: $suite: FAILED: $*"; exit 1; }

root= # the system in use, for cleanup
mounts=(proc sys dev dev/pts)
# Every mount at or under the system, deepest first (as .ci/debian13).
unmount() {
  local m
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" || true
  done
  return 0
}
# PoCL's and pip's leftovers (a compiler child, a daemon) would keep the
# system's files busy: every process whose root is the system goes first.
teardown() {
  [ -n "$root" ] || return 0
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  unmount
  rm -rf --one-file-system "$root"
  root=
}
on_exit() {
  local status=$?
  set +e
  teardown
  exit $status
}
trap on_exit EXIT
# An interrupted run still unmounts (bash runs no EXIT trap on SIGTERM by itself).
trap 'exit 130' INT TERM

# The system's own commands, with nothing of this machine's environment but
# what apt and pip need to reach the registries as this machine does.
in_sys() {
  local pass=() v
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && pass+=("$v=${!v}")
  done
  chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive ${pass[@]+"${pass[@]}"} "$@"
}
apt_install() { # PACKAGE... ; the log kept beside the system
  in_sys apt-get install -y -q --no-install-recommends "$@" >>"$log.apt.log" 2>&1 ||
    { tail -n 30 "$log.apt.log"; die "apt-get install $*"; }
}

# Anything of hdal, hwloc or OpenCL in the system: its packages (dpkg -l) and
# its files under /usr/lib and /etc/OpenCL (Debian 12 and 13 are merged-/usr).
foreign() {
  in_sys dpkg -l | awk '/^ii/ { print $2 }' | grep -i -E 'hdal|hwloc|opencl|ocl-icd|pocl' || true
  find "$root/usr/lib" "$root/usr/local" \( -iname 'libhwloc*' -o -iname 'libOpenCL*' -o -iname 'libhdal*' \
    -o -iname 'hdal_*.so' -o -iname 'libpocl*' \) -print 2>/dev/null | sed "s|^$root||" || true
  [ ! -e "$root/etc/OpenCL" ] || echo /etc/OpenCL
}

summaries=()
for suite in "${suites[@]}"; do
  start=$SECONDS
  root=$top/_build-wheel-$suite
  log=$top/_build-wheel-$suite
  rm -f "$log".*.log

  step "debootstrap --variant=minbase $suite"
  unmount
  rm -rf --one-file-system "$root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log.debootstrap.log" 2>&1 ||
    { tail -n 30 "$log.debootstrap.log"; die "debootstrap $suite $mirror"; }
  # Its / a private mount point of its own, as .ci/debian13's.
  mount --bind "$root" "$root" && mount --make-private "$root"
  for m in "${mounts[@]}"; do mount --bind "/$m" "$root/$m"; done
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  debian=$(cat "$root/etc/debian_version")
  echo "Debian $debian"

  step "python3, python3-venv"
  in_sys apt-get update -q >"$log.apt.log" 2>&1 || { tail -n 30 "$log.apt.log"; die "apt-get update"; }
  apt_install python3 python3-venv
  python=$(in_sys python3 -c 'import platform; print(platform.python_version())')
  echo "Python $python"
  # The point of the exercise: the wheel alone must bring hdal, hwloc and the
  # ICD loader, so the system must not have them already.
  found=$(foreign)
  [ -z "$found" ] || die "the fresh system already has hdal, hwloc or OpenCL: $(echo "$found" | tr '\n' ' ')"
  echo "no hdal, hwloc or OpenCL in the system"

  step "venv; pip install $wheel_name numpy"
  in_sys python3 -m venv /root/venv
  cp "$wheel" "$root/root/$wheel_name"
  cp "$here/constraints.txt" "$here/check_wheel_user.py" "$root/root/"
  # This machine may reach PyPI through a proxy with its own CA, which the
  # system's pip (its own certifi bundle) would not trust: pip is given the
  # host's bundle.  A user's machine needs nothing of the kind.
  cert=()
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$root/root/host-ca.crt"
    cert=(PIP_CERT=/root/host-ca.crt)
  fi
  in_sys "${cert[@]}" /root/venv/bin/pip install --no-input --disable-pip-version-check \
    -c /root/constraints.txt "/root/$wheel_name" numpy >"$log.pip.log" 2>&1 ||
    { tail -n 30 "$log.pip.log"; die "pip install $wheel_name numpy"; }
  # The lines that name what pip took: the wheel by its file name.
  grep -E "Processing .*$wheel_name|^Successfully installed" "$log.pip.log" ||
    die "pip's log names neither $wheel_name nor what it installed"
  grep -q "$wheel_name" "$log.pip.log" || die "pip's log does not name $wheel_name"

  step "checks without OpenCL or Vulkan driver"
  in_sys /root/venv/bin/python /root/check_wheel_user.py plain | tee "$log.plain.log" ||
    die "check_wheel_user.py plain"

  step "pocl-opencl-icd, mesa-vulkan-drivers, libvulkan1"
  apt_install pocl-opencl-icd mesa-vulkan-drivers libvulkan1
  in_sys dpkg-query -W -f '${Package} ${Version}\n' pocl-opencl-icd mesa-vulkan-drivers libvulkan1

  step "checks with PoCL and lavapipe"
  in_sys /root/venv/bin/python /root/check_wheel_user.py pocl | tee "$log.pocl.log" ||
    die "check_wheel_user.py pocl"

  step "removing the system"
  teardown
  took=$((SECONDS - start))
  summaries+=("$(
    printf '%s: Debian %s, Python %s, %s, %d s\n' "$suite" "$debian" "$python" "$wheel_name" "$took"
    sed -n 's/^summary: /  plain: /p' "$log.plain.log"
    sed -n 's/^summary: /  pocl:  /p' "$log.pocl.log"
  )")
done

printf '\n==== summary\n'
printf '%s\n' "${summaries[@]}"
echo "fresh-systems: the wheel passed on: ${suites[*]}"
