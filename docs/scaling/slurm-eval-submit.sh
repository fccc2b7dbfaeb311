#!/bin/bash
# Submit a sharded neurotex evaluation (the shared-decoder study) to Slurm: a job array
# of SHARDS tasks (one GPU each, each evaluating its share of the study's runs) and the
# merge, which starts once every task has succeeded.
#
#   SHARDS=8 MANIFEST=/shared/bistro/manifest.csv WORK=/shared/ntc ./slurm-eval-submit.sh
set -euo pipefail

: "${SHARDS:?set SHARDS, the number of shards (GPUs)}"
: "${MANIFEST:?set MANIFEST to the texture-set manifest (CSV) on the shared file system}"
: "${WORK:?set WORK to a folder on the shared file system}"
export SHARDS MANIFEST WORK
here=$(dirname "$0")

array=$(sbatch --parsable --export=ALL --array=0-$((SHARDS - 1)) "$here/slurm-eval-shard.sbatch")
array=${array%%;*}
sbatch --parsable --export=ALL --dependency=afterok:"$array" "$here/slurm-eval-merge.sbatch"
