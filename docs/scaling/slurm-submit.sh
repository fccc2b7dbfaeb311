#!/bin/bash
# Submit a sharded neurotex job to Slurm: a job array of SHARDS tasks (one GPU each) and
# the merge, which starts once every task has succeeded. JOB=compress (the default)
# compresses a library (slurm-shard.sbatch, slurm-merge.sbatch); JOB=eval runs the
# shared-decoder study (slurm-eval-shard.sbatch, slurm-eval-merge.sbatch).
#
#   SHARDS=64 MANIFEST=/shared/library/manifest.csv WORK=/shared/ntc ./slurm-submit.sh
#   JOB=eval SHARDS=8 MANIFEST=/shared/bistro/manifest.csv WORK=/shared/ntc ./slurm-submit.sh
set -euo pipefail

: "${SHARDS:?set SHARDS, the number of shards (GPUs)}"
: "${MANIFEST:?set MANIFEST to the texture-set manifest (CSV) on the shared file system}"
: "${WORK:?set WORK to a folder on the shared file system}"
case "${JOB:-compress}" in
    compress) prefix=slurm ;;
    eval) prefix=slurm-eval ;;
    *) echo "JOB must be compress or eval, not ${JOB}" >&2; exit 1 ;;
esac
export SHARDS MANIFEST WORK
here=$(dirname "$0")

array=$(sbatch --parsable --export=ALL --array=0-$((SHARDS - 1)) "$here/$prefix-shard.sbatch")
array=${array%%;*}
sbatch --parsable --export=ALL --dependency=afterok:"$array" "$here/$prefix-merge.sbatch"
