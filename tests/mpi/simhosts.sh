# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/mpi/hosts-*.test: simulated hosts on this machine
# (docs/mpi.md, "Several hosts").
#
# Each host is a network namespace with its own hostname (unshare --uts), its
# own /tmp (a bind mount in a mount namespace of its own: Slurm's and Open
# MPI's session files cannot meet, and the machine's /tmp is left alone), its
# own address on a private subnet and its own fake GPUs (the fake CUDA driver
# and a fake /sys, /proc and /dev under HDAL_FSROOT: tests/tools/fake-fsroot.sh).
# Every host resolves every host's name, as on a cluster: $sim/hosts is
# mounted over /etc/hosts in each host's mount namespace (Slurm 24.11's
# slurmctld reaches srun by the name of srun's host; where that name does not
# resolve and no DNS server is reachable from the namespace, Debian's Slurm
# retries the lookup for 10 s while it holds the job's locks, and steps
# time out).  Slurm is also given each node's address, Open MPI's daemons
# call back by address, and the rsh agent knows the hosts by name.  A head node,
# where the launchers (mpirun, srun) and slurmctld run, is one more
# namespace that holds the bridge every host's veth pair is plugged into,
# with an address of its own: every interface of the simulation lives in
# namespaces the test made, so nothing listens beyond them (and each
# namespace's loopback).
#
#   sim_check                 skips (77) where the machine does not allow it;
#                             with HDAL_HOSTS_REQUIRED=1 (.ci/run) that fails
#   sim_up HOST:NGPUS...      makes $sim (under the build tree), the head and
#                             the hosts; $sim_hosts lists the host names
#   $sim/on HOST CMD...       runs CMD on HOST (or on the head, $sim_head):
#                             namespace, hostname, /tmp, the host's
#                             environment ($sim/HOST/env: its fake hardware)
#   $sim/hosts                every address and name (/etc/hosts' format)
#   $sim/agent HOST CMD       the rsh agent for mpirun (plm_rsh_agent)
#   sim_daemon NAME HOST CMD  starts CMD (which must not fork away) on HOST
#                             in the background, its pid kept for sim_down
#   sim_down                  stops every daemon by its pid, then whatever
#                             is left in the test's namespaces, and removes
#                             the namespaces and $sim (sim_up traps it)
#
# Names: the namespaces are hdal<pid>-head and hdal<pid>-<host>, so two
# tests running at once do not meet; inside them the subnet, the bridge and
# every port are the test's own.
set -u
sim_head=hdal-head
sim_subnet=10.251.0.0/24
sim_prefix=10.251.0
sim=
sim_hosts=
sim_ns_prefix=hdal$$

sim_skip() {
  if [ "${HDAL_HOSTS_REQUIRED:-0}" = 1 ]; then
    echo "FAIL: the simulated hosts cannot be made here, and HDAL_HOSTS_REQUIRED=1: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# What the simulation needs of the machine, each tried rather than guessed:
# root, iproute2's `ip netns`, a bridge and a veth pair inside a namespace,
# util-linux's unshare with UTS and mount namespaces, and an /etc/hosts to
# mount the hosts' names over.
sim_check() {
  PATH=$PATH:/usr/sbin:/sbin
  [ "$(id -u)" -eq 0 ] || sim_skip "simulated hosts need root (network namespaces, hostnames, device nodes)"
  command -v ip >/dev/null || sim_skip "no ip command (Debian: iproute2)"
  command -v unshare >/dev/null && command -v nsenter >/dev/null ||
    sim_skip "no unshare or nsenter command (Debian: util-linux)"
  probe=${sim_ns_prefix}-probe
  if ! err=$(ip netns add "$probe" 2>&1); then sim_skip "ip netns add refused: $err"; fi
  [ -e "/run/netns/$probe" ] || { ip netns del "$probe"; sim_skip "ip netns keeps its namespaces elsewhere than /run/netns"; }
  err=$(ip -n "$probe" link add hdalbr type bridge 2>&1 &&
    ip -n "$probe" link add hdalv0 type veth peer name hdalv1 2>&1 &&
    ip -n "$probe" link set hdalv0 master hdalbr 2>&1) || {
    ip netns del "$probe"
    sim_skip "no bridge or veth pair in a network namespace: $err"
  }
  ip netns del "$probe"
  err=$(unshare --uts --mount sh -c 'hostname hdal-probe && [ "$(hostname)" = hdal-probe ]' 2>&1) ||
    sim_skip "unshare --uts --mount cannot give a process a hostname and mounts of its own: $err"
  [ -f /etc/hosts ] || sim_skip "no /etc/hosts to mount the simulated hosts' names over (Debian: netbase)"
}

sim_ns() { echo "$sim_ns_prefix-$1"; }

# sim_up HOST:NGPUS...: the head and the hosts, host i at $sim_prefix.(10+i),
# the head at $sim_prefix.1.  $sim is made in the current directory (the
# build tree's tests/), or in /var/tmp (not /tmp, which every host replaces
# with its own) where that path would make the Unix sockets under it
# (munged's, slurmstepd's, PMIx's) longer than the 108 bytes a socket
# address holds.
sim_up() {
  sim=$PWD/sim.$$
  [ ${#sim} -le 56 ] || sim=$(mktemp -d /var/tmp/hdal-sim.XXXXXX) || exit 99
  mkdir -p "$sim" || exit 99
  trap 'sim_down' EXIT
  trap 'exit 1' HUP INT TERM
  : >"$sim/pids"
  printf '127.0.0.1 localhost\n%s.1 %s\n' "$sim_prefix" "$sim_head" >"$sim/hosts"
  sim_hd=$(sim_ns "$sim_head")
  ip netns add "$sim_hd" || { echo "FAIL: ip netns add $sim_hd"; exit 99; }
  echo "$sim_hd" >"$sim/namespaces"
  ip -n "$sim_hd" link set lo up && ip -n "$sim_hd" link add br0 type bridge && ip -n "$sim_hd" link set br0 up &&
    ip -n "$sim_hd" addr add "$sim_prefix.1/24" dev br0 || { echo "FAIL: the head's bridge"; exit 99; }
  mkdir -p "$sim/$sim_head/tmp" && chmod 1777 "$sim/$sim_head/tmp" && : >"$sim/$sim_head/env" || exit 99
  sim_i=0
  for sim_spec in "$@"; do
    sim_i=$((sim_i + 1))
    sim_h=${sim_spec%%:*} sim_ngpus=${sim_spec#*:}
    sim_hosts="$sim_hosts $sim_h"
    sim_hns=$(sim_ns "$sim_h")
    ip netns add "$sim_hns" || { echo "FAIL: ip netns add $sim_hns"; exit 99; }
    echo "$sim_hns" >>"$sim/namespaces"
    ip -n "$sim_hd" link add "veth$sim_i" type veth peer name eth0 netns "$sim_hns" &&
      ip -n "$sim_hd" link set "veth$sim_i" master br0 up &&
      ip -n "$sim_hns" link set lo up && ip -n "$sim_hns" addr add "$sim_prefix.$((10 + sim_i))/24" dev eth0 &&
      ip -n "$sim_hns" link set eth0 up || { echo "FAIL: the link of $sim_h"; exit 99; }
    echo "$sim_prefix.$((10 + sim_i)) $sim_h" >>"$sim/hosts"
    mkdir -p "$sim/$sim_h/tmp" && chmod 1777 "$sim/$sim_h/tmp" || exit 99
    fake_cuda_host "$sim/$sim_h/root" "$sim_ngpus" >"$sim/$sim_h/env" || { echo "FAIL: the fake GPUs of $sim_h"; exit 99; }
    # The host's identity as hdal reads it under HDAL_FSROOT (docs/dlpack.md,
    # "Hosts"): the one of the namespaces it runs in, through /proc: the
    # hostname (its UTS namespace's), the kernel's boot id (this machine's,
    # every host's) and the link of the reading process's network namespace
    # (the host's own).  Ranks of one host are one host; two hosts, clones
    # or not, are two.
    sim_r=$sim/$sim_h/root/proc
    mkdir -p "$sim_r/sys/kernel/random" && ln -s /proc/sys/kernel/hostname "$sim_r/sys/kernel/hostname" &&
      ln -s /proc/sys/kernel/random/boot_id "$sim_r/sys/kernel/random/boot_id" && ln -s /proc/self "$sim_r/self" ||
      { echo "FAIL: the identity of $sim_h"; exit 99; }
  done
  sim_hosts=${sim_hosts# }
  # What lies under /tmp and must stay in sight on the hosts, whose /tmp is
  # their own: the top folder under /tmp of the build tree, the source tree
  # and $sim (a clone in /tmp, as CI may make), bound into the host's /tmp at
  # the same place before that replaces /tmp.
  sim_keep=
  for sim_p in "$PWD" "$(cd "${srcdir:-.}" && pwd)" "$sim"; do
    case $sim_p in
    /tmp/?*)
      sim_k=/tmp/$(echo "${sim_p#/tmp/}" | cut -d/ -f1)
      case " $sim_keep " in *" $sim_k "*) ;; *) sim_keep="$sim_keep $sim_k" ;; esac ;;
    esac
  done
  # on HOST CMD...: the host's network namespace (entered with nsenter:
  # `ip netns exec` would mount a sysfs of the namespace over /sys, hiding
  # the cgroup hierarchy slurmd wants), hostname, /tmp, /etc/hosts,
  # environment.
  cat >"$sim/on" <<EOF
#!/bin/sh
# on HOST COMMAND...: runs COMMAND on the simulated host HOST (tests/mpi/simhosts.sh).
host=\$1
shift
case " $sim_head $sim_hosts " in
*" \$host "*) ;;
*) echo "on: no simulated host '\$host' (hosts: $sim_head $sim_hosts)" >&2; exit 255 ;;
esac
exec nsenter --net=/run/netns/$sim_ns_prefix-\$host unshare --uts --mount sh -c \\
  'hostname "\$0" && for k in $sim_keep; do mkdir -p "\$1/tmp\${k#/tmp}" && mount --bind "\$k" "\$1/tmp\${k#/tmp}" || exit 1; done &&
    mount --rbind "\$1/tmp" /tmp && mount --bind "\$1/../hosts" /etc/hosts && . "\$1/env" &&
    shift && exec "\$@"' "\$host" "$sim/\$host" "\$@"
EOF
  # agent [OPTION]... HOST COMMAND: what mpirun calls instead of ssh; the
  # command is one string for the remote shell, as ssh takes it.
  cat >"$sim/agent" <<EOF
#!/bin/sh
# The remote shell of the simulated hosts for mpirun (plm_rsh_agent).
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
exec "$sim/on" "\$host" sh -c "\$*"
EOF
  chmod +x "$sim/on" "$sim/agent" || exit 99
  # The names resolve through that file (not where hosts: in nsswitch.conf
  # asks some other service first).
  sim_a=$("$sim/on" "$sim_head" getent hosts "$sim_head" 2>&1)
  [ "${sim_a%% *}" = "$sim_prefix.1" ] ||
    sim_skip "$sim_head does not resolve to $sim_prefix.1 on itself through /etc/hosts: getent hosts says '$sim_a'"
}

# sim_daemon NAME HOST CMD...: CMD in the foreground of its own process,
# started on HOST in the background; its standard output and error go to
# $sim/NAME.out.  `ip netns exec`, unshare and the shell all exec, so $! is
# the daemon's own pid.
sim_daemon() {
  sim_dname=$1 sim_dhost=$2
  shift 2
  "$sim/on" "$sim_dhost" "$@" >"$sim/$sim_dname.out" 2>&1 </dev/null &
  echo "$sim_dname $!" >>"$sim/pids"
}

# sim_pid NAME: the pid of a daemon sim_daemon started.
sim_pid() { sed -n "s/^$1 //p" "$sim/pids"; }

# sim_stop NAME: stops one daemon (TERM, then KILL after 10 s).
sim_stop() {
  sim_spid=$(sim_pid "$1")
  [ -n "$sim_spid" ] || return 0
  kill "$sim_spid" 2>/dev/null
  sim_n=0
  while kill -0 "$sim_spid" 2>/dev/null && [ $sim_n -lt 100 ]; do sleep 0.1; sim_n=$((sim_n + 1)); done
  kill -0 "$sim_spid" 2>/dev/null && kill -9 "$sim_spid" 2>/dev/null
  sed -i "/^$1 /d" "$sim/pids"
  wait "$sim_spid" 2>/dev/null
  return 0
}

sim_down() {
  sim_rc=$?
  trap - EXIT
  [ -n "$sim" ] && [ -d "$sim" ] || exit $sim_rc
  if [ "${HDAL_HOSTS_KEEP:-0}" = 1 ]; then
    echo "note: HDAL_HOSTS_KEEP=1: $sim, its daemons and namespaces are kept"
    exit $sim_rc
  fi
  # The last started first: a daemon stops before what it depends on.
  for sim_name in $(cut -d' ' -f1 "$sim/pids" | tac); do sim_stop "$sim_name"; done
  # What is still running in the test's namespaces was started by the test
  # (a rank whose launcher timed out, a job step): ended by its pid.
  if [ -s "$sim/namespaces" ]; then
    sim_left=$(for sim_n in $(cat "$sim/namespaces"); do ip netns pids "$sim_n" 2>/dev/null; done)
    if [ -n "$sim_left" ]; then
      echo "note: processes left on the simulated hosts, killed: $(echo $sim_left)"
      for sim_p in $sim_left; do kill -9 "$sim_p" 2>/dev/null; done
      sleep 0.2
    fi
    for sim_n in $(cat "$sim/namespaces"); do ip netns del "$sim_n" || sim_rc=1; done
  fi
  rm -rf "$sim"
  exit $sim_rc
}

# ---- what the ranks should see ----

# sim_gpus HOST: the host's fake GPUs, as a JSON array of bus ids.
sim_gpus() {
  sed -n 's/^export FAKECUDA_PCI_BUS_IDS=//p' "$sim/$1/env" | awk -F, '{ for (i = 1; i <= NF; i++) printf "%s\"%s\"", (i > 1 ? "," : "["), $i } END { print "]" }'
}

# sim_want HOST...: the job's processes, one HOST per rank, as JSON:
# [{"host": HOST, "gpus": [bus id, ...], "root": its HDAL_FSROOT}, ...].
sim_want() {
  sim_w=
  for sim_wh in "$@"; do
    sim_w="$sim_w${sim_w:+,}{\"host\":\"$sim_wh\",\"gpus\":$(sim_gpus "$sim_wh"),\"root\":\"$sim/$sim_wh/root\"}"
  done
  echo "[$sim_w]"
}

# What WANT implies, as jq definitions ahead of a program that has $want and
# $cpus: the hosts ($hosts, named in the order of their lowest process, which
# is how hdal numbers them), host_of(p) (the index of process p's host),
# host_want(i) (host i as hdal-ls's hosts array gives it: its processes,
# devices, and distinct devices: its CPU devices and GPUs once, however many
# of its processes see them) and twin_key (what makes two devices of one host
# one piece of hardware here: a GPU's bus id, a CPU device's NUMA node).
sim_jq_defs='
  (reduce $want[].host as $h ([]; if index([$h]) then . else . + [$h] end)) as $hosts |
  def host_of($p): $hosts | index([$want[$p].host]);
  def host_want($i): [range(0; $want | length) | select($want[.].host == $hosts[$i])] as $ps |
    ($cpus + ($want[$ps[0]].gpus | length)) as $per |
    {host_index: $i, host: $hosts[$i], processes: $ps, device_count: (($ps | length) * $per), hardware_count: $per};
  def twin_key: [.platform, .attributes.pci_bus_id, .numa_node];
'

# sim_view_check FILE RANK WANT CPUS: hdal-ls-mpi --json (backends cpu,cuda)
# as rank RANK printed it, against WANT (sim_want) with CPUS CPU devices on
# every host (the hosts share this machine's CPU).  Prints the checks that
# failed, nothing when all hold.
sim_view_check() {
  "$JQ" -r --argjson r "$2" --argjson want "$3" --argjson cpus "$4" "$sim_jq_defs"'
    (.devices) as $d | ($want | length) as $n |
    {
      "process_index is the printing rank": (.process_index == $r),
      "process_count is the job size": (.process_count == $n),
      "ids are dense, in order": ([$d[].id] == [range(0; $d | length)]),
      "every process, in order, with its host'"'"'s device count":
        ([$d[].process_index] == [range(0; $n) as $p | range(0; $cpus + ($want[$p].gpus | length)) | $p]),
      "every process has its host'"'"'s CPU devices":
        ([range(0; $n) as $p | [$d[] | select(.process_index == $p and .platform == "cpu")] | length] == [$want[] | $cpus]),
      "every process has its host'"'"'s GPUs, by bus id, in CUDA order":
        ([range(0; $n) as $p | [$d[] | select(.process_index == $p and .platform == "cuda") | .attributes.pci_bus_id]]
         == [$want[].gpus]),
      "the printing rank'"'"'s devices are addressable, no other":
        all($d[]; .is_addressable == (.process_index == $r)),
      "every device says the hostname of its process'"'"'s host (host)":
        all($d[]; .host == $want[.process_index].host),
      "host_index: the hosts numbered by their lowest process":
        all($d[]; .host_index == host_of(.process_index)),
      "host_count is the number of hosts": (.host_count == ($hosts | length)),
      "hosts: each host'"'"'s processes, devices and distinct devices":
        (.hosts == [range(0; $hosts | length) as $i | host_want($i)]),
      "hardware_count: each host'"'"'s CPU devices and GPUs once":
        (.hardware_count == ([range(0; $hosts | length) as $i | host_want($i).hardware_count] | add)),
      "each device is the same hardware as its twins in the other processes of its host, no other":
        all($d[]; . as $x | .same_hardware_as ==
          [$d[] | select(.id != $x.id and host_of(.process_index) == host_of($x.process_index) and
                         twin_key == ($x | twin_key)) | .id]),
      "same_hardware_count counts them": all($d[]; .same_hardware_count == (.same_hardware_as | length)),
      "hardware_index: one per piece of hardware, numbered by its lowest id":
        (([$d[] as $x | $d[] as $y | ($y.hardware_index == $x.hardware_index) ==
           ($y.id == $x.id or ($x.same_hardware_as | index([$y.id])) != null)] | all) and
         ([$d[].hardware_index] | unique) == [range(0; .hardware_count)] and
         all($d[]; .hardware_index <= .id)),
      "no same-hardware link between hosts (clones share UUIDs and bus ids)":
        all($d[]; . as $x | all($x.same_hardware_as[]; $want[$d[.].process_index].host == $want[$x.process_index].host)),
      "device nodes: the GPUs of the printing rank'"'"'s host only, at its /dev, by minor (bus id order)":
        all($d[]; . as $x | $want[.process_index] as $w |
          if .platform == "cuda" and $w.host == $want[$r].host then
            .device_nodes == ["\($w.root)/dev/nvidia\($w.gpus | index([$x.attributes.pci_bus_id]))",
                              "\($w.root)/dev/nvidiactl", "\($w.root)/dev/nvidia-uvm"]
          else has("device_nodes") | not end)
    } | to_entries[] | select(.value != true) | .key' "$1" 2>&1
}

# sim_table_check FILE WANT CPUS: the table of hdal-ls-mpi (without --json;
# backends cpu,cuda) against WANT: the HOST column (each device its process's
# host) and the Hosts: summary (each host's processes, devices and distinct
# devices, then the job's), as hdal-ls-mpi(1) shows them.  Prints what
# differs, nothing when all holds.
sim_table_check() {
  "$JQ" -nr --argjson want "$2" --argjson cpus "$3" "$sim_jq_defs"'
    def pad($n): if $n > 0 then " " * $n else "" end;
    def plural($n; $word; $s): "\($n) \($word)\(if $n == 1 then "" else $s end)";
    def ranges: reduce .[] as $p ([]; if length > 0 and .[-1][1] == $p - 1 then .[-1][1] = $p else . + [[$p, $p]] end) |
      map(if .[0] == .[1] then "\(.[0])" else "\(.[0])-\(.[1])" end) | join(",");
    ([$hosts[] | length] | max) as $w | [range(0; $hosts | length) as $i | host_want($i)] as $hw |
    "ID PROC HOST",
    ([range(0; $want | length) as $p | range(0; $cpus + ($want[$p].gpus | length)) | $p] | to_entries[] |
      "\(.key) \(.value) \($want[.value].host)"),
    "", "Hosts:",
    ($hw[] | "  \(.host)\(pad($w - (.host | length)))  \(plural(.processes | length; "process"; "es") |
      sub("^[0-9]+ "; "")) \(.processes | ranges): \(plural(.device_count; "device"; "s")), \(.hardware_count) distinct"),
    "  \(plural($hosts | length; "host"; "s")): \(plural([$hw[].device_count] | add; "device"; "s")), \([$hw[].hardware_count] | add) distinct"' \
    >"$sim/table.want" || { echo "jq failed on WANT"; return; }
  { awk 'NR == 1 || /^[0-9]/ { print $1, $2, $3 }' "$1"; echo; sed -n '/^Hosts:$/,/^$/p' "$1" | sed '/^$/d'; } >"$sim/table.got"
  diff -u "$sim/table.want" "$sim/table.got"
}

# sim_views_same FILE...: the global table is the same in every rank's view,
# but for what is the printing rank's: its addressability, and the device
# nodes, read on its host for its host's GPUs only (tools/ls_nodes.c reads
# the host's /proc/driver/nvidia by bus id; sim_view_check says which), and
# the locality of devices with a PCI bus id (GPUs), read in the host's
# topology for its host's devices only (null for another host's:
# hdal_device_locality, docs/reference.md, "Locality"; a CPU device's comes
# from its attributes, the same everywhere): so the views printed on one host
# are the same device_nodes and locality included.
sim_views_same() {
  sim_first=$1
  : >"$sim/views.hosts"
  sim_view='[.devices[] | del(.is_addressable, .device_nodes) | if .attributes.pci_bus_id then del(.locality) else . end]'
  for sim_f in "$@"; do
    "$JQ" "$sim_view" "$sim_first" >"$sim/views.a" && "$JQ" "$sim_view" "$sim_f" >"$sim/views.b" || return 1
    diff -u "$sim/views.a" "$sim/views.b" >"$sim/views.diff" ||
      { echo "$sim_f differs from $sim_first:"; cat "$sim/views.diff"; return 1; }
    # The first view printed on the same host as this one.
    sim_vh=$("$JQ" '.process_index as $r | [.devices[] | select(.process_index == $r) | .host_index][0]' "$sim_f") ||
      return 1
    "$JQ" -e --argjson h "$sim_vh" 'all(.devices[] | select(.host_index != $h and .attributes.pci_bus_id); .locality == null)
        and all(.devices[] | select(.platform == "cpu"); .locality.numa_nodes == [.attributes.numa_os_index])' "$sim_f" >/dev/null ||
      { echo "$sim_f: another host's devices placed, or a CPU device's locality not its NUMA node"; return 1; }
    sim_same=$(sed -n "s/^$sim_vh //p" "$sim/views.hosts" | head -n 1)
    if [ -z "$sim_same" ]; then echo "$sim_vh $sim_f" >>"$sim/views.hosts"; continue; fi
    "$JQ" '[.devices[] | del(.is_addressable)]' "$sim_same" >"$sim/views.a" &&
      "$JQ" '[.devices[] | del(.is_addressable)]' "$sim_f" >"$sim/views.b" || return 1
    diff -u "$sim/views.a" "$sim/views.b" >"$sim/views.diff" ||
      { echo "$sim_f differs from $sim_same, printed on the same host:"; cat "$sim/views.diff"; return 1; }
  done
}
