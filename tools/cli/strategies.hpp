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

struct StrategyResult {
  std::string name;  // strategy_name() of the workload
  Trace trace;
  sim::Metrics metrics;
};

// Replays every strategy; best (smallest makespan) first, ties in the documented order.
// Shows progress on stderr when it is a terminal.
std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost);

}  // namespace tilesched::cli
