#!/usr/bin/env bash
# Records measured GPU traces for fitting the simulator's cost model (`tilesched fit`), on the
# device machine. Usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR
# One trace per head dim (64, 128, 256) and mask (causal, none) on the built-in ragged workload:
# causal and non-causal tiles of one head dim differ in their masked-block counts, which is what
# lets the fit tell the per-block and per-masked-block costs apart. The simulator check is skipped
# (--no-check): these runs are about timing; correctness is test_gpu's job. BM is given: 128
# (the table entries' own tile height) throughout, and at d = 64 also 192, the kernel's other tile
# height, whose traces `tilesched fit` puts under the entry's tile_heights (without --bm, `run`
# would take the tile height the simulator predicts fastest, mixing heights among the files).
set -euo pipefail
tilesched=${1:?usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR}
out=${2:?usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR}
mkdir -p "$out"
scratch=$(mktemp -d)
for run in 64:128 64:192 128:128 256:128; do
  d=${run%%:*}
  bm=${run#*:}
  for mask in causal none; do
    name="h200_d${d}_${mask}"
    [ "$bm" = 128 ] || name="h200_d${d}_bm${bm}_${mask}"
    echo "record_cost_traces: $name" >&2
    "$tilesched" run --head-dim "$d" --mask "$mask" --bm "$bm" --no-check --out "$scratch/$name" \
      >"$out/$name.log" 2>&1
    cp "$scratch/$name/trace.json" "$out/$name.trace.json"
  done
done
rm -rf "$scratch"
