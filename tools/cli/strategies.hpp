// Every scheduling strategy the project implements, and running them all on one workload
// (`tilesched compare`).
#pragma once

#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::cli {

// `base` under each strategy, in the documented order: tile/default, tile/prompt_rotate,
// queued/default, queued/prompt_rotate, transient, transient/flip. Other fields are kept.
std::vector<Workload> all_strategies(const Workload& base);

// Whether a strategy (strategy_name) is one of the seed's own, the six above: the baseline every
// newer strategy is measured against.
bool is_seed_strategy(const std::string& name);

// The seed's default: the static stride in plain order (at C = SMs, its launch).
inline constexpr const char* kSeedDefaultStrategy = "tile/default";

struct StrategyResult {
  std::string name;  // strategy_name() of the workload
  Trace trace;
  sim::Metrics metrics;
};

// Replays every strategy; best (smallest makespan) first, ties in the documented order.
// Shows progress on stderr when it is a terminal.
std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost);

}  // namespace tilesched::cli
