#!/usr/bin/env bash
# Nsight Compute of our kernel beside cuDNN's (PyTorch SDPA) and, with FA4_SITE=DIR,
# FlashAttention-4's at one grid shape, on the GPU machine. Each kernel is profiled once with
# `--set full` at the GPU's own clocks (--clock-control none); the reports and their CSV exports
# (details, raw metrics, per-SASS-instruction counters) land in OUT_DIR, and ncu_summary.py prints
# the figures side by side (summary.md). With FA4_SITE, FA4's generated PTX and cubin are kept
# in OUT_DIR/fa4_dump.
#   tools/bench/ncu_compare.sh TILESCHED_BINARY OUT_DIR [HEAD_DIM] [SEQ] [none|causal]
set -euo pipefail
bin=${1:?usage: ncu_compare.sh TILESCHED_BINARY OUT_DIR [HEAD_DIM] [SEQ] [none|causal]}
out=${2:?usage: ncu_compare.sh TILESCHED_BINARY OUT_DIR [HEAD_DIM] [SEQ] [none|causal]}
d=${3:-128}
seq=${4:-8192}
mask=${5:-none}
# `bench --warmup 1 --iters 1` launches each point twice, at d = 128 six more for the trace's cost
# (pairs with and without recording), dense first: profile the point's second plain launch.
dense_launches=$(( d == 128 ? 8 : 2 ))
case "$mask" in
  none) causal_flag= ; skip=1 ;;
  causal) causal_flag=--causal ; skip=$(( dense_launches + 1 )) ;;
  *) echo "ncu_compare.sh: mask must be none or causal, not '$mask'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ncu=(ncu --set full --import-source no --clock-control none -f)

echo "== ours" >&2
"${ncu[@]}" -k regex:fmha_kernel --launch-skip "$skip" --launch-count 1 -o "$out/ours" \
  "$bin" bench --head-dims "$d" --seq-lens "$seq" --warmup 1 --iters 1 >"$out/ours.log" 2>&1
echo "== cudnn" >&2
"${ncu[@]}" --nvtx --nvtx-include "peer/" --launch-count 1 -o "$out/cudnn" \
  python3 "$here/peer_kernels.py" cudnn --head-dim "$d" --seq-len "$seq" $causal_flag \
  >"$out/cudnn.log" 2>&1
kernels=(ours cudnn)
if [[ -n "${FA4_SITE:-}" ]]; then
  echo "== fa4" >&2
  mkdir -p "$out/fa4_dump"
  CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR="$out/fa4_dump" \
    "${ncu[@]}" --nvtx --nvtx-include "peer/" --launch-count 1 -o "$out/fa4" \
    python3 "$here/peer_kernels.py" fa4 --fa4-site "$FA4_SITE" --head-dim "$d" --seq-len "$seq" \
    $causal_flag >"$out/fa4.log" 2>&1
  kernels+=(fa4)
fi
for k in "${kernels[@]}"; do
  ncu -i "$out/$k.ncu-rep" --page details --csv >"$out/${k}_details.csv"
  ncu -i "$out/$k.ncu-rep" --page raw --csv >"$out/${k}_raw.csv"
  ncu -i "$out/$k.ncu-rep" --page source --csv --print-source sass >"$out/${k}_sass.csv" ||
    echo "ncu_compare.sh: no per-instruction export for $k" >&2
done
python3 "$here/ncu_summary.py" "${kernels[@]/#/$out/}" | tee "$out/summary.md"
