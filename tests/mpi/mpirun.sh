# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/mpi/*.test: runs the tests under the MPI launcher that
# configure found ($MPIRUN, $MPI_FLAVOR, from tests/mpi/mpi.am), and skips (77) when
# hdal was built without MPI or no launcher exists.
#
# Open MPI settings, as in docs/mpi.md, chosen by the components the
# installed Open MPI lists (ompi_info), not by its version: root allowed (CI
# runs as root); --oversubscribe (more ranks than cores: CI machines have 2);
# --bind-to none (ranks share the cores); plm isolated where it exists (4.x:
# launch on this host only, no ssh/rsh agent; 5.x's PRRTE starts local ranks
# without one); pml ob1 with btl self and the shared-memory btl (vader in 4.x,
# sm in 5.x: no network probing, no UCX); no CMA single-copy (it needs ptrace
# rights that containers often lack); --tag-output (each line says its rank).
set -u
: "${top_builddir:?run me from make check}" "${srcdir:=.}"
[ -x ./test_mpi ] || { echo "SKIP: hdal was configured without MPI"; exit 77; }
[ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ] || { echo "SKIP: no MPI launcher (MPIRUN='${MPIRUN:-}')"; exit 77; }

case ${MPI_FLAVOR:-openmpi} in
mpich)
  MPI_OPTS="-prepend-rank" ;;
*)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # A session directory per test script: two launchers started at once (make -j)
  # race to create /tmp/ompi.<host>.<uid> and one fails ("File exists", Open MPI
  # 4.1; orte_tmpdir_base). 5.x's PRRTE reads prte_tmpdir_base.
  ompi_tmp=$(mktemp -d "${TMPDIR:-/tmp}/hdal-ompi.XXXXXX") &&
    OMPI_MCA_orte_tmpdir_base=$ompi_tmp PRTE_MCA_prte_tmpdir_base=$ompi_tmp &&
    export OMPI_MCA_orte_tmpdir_base PRTE_MCA_prte_tmpdir_base
  # A component Open MPI lacks is an error ("A requested component was not
  # found"), so each comes from the installed list: the ompi_info beside MPIRUN.
  ompi_info=$(dirname "$MPIRUN")/ompi_info
  [ -x "$ompi_info" ] || ompi_info=ompi_info
  components=$("$ompi_info" --parsable 2>/dev/null | sed -n 's/^mca:\([a-z]*\):\([a-z0-9_]*\):version:.*/\1:\2/p' | sort -u)
  has_component() { echo "$components" | grep -qx "$1"; }
  MPI_OPTS="--oversubscribe --bind-to none --mca pml ob1 --tag-output"
  has_component plm:isolated && MPI_OPTS="$MPI_OPTS --mca plm isolated"
  if has_component btl:vader; then
    MPI_OPTS="$MPI_OPTS --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
  elif has_component btl:sm; then
    MPI_OPTS="$MPI_OPTS --mca btl self,sm"
    # 5.x moved single-copy into the smsc framework.
    has_component smsc:cma && MPI_OPTS="$MPI_OPTS --mca smsc ^cma"
  else
    echo "SKIP: $ompi_info lists neither btl vader nor btl sm (shared memory): $(echo $components)"
    exit 77
  fi ;;
esac
# What the launcher can do, learnt at the first need (mpi_run_each, mpi_untag).
mpi_mpmd=
unset mpi_tag_sep
# Under --enable-sanitizers: leaks of the MPI library itself are not hdal's
# (full stacks, and components kept loaded so that their frames have names).
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$srcdir/mpi/lsan-mpi.supp:fast_unwind_on_malloc=0"
OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose

# A rank that never returns must fail the test, not hang the suite.
MPI_TIMEOUT=${HDAL_MPI_TIMEOUT:-120}
if command -v timeout >/dev/null; then MPI_TIMER="timeout $MPI_TIMEOUT"; else MPI_TIMER=; fi

fails=0 passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
  [ -n "${ompi_tmp:-}" ] && rm -rf "$ompi_tmp"
  echo "$(basename "$0"): $passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}

# mpi_status RC WHAT: reports an mpirun exit status.
mpi_status() {
  case $1 in
  0) ok ;;
  124) fail "$2: mpirun timed out after ${MPI_TIMEOUT}s (a rank left the others waiting?)" ;;
  *) fail "$2: mpirun exited $1" ;;
  esac
}

# mpi_run NP PROGRAM [ARG]...: NP ranks of one program.
mpi_run() {
  np=$1; shift
  echo "+ mpirun -np $np $*" >&2
  # shellcheck disable=SC2086
  $MPI_TIMER "$MPIRUN" $MPI_OPTS -np "$np" "$@"
}

# mpi_run_each VAR "V0;V1;..." PROGRAM [ARG]...: one rank per value, rank i
# with VAR=Vi (values may hold spaces, arguments may not).  VAR may name
# several variables, "A|B", each value giving theirs, "a0|b0;a1|b1".  MPMD (one
# application context per rank) where the launcher can start it; Open MPI 5.0's
# mpirun on Debian 13 dies with SIGSEGV on any MPMD line (open-mpi/ompi#13303),
# and there each rank of one context sets VAR by its rank (mpi/rank-env.sh).
mpi_run_each() {
  var=$1 rest=$2 prog=$3; shift 3
  args=$*
  if [ -z "${mpi_mpmd:-}" ]; then
    # shellcheck disable=SC2086
    if $MPI_TIMER "$MPIRUN" $MPI_OPTS -np 1 true : -np 1 true >/dev/null 2>&1; then mpi_mpmd=yes; else
      mpi_mpmd=no
      echo "note: $MPIRUN cannot start an MPMD job here: each rank sets $var from mpi/rank-env.sh" >&2
    fi
  fi
  if [ "$mpi_mpmd" = no ]; then
    np=$(echo "$rest" | awk -F';' '{ print NF }')
    echo "+ mpirun -np $np rank-env.sh $var '$rest' $prog $args" >&2
    # shellcheck disable=SC2086
    $MPI_TIMER "$MPIRUN" $MPI_OPTS -np "$np" sh "$srcdir/mpi/rank-env.sh" "$var" "$rest" "$prog" $args
    return
  fi
  set --
  while :; do
    v=${rest%%;*}
    [ $# -gt 0 ] && set -- "$@" :
    case ${MPI_FLAVOR:-openmpi} in
    mpich) set -- "$@" -n 1 ;;
    *) set -- "$@" -np 1 ;;
    esac
    names=$var
    while :; do
      case ${MPI_FLAVOR:-openmpi} in
      mpich) set -- "$@" -env "${names%%|*}" "${v%%|*}" ;;
      *) set -- "$@" -x "${names%%|*}=${v%%|*}" ;;
      esac
      [ "$names" = "${names#*|}" ] && break
      names=${names#*|} v=${v#*|}
    done
    # shellcheck disable=SC2086
    set -- "$@" "$prog" $args
    [ "$rest" = "${rest#*;}" ] && break
    rest=${rest#*;}
  done
  echo "+ mpirun $*" >&2
  # shellcheck disable=SC2086
  $MPI_TIMER "$MPIRUN" $MPI_OPTS "$@"
}

# mpi_fake_host DIR NAME BOOT_ID NETNS: DIR stands for / (HDAL_FSROOT) on a
# host of that hostname, kernel boot id and network namespace (the link
# /proc/self/ns/net reads, "net:[4026531840]"); an empty BOOT_ID or NETNS
# leaves it out, and the host has no id (docs/dlpack.md, "Hosts").
mpi_fake_host() {
  mkdir -p "$1/proc/sys/kernel/random" "$1/proc/self/ns" || return 1
  echo "$2" >"$1/proc/sys/kernel/hostname"
  [ -z "$3" ] || echo "$3" >"$1/proc/sys/kernel/random/boot_id"
  [ -z "$4" ] || ln -s "$4" "$1/proc/self/ns/net"
}

# mpi_untag RANK < TAGGED > PLAIN: one rank's standard output without the
# launcher's tags (which also appear inside a line where a write ended); fails
# when a line is untagged or comes from another rank.
mpi_untag() {
  case ${MPI_FLAVOR:-openmpi} in
  mpich) re='\[[0-9]+\] ' ;;
  *)
    # Open MPI 4.1 writes "[1,R]<stdout>:line", 5.0's PRRTE "[1,R]<stdout>: line":
    # the separator is taken from the launcher once, not guessed.
    if [ -z "${mpi_tag_sep+set}" ]; then
      # shellcheck disable=SC2086
      mpi_tag_sep=$($MPI_TIMER "$MPIRUN" $MPI_OPTS -np 1 echo hdal-tag </dev/null 2>/dev/null | sed -n 's/^\[[0-9]*,0\]<stdout>:\( *\)hdal-tag$/\1/p')
    fi
    re="\\[[0-9]+,[0-9]+\\]<stdout>:$mpi_tag_sep" ;;
  esac
  awk -v want="$1" -v re="$re" '
    { if (match($0, "^" re) == 0) bad = 1
      out = ""; rest = $0
      while (match(rest, re)) {
        t = substr(rest, RSTART, RLENGTH); gsub(/[^0-9,]/, "", t); n = split(t, f, ",")
        if (f[n] != want) bad = 1
        out = out substr(rest, 1, RSTART - 1); rest = substr(rest, RSTART + RLENGTH)
      }
      print out rest }
    END { exit bad }'
}
