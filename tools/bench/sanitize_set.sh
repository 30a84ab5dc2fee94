#!/usr/bin/env bash
# compute-sanitizer over a set of small runs that covers every scheduler kind's kernel, on the
# device machine: memcheck, racecheck and synccheck of each kind (tile, queued, transient, lpt,
# lpt_queued, planned, ragged_queued) on a ragged causal batch (a sequence of length 1, an empty
# one, keys != queries), the head dim rotating over 64, 128 and 256; split_tail (mask none only)
# on a padded dense batch; split_kv (chunks of one KV block, d = 64) and stream_k (d = 256, its
# BN 80) on the ragged causal batch, so that tiles split into pieces and the combine runs;
# lpt_queued at d = 64 BM 192; paged caches of 16, 3 and 256 keys a page; d = 128's tile kernel
# in clusters of two CTAs (--clusters always) and its queued configuration under lpt_queued (short
# rows); decode tiles (split_kv, paged); initcheck of the tile kernel at d = 256.
# Each run is `tilesched run` (checked against the simulator) under the tool; it counts as clean
# when the tool exits 0, its summary says "0 errors" (racecheck: "0 hazards displayed") and the run
# prints `run: OK`.
# One line per run, the logs in OUT_DIR, then "clean: N of M"; exit 1 if any run is not clean.
# PATTERN (an extended regular expression) keeps only the runs whose name matches it, e.g.
# 'paged' for the paged caches' runs; it is an error when it matches none.
#   tools/bench/sanitize_set.sh TILESCHED_BINARY OUT_DIR [PATTERN]
set -uo pipefail
usage="usage: sanitize_set.sh TILESCHED_BINARY OUT_DIR [PATTERN]"
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "sanitize_set.sh: $usage" >&2; exit 2; }
bin=$1
out=$2
pattern=${3:-}
if [ -n "$pattern" ]; then
  grep -qE -- "$pattern" <<<"" 2>/dev/null; [ $? -le 1 ] ||
    { echo "sanitize_set.sh: PATTERN '$pattern' is not a valid extended regular expression" >&2; exit 2; }
fi
[ -x "$bin" ] || { echo "sanitize_set.sh: '$bin' is not an executable tilesched binary" >&2; exit 2; }
command -v compute-sanitizer >/dev/null ||
  { echo "sanitize_set.sh: compute-sanitizer not found on PATH (it comes with the CUDA toolkit)" >&2; exit 2; }
mkdir -p "$out" || { echo "sanitize_set.sh: cannot create '$out'" >&2; exit 2; }

ragged=(--q-lens 300,1,0,129,77 --kv-lens 300,90,0,200,77 --heads 4 --kv-heads 2 --ctas 7 --mask causal)
runs=0
clean=0
check() {  # NAME TOOL, then the run's flags
  local name=$1 tool=$2
  shift 2
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" <<<"$name"; then return; fi
  local log="$out/$name.log"
  compute-sanitizer --tool "$tool" "$bin" run "$@" >"$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
  runs=$((runs + 1))
  if [ $rc -eq 0 ] && grep -qE 'SUMMARY: 0 (errors|hazards)' <<<"$summary" && grep -q 'run: OK' "$log"; then
    clean=$((clean + 1))
    echo "clean      $name: $summary"
  else
    echo "NOT CLEAN  $name: exit $rc, ${summary:-no sanitizer summary}, see $log"
  fi
}

dims=(64 128 256)
i=0
for kind in tile queued transient lpt lpt_queued planned ragged_queued; do
  for tool in memcheck racecheck synccheck; do
    d=${dims[$((i % 3))]}
    i=$((i + 1))
    check "${tool}_${kind}_d${d}" "$tool" "${ragged[@]}" --head-dim "$d" --scheduler "$kind"
  done
done
for tool in memcheck racecheck synccheck; do
  check "${tool}_split_tail_d128" "$tool" --batch 2 --seq-len 640 --heads 2 --kv-heads 1 \
    --head-dim 128 --mask none --ctas 5 --scheduler split_tail
done
for tool in memcheck racecheck synccheck; do
  check "${tool}_split_kv_d64" "$tool" "${ragged[@]}" --head-dim 64 --scheduler split_kv \
    --split-kv-blocks 1
  check "${tool}_stream_k_d256" "$tool" "${ragged[@]}" --head-dim 256 --bn 80 --scheduler stream_k
done
check "racecheck_lpt_queued_d64_bm192" racecheck "${ragged[@]}" --head-dim 64 --bm 192 \
  --scheduler lpt_queued
for tool in memcheck racecheck synccheck; do
  check "${tool}_tile_clusters_d128" "$tool" --batch 2 --seq-len 512 --heads 4 --kv-heads 4 --head-dim 128 \
    --mask none --ctas 8 --scheduler tile --clusters always
done
# Paged caches: pages of whole blocks (256 keys), and pages of 16 and 3 keys, which the kernel
# loads box by box (a block across pages, keys past a sequence zero-filled).
for tool in memcheck racecheck synccheck; do
  check "${tool}_paged16_d128" "$tool" "${ragged[@]}" --head-dim 128 --scheduler lpt_queued \
    --page-size 16
done
check "memcheck_paged3_d64" memcheck "${ragged[@]}" --head-dim 64 --scheduler tile --page-size 3
check "memcheck_paged256_d256" memcheck "${ragged[@]}" --head-dim 256 --scheduler queued \
  --page-size 256
# Decode tiles: 8 new tokens over ragged caches (one of exactly 8 keys), a group of 4 query heads
# per KV head; split_kv's pieces and combine at d = 128, the tile kernel over pages of 16 keys at
# d = 64.
decode=(--decode --q-lens 300,8,1000,77 --new-tokens 8 --heads 8 --kv-heads 2 --ctas 7)
for tool in memcheck racecheck synccheck; do
  check "${tool}_decode_split_kv_d128" "$tool" "${decode[@]}" --head-dim 128 --scheduler split_kv \
    --split-kv-blocks 1
done
check "memcheck_decode_paged16_d64" memcheck "${decode[@]}" --head-dim 64 --scheduler tile --page-size 16
check "racecheck_lpt_queued_d128" racecheck "${ragged[@]}" --head-dim 128 --scheduler lpt_queued
check "initcheck_tile_d256" initcheck "${ragged[@]}" --head-dim 256 --scheduler tile
[ "$runs" -gt 0 ] || { echo "sanitize_set.sh: PATTERN '$pattern' matches no run" >&2; exit 2; }
echo "clean: $clean of $runs"
[ "$clean" -eq "$runs" ]
