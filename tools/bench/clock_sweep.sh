#!/usr/bin/env bash
# Cycles or clock: where a long dense launch's time goes, on the GPU machine. Nsight Compute
# measures one `tilesched run` launch of a dense padded batch (the tile scheduler, 16384 rows x
# 2048 / d heads) at each CTA count twice: with the SM clock locked to base (--clock-control base:
# the cycles a tile takes, the kernel's own work) and at the GPU's own clock (what its power limit
# lets it run at). clock_sweep.py prints both per CTA count (OUT_DIR/sweep.md); the CSVs stay in
# OUT_DIR. docs/gpu-performance.md (twentieth session) reads such a sweep.
#   tools/bench/clock_sweep.sh TILESCHED_BINARY OUT_DIR [HEAD_DIM] [SEQ] [CTAS] [BM]
# Defaults: d 128, seq 8192, CTAs 128,64,32,16, BM 128.
set -euo pipefail
usage="usage: clock_sweep.sh TILESCHED_BINARY OUT_DIR [HEAD_DIM] [SEQ] [CTAS] [BM]"
bin=${1:?$usage}; out=${2:?$usage}
d=${3:-128}; seq=${4:-8192}; ctas=${5:-128,64,32,16}; bm=${6:-128}
case "$d" in 64|128|256) ;; *) echo "clock_sweep.sh: HEAD_DIM must be 64, 128 or 256, not '$d'" >&2; exit 2 ;; esac
if ! [[ "$seq" =~ ^[1-9][0-9]*$ ]] || (( 16384 % seq != 0 )); then
  echo "clock_sweep.sh: SEQ must divide 16384 (the batch is 16384 / SEQ sequences), not '$seq'" >&2; exit 2
fi
if ! [[ "$ctas" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  echo "clock_sweep.sh: CTAS must be a comma-separated list of positive integers, not '$ctas'" >&2; exit 2
fi
case "$bm" in 128|192) ;; *) echo "clock_sweep.sh: BM must be 128 or 192, not '$bm'" >&2; exit 2 ;; esac
[[ -x "$bin" ]] || { echo "clock_sweep.sh: '$bin' is not an executable file" >&2; exit 2; }
batch=$(( 16384 / seq )); heads=$(( 2048 / d ))
mkdir -p "$out"
metrics=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second
for c in ${ctas//,/ }; do
  for clock in base none; do
    echo "== $c CTAs, clock: $clock" >&2
    ncu --clock-control "$clock" --metrics "$metrics" -k regex:fmha_kernel --launch-count 1 --csv \
      "$bin" run --batch "$batch" --seq-len "$seq" --heads "$heads" --head-dim "$d" --bm "$bm" \
      --mask none --scheduler tile --ctas "$c" --no-check --out "$out/run" >"$out/ctas${c}_$clock.csv"
  done
done
python3 "$(dirname "$0")/clock_sweep.py" "$out" --seq "$seq" --heads "$heads" --batch "$batch" \
  --bm "$bm" --ctas "$ctas" | tee "$out/sweep.md"
