#!/usr/bin/env bash
# Runs an rtvmm study on a Slurm cluster (docs/cluster.md): a job array of N shards, then
# a merge job that starts when every shard has succeeded.
#
#   tools/slurm/submit.sh STUDY N OUT [-- FLAGS…]
#   e.g. RTVMM=$HOME/bin/rtvmm tools/slurm/submit.sh rtxen-isolation 16 results/iso -- --seed 3
#
# STUDY is an experiment's name (FLAGS: `rtvmm experiment`'s; OUT: the study's
# directory), `sweep=DIR` (every scenario file of DIR; FLAGS: `rtvmm sweep`'s; OUT: the
# results table, a CSV file) or `gen=KIND` (FLAGS: `rtvmm gen KIND`'s, --count K among
# them; OUT: the directory of the K files). Not --out, --shard or -j: the scripts set them.
#
# Environment:
#   RTVMM          the rtvmm binary, on a file system every node sees (default: `rtvmm` on
#                  this PATH); made absolute here, and the jobs run that file.
#   RTVMM_SHARDS   where the shards and the jobs' logs go (default: OUT.shards); it must
#                  hold no shard-* yet (a stale shard would be merged or refused).
#   SBATCH_*       Slurm's own: SBATCH_PARTITION, SBATCH_TIMELIMIT, SBATCH_ACCOUNT, … apply
#                  to both jobs.
# OUT and RTVMM_SHARDS must be on a file system every node sees; both are made absolute.
# Prints the two job ids; the merge job's log holds merge's refusal when it refuses. A
# failed shard cancels the merge (--kill-on-invalid-dep).
set -euo pipefail

usage() {
  echo "usage: $0 STUDY N OUT [-- FLAGS…]  (STUDY: EXPERIMENT, sweep=DIR or gen=KIND)" >&2
  exit 2
}
[ "$#" -ge 3 ] || usage
study=$1 count=$2 out=$3
shift 3
if [ "$#" -gt 0 ]; then
  [ "$1" = "--" ] || usage
  shift
fi
case $count in
  '' | *[!0-9]* | 0*) echo "$0: N must be a whole number of at least 1, not '$count'" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
rtvmm=${RTVMM:-rtvmm}
if ! binary=$(command -v "$rtvmm"); then
  echo "$0: no rtvmm binary at '$rtvmm' (set RTVMM to its path)" >&2
  exit 2
fi
export RTVMM
RTVMM=$(realpath "$binary")
out=$(realpath -m "$out")
case $study in
  sweep=*)
    dir=${study#sweep=}
    [ -d "$dir" ] || { echo "$0: $study: no directory $dir" >&2; exit 2; }
    study="sweep=$(realpath "$dir")"
    ;;
esac
shards=$(realpath -m "${RTVMM_SHARDS:-$out.shards}")
if compgen -G "$shards/shard-*" >/dev/null; then
  echo "$0: $shards already holds shards; remove them or set RTVMM_SHARDS" >&2
  exit 2
fi
mkdir -p "$shards"

array=$(sbatch --parsable --array="1-$count" --output="$shards/slurm-%A_%a.out" \
  "$here/rtvmm-shards.sbatch" "$study" "$count" "$shards" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --output="$shards/merge-%j.out" "$here/rtvmm-merge.sbatch" "$out" "$shards" "$study")
merge=${merge%%;*}

echo "shards: array job $array, $count tasks, into $shards/shard-1 … shard-$count"
echo "merge: job $merge, after every shard succeeds, into $out (log: $shards/merge-$merge.out)"
echo "check: squeue -j $array,$merge"
