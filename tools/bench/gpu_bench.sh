#!/usr/bin/env bash
# Reproduces docs/gpu-performance.md on a GPU machine: our kernel over the benchmark grid
# (docs/spec.md §9), then PyTorch SDPA (cuDNN backend) on the same shapes in the same run, both
# timed alike: COOLDOWN_MS (default 1500) idle before each point, HEAT_MS (default 0) of
# back-to-back launches, 3 warm-up launches, the median of 20 timed back to back. The H200 lowers
# its clocks under sustained load (its power cap): without the pause, whichever side runs
# continuously is timed at lower clocks. SM clock, power and throttle reasons go to clocks.csv.
# With FA4_SITE=DIR (flash-attn-4 installed there) FlashAttention-4 is timed alike too, at
# seq >= 4096, in the same Python process as cuDNN. The peers' inputs are drawn as ours are;
# PEER_INPUTS=bf16-rand draws them as the tables measured before 2026-12-02 did (gpu_bench.py
# --peer-inputs). Then (unless --quick or RAGGED=0) the ragged causal mix beside the grid:
# ragged_mix.py, one checked `tilesched run` per head dim and scheduler, into
# OUT_DIR/ragged/ragged.md.
#   tools/bench/gpu_bench.sh [TILESCHED_BINARY] [OUT_DIR] [--quick]
set -euo pipefail
bin=${1:-build/default/tools/tilesched}
out=${2:-gpu-bench-out}
quick=${3:-}
cooldown=${COOLDOWN_MS:-1500}
heat=${HEAT_MS:-0}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader |
  tee "$out/device.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv \
  -lms 100 > "$out/clocks.csv" &
smi=$!
trap 'kill $smi 2>/dev/null || true' EXIT
"$bin" bench --json "$out/ours.json" --cooldown-ms "$cooldown" --heat-ms "$heat" ${quick:+--quick} |
  tee "$out/ours.log"
python3 "$(dirname "$0")/gpu_bench.py" --ours "$out/ours.json" --out "$out/side_by_side.json" \
  --markdown "$out/side_by_side.md" ${FA4_SITE:+--fa4-site "$FA4_SITE"} \
  ${PEER_INPUTS:+--peer-inputs "$PEER_INPUTS"}
if [[ -z "$quick" && "${RAGGED:-1}" != 0 ]]; then
  python3 "$(dirname "$0")/ragged_mix.py" --tilesched "$bin" --out "$out/ragged"
fi
