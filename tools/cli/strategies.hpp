// Every scheduling strategy the project implements, run on one workload at the CTA counts worth
// comparing (`tilesched compare`), and the one to recommend (`tilesched recommend`).
#pragma once

#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::cli {

// One scheduling strategy: a scheduler kind with the schedule and flip that change its walk.
struct Strategy {
  SchedulerKind scheduler = SchedulerKind::Tile;
  Schedule schedule = Schedule::Default;
  bool flip = false;
  bool seed = false;  // one of the seed's own six: the baseline every newer strategy is measured
                      // against
};

// Every strategy the project implements, in the documented order: tile/default,
// tile/prompt_rotate, queued/default, queued/prompt_rotate, transient, transient/flip (the seed's
// six), lpt, lpt_queued, planned, ragged_queued/default. The one list: `compare`, `recommend`,
// `suite-run` and the GPU tests all walk it.
const std::vector<Strategy>& strategies();

// `w` under strategy `s`: its scheduler, schedule and flip set, every other field kept.
Workload with_strategy(Workload w, const Strategy& s);

// `base` under each split schedule (split_kv, then stream_k), in the GPU kernel's K/V block
// (split_block_n), so that they run on the GPU as replayed; whether `base` allows them is left to
// Workload::validate.
std::vector<Workload> split_strategies(const Workload& base);

// `base` under each of strategies(), in its order.
std::vector<Workload> all_strategies(const Workload& base);

// The split schedules are worth ranking for workloads of fewer tiles than this many rounds of
// num_ctas: those leave SMs idle (decoding, a short chunk over a long cache), while more tiles
// already fill every SM and their pieces would multiply the replay's events (split_kv's up to
// KV blocks / split_kv_blocks per tile).
inline constexpr u32 kSplitCandidateRounds = 4;

// What `compare` and `recommend` rank: all_strategies, then the split schedules (split_kv,
// stream_k) where the workload allows them (Workload::validate) and has fewer than
// kSplitCandidateRounds rounds of tiles. `suite-run` keeps to all_strategies, and the GPU tests
// draw the split schedules apart (they need the kernel's BN).
std::vector<Workload> compared_strategies(const Workload& base);

// Whether a strategy (strategy_name) is one of the seed's own.
bool is_seed_strategy(const std::string& name);

// The seed's default: the static stride in plain order (at C = SMs, its launch).
inline constexpr const char* kSeedDefaultStrategy = "tile/default";

// The CTA counts worth comparing, ascending and distinct: C = SMs (one CTA per SM), C = SMs x
// CTAs per SM (every resident slot), both from the cost profile, and the workload's num_ctas.
std::vector<u32> candidate_cta_counts(const Workload& base, const sim::CostModel& cost);

struct StrategyResult {
  std::string name;  // strategy_name() of the workload
  u32 num_ctas = 0;  // C (for transient: the resident slots)
  Trace trace;
  sim::Metrics metrics;
  // The trace's l2_bytes is one the L2 search tried (l2_search.hpp), not the workload's own.
  bool searched_l2 = false;
};

// The workloads compare_strategies replays: compared_strategies at every candidate CTA count (both
// num_ctas and resident_ctas set to it), and each strategy that walks L2 sections also at every
// other size of l2_bytes_to_search (l2_search.hpp). In the documented order, smaller C first.
std::vector<Workload> strategy_runs(const Workload& base, const sim::CostModel& cost);

// The most runs strategy_runs gives `base`, known without building its L2 sections: for
// check_run_size, before any work.
std::size_t max_strategy_runs(const Workload& base, const sim::CostModel& cost);

// Replays strategy_runs; best (smallest makespan) first, ties in the documented order, smaller C
// first. Shows progress on stderr when it is a terminal.
std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost);

// How a run is named in tables: its strategy, and the L2 size where the search chose it
// ("lpt_queued --l2-bytes 0").
std::string run_name(const StrategyResult& r);

// Predictions closer than this (relative makespan) are a tie to the recommendation: the cost
// model's own error on a makespan is about this large (docs/sim-cost-model.md).
inline constexpr double kRecommendTolerance = 0.01;

// The index in `ranked` (compare_strategies' order) of the strategy to recommend: the fastest
// predicted, except that a counter scheduler within kRecommendTolerance of it is preferred, as
// it absorbs the error of the predicted tile times while it runs; a static plan cannot. A run of
// an L2 size the search tried is recommended only when it is predicted faster than the
// recommendation among the workload's own sizes by more than kRecommendTolerance: the replay has
// no L2, so it cannot see what the workload's own sections save (l2_search.hpp).
std::size_t recommended_index(const std::vector<StrategyResult>& ranked);

// The recommendation among the runs at the workload's own l2_bytes (searched_l2 false).
std::size_t recommended_own_l2_index(const std::vector<StrategyResult>& ranked);

// Whether the GPU kernel runs a ranked run: all but decode workloads whose tile (16 new tokens
// of each query head of a KV head's group) exceeds BM rows (gpu::check_kernel_support says the
// same).
bool kernel_runs(const StrategyResult& r);

// The fastest run in `ranked` that the GPU kernel runs, or null when none does (a decode
// workload of too many query heads per KV head).
const StrategyResult* fastest_kernel_run(const std::vector<StrategyResult>& ranked);

// The seed's DEFAULT (tile/default) at C = sms (one CTA per SM), or null when `ranked` lacks it.
const StrategyResult* seed_default(const std::vector<StrategyResult>& ranked, u32 sms);

}  // namespace tilesched::cli
