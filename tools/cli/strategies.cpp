#include "cli/strategies.hpp"

#include <algorithm>

#include "cli/console.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::cli {

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> kStrategies = {
      {SchedulerKind::Tile, Schedule::Default, false, true},
      {SchedulerKind::Tile, Schedule::PromptRotate, false, true},
      {SchedulerKind::Queued, Schedule::Default, false, true},
      {SchedulerKind::Queued, Schedule::PromptRotate, false, true},
      {SchedulerKind::Transient, Schedule::Default, false, true},
      {SchedulerKind::Transient, Schedule::Default, true, true},
      {SchedulerKind::Lpt, Schedule::Default, false, false},
      {SchedulerKind::LptQueued, Schedule::Default, false, false},
      {SchedulerKind::Planned, Schedule::Default, false, false},
      {SchedulerKind::RaggedQueued, Schedule::Default, false, false},
  };
  return kStrategies;
}

Workload with_strategy(Workload w, const Strategy& s) {
  w.scheduler = s.scheduler;
  w.schedule = s.schedule;
  w.flip_prompt_idx = s.flip;
  return w;
}

std::vector<Workload> all_strategies(const Workload& base) {
  std::vector<Workload> workloads;
  for (const Strategy& s : strategies()) workloads.push_back(with_strategy(base, s));
  return workloads;
}

std::vector<Workload> compared_strategies(const Workload& base) {
  std::vector<Workload> workloads = all_strategies(base);
  if (base.valid_tile_count() >= std::uint64_t(kSplitCandidateRounds) * base.num_ctas)
    return workloads;
  for (const SchedulerKind split : {SchedulerKind::SplitKv, SchedulerKind::StreamK})
    if (Workload w = with_strategy(base, Strategy{split}); w.validate().empty())
      workloads.push_back(std::move(w));
  return workloads;
}

bool is_seed_strategy(const std::string& name) {
  return std::any_of(strategies().begin(), strategies().end(), [&](const Strategy& s) {
    return s.seed && strategy_name(with_strategy(Workload{}, s)) == name;
  });
}

std::vector<u32> candidate_cta_counts(const Workload& base, const sim::CostModel& cost) {
  std::vector<u32> counts = {cost.multiprocessors, cost.resident_ctas(base.head_dim),
                             base.num_ctas};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::vector<Workload> compared_runs(const Workload& base, const sim::CostModel& cost) {
  std::vector<Workload> workloads;
  for (const u32 ctas : candidate_cta_counts(base, cost)) {
    Workload at_ctas = base;
    at_ctas.num_ctas = at_ctas.resident_ctas = ctas;
    for (Workload& w : compared_strategies(at_ctas)) workloads.push_back(std::move(w));
  }
  return workloads;
}

std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost) {
  const std::vector<Workload> workloads = compared_runs(base, cost);
  std::vector<StrategyResult> results;
  {
    Progress progress("compare", workloads.size());
    for (const Workload& w : workloads) {
      progress.step(strategy_name(w));
      Trace trace = sim::replay(w, cost);
      const sim::Metrics metrics = sim::compute_metrics(trace);
      results.push_back(StrategyResult{strategy_name(w), w.num_ctas, std::move(trace), metrics});
    }
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const StrategyResult& a, const StrategyResult& b) {
                     return a.metrics.makespan_us < b.metrics.makespan_us;
                   });
  return results;
}

std::size_t recommended_index(const std::vector<StrategyResult>& ranked) {
  if (ranked.empty()) return 0;
  const double limit = ranked.front().metrics.makespan_us * (1.0 + kRecommendTolerance);
  for (std::size_t i = 0; i < ranked.size() && ranked[i].metrics.makespan_us <= limit; ++i)
    if (takes_from_counter(ranked[i].trace.workload.scheduler)) return i;
  return 0;
}

const StrategyResult* seed_default(const std::vector<StrategyResult>& ranked, u32 sms) {
  for (const StrategyResult& r : ranked) {
    const Workload& w = r.trace.workload;
    if (w.scheduler == SchedulerKind::Tile && w.schedule == Schedule::Default && r.num_ctas == sms)
      return &r;
  }
  return nullptr;
}

}  // namespace tilesched::cli
