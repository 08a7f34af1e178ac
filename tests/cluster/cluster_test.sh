#!/usr/bin/env bash
# The cluster recipes of docs/commands/merge.md, run for real (docs/design.md §13): `slurm`
# starts a one-node Slurm on localhost (munged, slurmctld and slurmd in the foreground, children
# of this script, with a slurm.conf and munge key in a temporary folder), submits
# examples/cluster/*.sbatch as job arrays with `sbatch --wait`; `mpi` runs
# examples/cluster/*-mpi.sh under `mpirun -n 2`.
# Either way the shards are merged with `attngeo merge` and must equal the unsharded run byte
# for byte (manifest.json aside). Daemons it started are stopped on every exit path.
# Usage: cluster_test.sh slurm|mpi ATTNGEO_EXE SOURCE_DIR. Exit 77 (CTest's skip) only where
# the machine lacks the programs and ATTNGEO_REQUIRE_CLUSTER is not 1.
set -euo pipefail
MODE=$1
ATTNGEO=$2
SOURCE=$3
SHARED=${ATTNGEO_SHARED:-$SOURCE/../shared}
MODEL="$SHARED/models/stories260K/stories260K.bin"
CORPUS="$SOURCE/examples/stories260K_corpus.txt"
export ATTNGEO MODEL CORPUS TRIALS=100 CONTEXT=64 DOCS=12

skip_or_fail() {
  if [ "${ATTNGEO_REQUIRE_CLUSTER:-0}" = "1" ]; then
    echo "cluster test: $1 (ATTNGEO_REQUIRE_CLUSTER=1 forbids skipping)" >&2
    exit 1
  fi
  echo "cluster test skipped: $1"
  exit 77
}

case $MODE in
  slurm) needed=(munged slurmctld slurmd sbatch sinfo) ;;
  mpi) needed=(mpirun) ;;
  *) echo "usage: cluster_test.sh slurm|mpi ATTNGEO_EXE SOURCE_DIR" >&2; exit 2 ;;
esac
export PATH="$PATH:/usr/sbin:/sbin"  # the daemons live there; a user's PATH may lack it
for program in "${needed[@]}"; do
  command -v "$program" >/dev/null ||
    skip_or_fail "$program is not installed (scripts/install-deps.sh installs it)"
done
[ -f "$MODEL" ] || skip_or_fail "no $MODEL (ATTNGEO_SHARED)"

WORK=$(mktemp -d /tmp/attngeo-cluster.XXXXXX)
DAEMONS=()
stop_daemons() {
  local pid
  for pid in "${DAEMONS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${DAEMONS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap stop_daemons EXIT
trap "exit 143" TERM INT  # so a timeout or Ctrl-C stops the daemons too

# same_run WHOLE MERGED: every file but manifest.json equal, and no file on one side only.
same_run() {
  diff -r --exclude=manifest.json "$1" "$2" >/dev/null || {
    echo "cluster test: merged shards differ from the unsharded run:" >&2
    diff -rq --exclude=manifest.json "$1" "$2" >&2 || true
    exit 1
  }
  echo "$(basename "$2"): the merged shards equal the unsharded run ($(ls "$2" | wc -l) files)"
}

# The unsharded reference: the same recipe as a single shard 0/1, in its own folder.
reference() {  # KIND RECIPE → $WORK/whole/runs/KIND-shard-0
  mkdir -p "$WORK/whole"
  if [ "$MODE" = slurm ]; then
    (cd "$WORK/whole" && SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=1 SLURM_CPUS_PER_TASK=1 \
      bash "$SOURCE/examples/cluster/$2" >"$WORK/whole-$1.log" 2>&1)
  else
    (cd "$WORK/whole" && OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 \
      sh "$SOURCE/examples/cluster/$2" >"$WORK/whole-$1.log" 2>&1)
  fi
}

start_slurm() {
  local host port_base
  host=$(hostname)
  port_base=$((20000 + RANDOM % 20000))
  mkdir -p "$WORK/state" "$WORK/spool"
  head -c 1024 /dev/urandom >"$WORK/munge.key"
  chmod 400 "$WORK/munge.key"
  munged -F --force --socket="$WORK/munge.sock" --key-file="$WORK/munge.key" \
    --log-file="$WORK/munged.log" --pid-file="$WORK/munged.pid" --seed-file="$WORK/munged.seed" \
    >"$WORK/munged.out" 2>&1 &
  DAEMONS+=($!)
  cat >"$WORK/slurm.conf" <<CONF
ClusterName=attngeotest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.sock
CredType=cred/munge
SlurmctldPort=$port_base
SlurmdPort=$((port_base + 1))
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$WORK/slurm.conf"
  for _ in $(seq 50); do [ -S "$WORK/munge.sock" ] && break; sleep 0.2; done
  slurmctld -D -f "$SLURM_CONF" >"$WORK/slurmctld.out" 2>&1 &
  DAEMONS+=($!)
  slurmd -D -f "$SLURM_CONF" >"$WORK/slurmd.out" 2>&1 &
  DAEMONS+=($!)
  # Should this script be killed outright (CTest's timeout sends SIGKILL), a watchdog stops them.
  local parent=$$ daemons="${DAEMONS[*]}"
  (
    trap '' TERM INT
    while kill -0 "$parent" 2>/dev/null; do sleep 1; done
    # shellcheck disable=SC2086
    kill $daemons 2>/dev/null
  ) >/dev/null 2>&1 &
  for _ in $(seq 120); do
    [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && return 0
    sleep 0.5
  done
  echo "cluster test: the node never became idle; sinfo says '$(sinfo -h -o %t 2>&1)'" >&2
  tail -n 20 "$WORK"/*.log "$WORK"/*.out >&2 || true
  exit 1
}

# run_sharded KIND RECIPE: the recipe over 4 shards (Slurm) or 2 ranks (MPI), then merge.
run_sharded() {
  mkdir -p "$WORK/sharded"
  if [ "$MODE" = slurm ]; then
    (cd "$WORK/sharded" && sbatch --wait --array=0-3 --cpus-per-task=1 \
      --output="$WORK/$1-%a.log" "$SOURCE/examples/cluster/$2" >/dev/null) || {
      echo "cluster test: sbatch --wait $2 failed" >&2
      tail -n 20 "$WORK/$1"-*.log "$WORK/slurmctld.log" >&2 || true
      exit 1
    }
  else
    (cd "$WORK/sharded" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun -n 2 sh "$SOURCE/examples/cluster/$2" >"$WORK/$1-mpi.log" 2>&1) || {
      echo "cluster test: mpirun -n 2 $2 failed" >&2
      tail -n 20 "$WORK/$1-mpi.log" >&2
      exit 1
    }
  fi
  "$ATTNGEO" merge "$WORK/sharded/runs/$1"-shard-* --out "$WORK/merged-$1" >/dev/null
  same_run "$WORK/whole/runs/$1-shard-0" "$WORK/merged-$1"
}

if [ "$MODE" = slurm ]; then
  start_slurm
  sweep_recipe=sweep.sbatch extract_recipe=extract.sbatch
else
  sweep_recipe=sweep-mpi.sh extract_recipe=extract-mpi.sh
fi
reference sweep "$sweep_recipe"
run_sharded sweep "$sweep_recipe"
reference extract "$extract_recipe"
run_sharded extract "$extract_recipe"
