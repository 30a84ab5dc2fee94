#include "cli/strategies.hpp"

#include <algorithm>
#include <iterator>

#include "cli/console.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::cli {

std::vector<Workload> all_strategies(const Workload& base) {
  struct Strategy {
    SchedulerKind scheduler;
    Schedule schedule;
    bool flip;
  };
  static constexpr Strategy kStrategies[] = {
      {SchedulerKind::Tile, Schedule::Default, false},
      {SchedulerKind::Tile, Schedule::PromptRotate, false},
      {SchedulerKind::Queued, Schedule::Default, false},
      {SchedulerKind::Queued, Schedule::PromptRotate, false},
      {SchedulerKind::Transient, Schedule::Default, false},
      {SchedulerKind::Transient, Schedule::Default, true},
  };
  std::vector<Workload> workloads;
  for (const Strategy& s : kStrategies) {
    Workload w = base;
    w.scheduler = s.scheduler;
    w.schedule = s.schedule;
    w.flip_prompt_idx = s.flip;
    workloads.push_back(w);
  }
  return workloads;
}

bool is_seed_strategy(const std::string& name) {
  static const char* const kSeed[] = {"tile/default",   "tile/prompt_rotate",
                                      "queued/default", "queued/prompt_rotate",
                                      "transient",      "transient/flip"};
  return std::find(std::begin(kSeed), std::end(kSeed), name) != std::end(kSeed);
}

std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost) {
  const std::vector<Workload> workloads = all_strategies(base);
  std::vector<StrategyResult> results;
  {
    Progress progress("compare", workloads.size());
    for (const Workload& w : workloads) {
      progress.step(strategy_name(w));
      Trace trace = sim::replay(w, cost);
      const sim::Metrics metrics = sim::compute_metrics(trace);
      results.push_back(StrategyResult{strategy_name(w), std::move(trace), metrics});
    }
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const StrategyResult& a, const StrategyResult& b) {
                     return a.metrics.makespan_us < b.metrics.makespan_us;
                   });
  return results;
}

}  // namespace tilesched::cli
