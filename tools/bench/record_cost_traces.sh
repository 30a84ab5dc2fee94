#!/usr/bin/env bash
# Records measured GPU traces for fitting the simulator's cost model (`tilesched fit`), on the
# device machine.
# Usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR [--grid] [--scheduler KIND] [--runs LIST]
#        [--device NAME] [--page-sizes LIST]
# One trace per head dim (64, 128, 256) and mask (causal, none) on the built-in ragged workload:
# causal and non-causal tiles of one head dim differ in their masked-block counts, which is what
# lets the fit tell the per-block and per-masked-block costs apart. The simulator check is skipped
# (--no-check): these runs are about timing; correctness is test_gpu's job. BM is given: 128
# (the table entries' own tile height) throughout, and at d = 64 also 192, the kernel's other tile
# height, whose traces `tilesched fit` puts under the entry's tile_heights (without --bm, `run`
# would take the tile height the simulator predicts fastest, mixing heights among the files).
#   --grid            also the padded grid points that pin short rows and causal diagonals: hidden
#                     2048 (2048 / d query heads, 8 KV heads), batch x seq = 16384, seq 512, 1024
#                     and 2048, causal and not (<device>_grid_d<D>_bm<BM>_s<SEQ>_<mask>)
#   --scheduler KIND  run KIND instead of the tile scheduler (for `tilesched fit --scheduler KIND`,
#                     which fits that kind's own kernel); the names get a _<KIND> suffix
#   --runs LIST       head dim:BM pairs to record (default 64:128,64:192,128:128,256:128)
#   --device NAME     the files' name prefix, the device the table is for (default h200)
#   --page-sizes LIST also the built-in workloads over a paged cache of each page size (for the
#                     table's paged factors, `tilesched fit`): <device>_d<D>_<mask>_page<N>
set -euo pipefail
usage="usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR [--grid] [--scheduler KIND] [--runs D:BM,...] [--device NAME] [--page-sizes N,...]"
tilesched=${1:?$usage}
out=${2:?$usage}
shift 2
grid=0
scheduler=tile
runs="64:128,64:192,128:128,256:128"
device=h200
page_sizes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --grid) grid=1 ;;
    --scheduler) scheduler=${2:?$usage}; shift ;;
    --runs) runs=${2:?$usage}; shift ;;
    --device) device=${2:?$usage}; shift ;;
    --page-sizes) page_sizes=${2:?$usage}; shift ;;
    *) echo "record_cost_traces: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
  shift
done
suffix=""
[ "$scheduler" = tile ] || suffix="_$scheduler"
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
record() {  # NAME, then the run's flags
  local name=$1
  shift
  echo "record_cost_traces: $name" >&2
  if ! "$tilesched" run --scheduler "$scheduler" --no-check --out "$scratch/$name" "$@" \
    >"$out/$name.log" 2>&1; then
    echo "record_cost_traces: $name failed (see $out/$name.log)" >&2
    exit 1
  fi
  cp "$scratch/$name/trace.json" "$out/$name.trace.json"
}
for run in ${runs//,/ }; do
  d=${run%%:*}
  bm=${run#*:}
  for mask in causal none; do
    name="${device}_d${d}_${mask}"
    [ "$bm" = 128 ] || name="${device}_d${d}_bm${bm}_${mask}"
    record "$name$suffix" --head-dim "$d" --mask "$mask" --bm "$bm"
    for page in ${page_sizes//,/ }; do
      record "${name}_page${page}$suffix" --head-dim "$d" --mask "$mask" --bm "$bm" \
        --page-size "$page"
    done
    [ "$grid" = 1 ] || continue
    for seq in 512 1024 2048; do
      record "${device}_grid_d${d}_bm${bm}_s${seq}_${mask}$suffix" --head-dim "$d" --mask "$mask" \
        --bm "$bm" --batch $((16384 / seq)) --seq-len "$seq" --heads $((2048 / d)) --kv-heads 8
    done
  done
done
