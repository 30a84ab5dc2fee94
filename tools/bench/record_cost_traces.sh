#!/usr/bin/env bash
# Records measured GPU traces for fitting the simulator's cost model (`tilesched fit`), on the
# device machine. Usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR
# One trace per head dim (64, 128, 256) and mask (causal, none) on the built-in ragged workload:
# causal and non-causal tiles of one head dim differ in their masked-block counts, which is what
# lets the fit tell the per-block and per-masked-block costs apart. The simulator check is skipped
# (--no-check): these runs are about timing; correctness is test_gpu's job. BM is 128 throughout
# (the table's tile height): without --bm, `run` would take the kernel's recommended BM, which is
# 192 for the non-causal d = 64 run, and a fit keyed by head dim must not mix tile heights.
set -euo pipefail
tilesched=${1:?usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR}
out=${2:?usage: record_cost_traces.sh TILESCHED_BINARY OUT_DIR}
mkdir -p "$out"
scratch=$(mktemp -d)
for d in 64 128 256; do
  for mask in causal none; do
    name="h200_d${d}_${mask}"
    echo "record_cost_traces: $name" >&2
    "$tilesched" run --head-dim "$d" --mask "$mask" --bm 128 --no-check --out "$scratch/$name" \
      >"$out/$name.log" 2>&1
    cp "$scratch/$name/trace.json" "$out/$name.trace.json"
  done
done
rm -rf "$scratch"
