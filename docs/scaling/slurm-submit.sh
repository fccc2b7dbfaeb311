#!/bin/bash
# Submit a sharded neurotex compression to Slurm: a job array of SHARDS tasks (one GPU
# each) and the merge, which starts once every task has succeeded.
#
#   SHARDS=64 MANIFEST=/shared/library/manifest.csv WORK=/shared/ntc ./slurm-submit.sh
set -euo pipefail

: "${SHARDS:?set SHARDS, the number of shards (GPUs)}"
: "${MANIFEST:?set MANIFEST to the texture-set manifest (CSV) on the shared file system}"
: "${WORK:?set WORK to a folder on the shared file system}"
export SHARDS MANIFEST WORK
here=$(dirname "$0")

array=$(sbatch --parsable --export=ALL --array=0-$((SHARDS - 1)) "$here/slurm-shard.sbatch")
array=${array%%;*}
sbatch --parsable --export=ALL --dependency=afterok:"$array" "$here/slurm-merge.sbatch"
