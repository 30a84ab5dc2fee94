#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (the `fuzz` preset: clang-14, ASan+UBSan) and runs
# each in turn on one core, seeded from the test data.
#
#   tools/fuzz/run.sh [SECONDS] [TARGET...]       each target for SECONDS (default 60)
#   FUZZ_RUNS=10000000 tools/fuzz/run.sh 0 ...     each target for that many executions instead
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

status=0
summary=""
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t
  log=$build/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  limit=(-max_total_time="$seconds") what="$seconds s"
  if [[ -n ${FUZZ_RUNS:-} ]]; then limit=(-runs="$FUZZ_RUNS") what="$FUZZ_RUNS executions"; fi
  echo "fuzz: $t ($what), log in $log"
  start=$(date +%s)
  # One process, one core. -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a reader
  # must not need more than 2 GiB for a 16 KiB input.
  if "$build/tests/fuzz/fuzz_$t" "$corpus" "$seeds" -dict=tests/fuzz/json.dict \
      -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "${limit[@]}" >"$log" 2>&1; then
    result=ok
  else
    result="FOUND A PROBLEM (see $log and $artifacts/)"
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  summary+=$(printf '%-22s %12s executions %7s s  %s' "$t" "$runs" "$(($(date +%s) - start))" \
    "$result")$'\n'
done
printf '%s' "$summary"
exit $status
