#!/bin/sh
# extract with Open MPI, every rank its shard (MODEL and CORPUS in the environment):
#   MODEL=... CORPUS=... mpirun -n 16 sh examples/cluster/extract-mpi.sh
#   attngeo merge runs/extract-shard-* --out runs/extract
ATTNGEO=${ATTNGEO:-attngeo}
exec "$ATTNGEO" extract --model "${MODEL:?set MODEL to a checkpoint}" \
  --corpus "${CORPUS:?set CORPUS to a text or .jsonl corpus}" \
  --context "${CONTEXT:-1024}" --docs "${DOCS:-500}" \
  --shard "$OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE" --out "runs/extract-shard-$OMPI_COMM_WORLD_RANK"
