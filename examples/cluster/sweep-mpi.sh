#!/bin/sh
# The same sweep with Open MPI, no linking needed: every rank runs its shard.
#   mpirun -n 16 sh examples/cluster/sweep-mpi.sh
#   attngeo merge runs/sweep-shard-* --out runs/sweep
ATTNGEO=${ATTNGEO:-attngeo}
exec "$ATTNGEO" sweep --set beta=0.01,0.05,0.1 --set d=64,128,256 --trials "${TRIALS:-16000}" \
  --shard "$OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE" --out "runs/sweep-shard-$OMPI_COMM_WORLD_RANK"
