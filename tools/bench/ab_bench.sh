#!/usr/bin/env bash
# A/B of two tilesched binaries on the GPU machine: ROUNDS interleaved rounds (A, B, A, B, ...) of
# `bench --json` with the same options, then ab_compare.py prints B / A per point from the rounds'
# means, and how far each binary's rounds spread (the run-to-run noise the ratio must beat).
#   tools/bench/ab_bench.sh BINARY_A BINARY_B OUT_DIR [ROUNDS] [bench options...]
# Default bench options: --iters 20 --cooldown-ms 600 (the whole grid).
set -euo pipefail
usage="usage: ab_bench.sh BINARY_A BINARY_B OUT_DIR [ROUNDS] [bench options...]"
a=${1:?$usage}; b=${2:?$usage}; out=${3:?$usage}; rounds=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ab_bench.sh: ROUNDS must be a positive integer, not '$rounds'" >&2; exit 2; }
opts=("$@"); [[ ${#opts[@]} -gt 0 ]] || opts=(--iters 20 --cooldown-ms 600)
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for side in a b; do
    bin=$a; [[ $side == b ]] && bin=$b
    echo "== round $r, $side: $bin ${opts[*]}" >&2
    "$bin" bench --json "$out/$side$r.json" "${opts[@]}" >"$out/$side$r.log"
  done
done
python3 "$(dirname "$0")/ab_compare.py" "$out" | tee "$out/ab.md"
