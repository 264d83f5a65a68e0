#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# rank-env.sh VAR "V0;V1;..." PROGRAM [ARG]...: run under the launcher, sets
# VAR to the value of this rank (Vi for rank i, from the launcher's
# OMPI_COMM_WORLD_RANK or PMI_RANK) and becomes PROGRAM: what an MPMD line
# "-x VAR=V0 PROGRAM : -x VAR=V1 PROGRAM ..." does (tests/mpi/mpirun.sh).
# VAR "A|B" with values "a0|b0;a1|b1" sets both.
set -u
var=$1 rest=$2
shift 2
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}
case $rank in
'' | *[!0-9]*) echo "rank-env.sh: no rank from the launcher (OMPI_COMM_WORLD_RANK, PMI_RANK)" >&2; exit 99 ;;
esac
i=0
while [ "$i" -lt "$rank" ]; do
  [ "$rest" = "${rest#*;}" ] && { echo "rank-env.sh: no value of $var for rank $rank" >&2; exit 99; }
  rest=${rest#*;}
  i=$((i + 1))
done
v=${rest%%;*}
while :; do
  export "${var%%|*}=${v%%|*}"
  [ "$var" = "${var#*|}" ] && break
  var=${var#*|} v=${v#*|}
done
exec "$@"
