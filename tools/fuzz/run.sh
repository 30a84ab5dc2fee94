#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (the `fuzz` preset: clang-14, ASan+UBSan) and runs
# each on one core, seeded from the test data; FUZZ_JOBS targets at a time (default: the machine's
# cores), so that a two-core machine fuzzes two targets side by side, each as long as alone.
#
#   tools/fuzz/run.sh [SECONDS] [TARGET...]       each target for SECONDS (default 60)
#   FUZZ_RUNS=10000000 tools/fuzz/run.sh 0 ...     each target for that many executions instead
#   FUZZ_JOBS=1 tools/fuzz/run.sh                  one target after the other
#
# Targets: workload_reader trace_reader cost_reader workload_validation (default: all).
# The corpus grows in build/fuzz/corpus/<target>/ and is reused by the next run. An input that
# crashes, leaks, trips a sanitizer, times out or fails a target's check is saved under
# build/fuzz/artifacts/<target>/; copy it to tests/fuzz/regressions/<target>/ once fixed, and the
# CPU suite replays it from then on. Exit status: 0 when no target found anything, 1 otherwise,
# 2 for bad arguments.
set -euo pipefail

cd "$(dirname "$0")/../.."
all_targets=(workload_reader trace_reader cost_reader workload_validation)
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
if ! [[ $seconds =~ ^[0-9]+$ ]]; then
  echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2
  exit 2
fi
jobs=${FUZZ_JOBS:-$(nproc)}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: FUZZ_JOBS must be a whole number of at least 1, got '$jobs'" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " $t " ]]; then
    echo "fuzz: unknown target '$t' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${FUZZ_BUILD_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

build=build/fuzz
# Seeds: the repository's own JSON files, small enough to mutate quickly.
seeds=$build/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
find tests/data tests/tools/data sim/data -name '*.json' -size -64k -exec cp {} "$seeds"/ \;

# One target: its libFuzzer run, then one summary line in $build/logs/<target>.result.
fuzz_one() {
  local t=$1
  local corpus=$build/corpus/$t artifacts=$build/artifacts/$t log=$build/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local limit=(-max_total_time="$seconds") what="$seconds s"
  if [[ -n ${FUZZ_RUNS:-} ]]; then limit=(-runs="$FUZZ_RUNS") what="$FUZZ_RUNS executions"; fi
  echo "fuzz: $t ($what), log in $log"
  local start result runs
  start=$(date +%s)
  # One process, one core. -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a reader
  # must not need more than 2 GiB for a 16 KiB input.
  if "$build/tests/fuzz/fuzz_$t" "$corpus" "$seeds" -dict=tests/fuzz/json.dict \
      -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "${limit[@]}" >"$log" 2>&1; then
    result=ok
  else
    result="FOUND A PROBLEM (see $log and $artifacts/)"
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  printf '%-22s %12s executions %7s s  %s\n' "$t" "$runs" "$(($(date +%s) - start))" "$result" \
    >"$build/logs/$t.result"
}

mkdir -p "$build/logs"
running=0
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.result"
  fuzz_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
for t in "${targets[@]}"; do
  if [[ -f $build/logs/$t.result ]]; then
    cat "$build/logs/$t.result"
    grep -q ' ok$' "$build/logs/$t.result" || status=1
  else
    echo "$t: no result (the run did not finish)"
    status=1
  fi
done
exit $status
