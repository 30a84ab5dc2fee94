#!/usr/bin/env bash
# Cycles or clock: where the time between our kernel and a peer's goes at shapes of the benchmark
# grid, on the GPU machine. Nsight Compute measures each kernel once with the SM clock locked to
# base (--clock-control base: the cycles the kernel's work takes) and once at the GPU's own clock
# (--clock-control none: the clock its power limit lets it run at, and the duration). Ours is the
# launch `tilesched bench` times at the shape (its tile height, scheduler and CTAs; the point's
# second plain launch, as ncu_compare.sh takes it); cuDNN (PyTorch SDPA) at every shape and, with
# FA4_SITE=DIR, FlashAttention-4 at seq >= 4096 (where gpu_bench.sh times it), each peer in one
# process over its shapes (peer_kernels.py --shapes). gap_split.py prints the table
# (OUT_DIR/gap_split.md); the CSVs stay in OUT_DIR.
#   tools/bench/gap_split.sh TILESCHED_BINARY OUT_DIR SHAPES
# SHAPES: D:SEQ:none|causal, comma-separated (d 64, 128 or 256; SEQ dividing 16384).
set -euo pipefail
usage="usage: gap_split.sh TILESCHED_BINARY OUT_DIR D:SEQ:none|causal[,...]"
bin=${1:?$usage}; out=${2:?$usage}; shapes=${3:?$usage}
[[ -x "$bin" ]] || { echo "gap_split.sh: '$bin' is not an executable file" >&2; exit 2; }
fa4=()
for shape in ${shapes//,/ }; do
  if ! [[ "$shape" =~ ^(64|128|256):([1-9][0-9]*):(none|causal)$ ]] ||
    (( 16384 % BASH_REMATCH[2] != 0 )); then
    echo "gap_split.sh: shape '$shape' is not D:SEQ:none|causal with d 64, 128 or 256 and SEQ dividing 16384" >&2
    exit 2
  fi
  (( BASH_REMATCH[2] >= 4096 )) && fa4+=("$shape")
done
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
metrics=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second
metrics+=,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
metrics+=,launch__grid_size
for shape in ${shapes//,/ }; do
  IFS=: read -r d seq mask <<<"$shape"
  # `bench --warmup 1 --iters 1` launches each point twice, at d = 128 six more for the trace's
  # cost, dense first: the point's second plain launch.
  dense_launches=$(( d == 128 ? 8 : 2 ))
  skip=$(( dense_launches + 1 ))
  [[ "$mask" == none ]] && skip=1
  for clock in base none; do
    echo "gap_split.sh: ours $shape, clock $clock" >&2
    ncu --clock-control "$clock" --metrics "$metrics" -k regex:fmha_kernel --launch-skip "$skip" \
      --launch-count 1 --csv "$bin" bench --head-dims "$d" --seq-lens "$seq" --warmup 1 --iters 1 \
      >"$out/ours_${d}_${seq}_${mask}_$clock.csv" 2>"$out/ours_${d}_${seq}_${mask}_$clock.log"
  done
done
peers=(cudnn)
(( ${#fa4[@]} > 0 )) && [[ -n "${FA4_SITE:-}" ]] && peers+=(fa4)
for peer in "${peers[@]}"; do
  list=$shapes
  [[ "$peer" == fa4 ]] && list=$(IFS=,; echo "${fa4[*]}")
  for clock in base none; do
    echo "gap_split.sh: $peer $list, clock $clock" >&2
    ncu --clock-control "$clock" --metrics "$metrics" --nvtx --nvtx-include "peer/" --csv \
      python3 "$here/peer_kernels.py" "$peer" --shapes "$list" --launches 1 \
      ${FA4_SITE:+--fa4-site "$FA4_SITE"} >"$out/${peer}_$clock.csv" 2>"$out/${peer}_$clock.log"
  done
  echo "$list" >"$out/${peer}_shapes.txt"
done
python3 "$here/gap_split.py" "$out" "$shapes" | tee "$out/gap_split.md"
