#!/usr/bin/env bash
# Reproduces docs/gpu-performance.md on a GPU machine: our kernel over the benchmark grid
# (docs/spec.md §9), then PyTorch SDPA (cuDNN backend) on the same shapes in the same run.
#   tools/bench/gpu_bench.sh [TILESCHED_BINARY] [OUT_DIR] [--quick]
set -euo pipefail
bin=${1:-build/default/tools/tilesched}
out=${2:-gpu-bench-out}
quick=${3:-}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
"$bin" bench --json "$out/ours.json" ${quick:+--quick} | tee "$out/ours.log"
python3 "$(dirname "$0")/gpu_bench.py" --ours "$out/ours.json" --out "$out/side_by_side.json" \
  --markdown "$out/side_by_side.md"
