#include "cli/strategies.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cli/console.hpp"
#include "cli/l2_search.hpp"
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
  for (Workload& w : split_strategies(base))
    if (w.validate().empty()) workloads.push_back(std::move(w));
  return workloads;
}

std::vector<Workload> split_strategies(const Workload& base) {
  std::vector<Workload> workloads;
  for (const SchedulerKind split : {SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    Workload w = with_strategy(base, Strategy{split});
    w.block_n = split_block_n(w.head_dim);
    workloads.push_back(std::move(w));
  }
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

std::vector<Workload> strategy_runs(const Workload& base, const sim::CostModel& cost) {
  std::vector<Workload> workloads;
  for (const u32 ctas : candidate_cta_counts(base, cost)) {
    Workload at_c = base;
    at_c.num_ctas = at_c.resident_ctas = ctas;
    const std::vector<std::uint64_t> l2_sizes = l2_bytes_to_search(at_c);
    for (Workload w : compared_strategies(at_c)) {
      if (!walks_l2_sections(w.scheduler)) {
        workloads.push_back(w);
        continue;
      }
      for (const std::uint64_t l2_bytes : l2_sizes) {
        w.l2_bytes = l2_bytes;
        workloads.push_back(w);
      }
    }
  }
  return workloads;
}

std::size_t max_strategy_runs(const Workload& base, const sim::CostModel& cost) {
  std::size_t per_c = 0;
  for (const Workload& w : compared_strategies(base))
    per_c += walks_l2_sections(w.scheduler) ? kMaxL2SizesSearched : 1;
  return per_c * candidate_cta_counts(base, cost).size();
}

std::vector<StrategyResult> compare_strategies(const Workload& base, const sim::CostModel& cost) {
  const std::vector<Workload> workloads = strategy_runs(base, cost);
  std::vector<StrategyResult> results;
  {
    Progress progress("compare", workloads.size());
    for (const Workload& w : workloads) {
      const bool searched_l2 = w.l2_bytes != base.l2_bytes;
      progress.step(searched_l2 ? fmt::format("{} --l2-bytes {}", strategy_name(w), w.l2_bytes)
                                : strategy_name(w));
      Trace trace = sim::replay(w, cost);
      const sim::Metrics metrics = sim::compute_metrics(trace);
      results.push_back(
          StrategyResult{strategy_name(w), w.num_ctas, std::move(trace), metrics, searched_l2});
    }
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const StrategyResult& a, const StrategyResult& b) {
                     return a.metrics.makespan_us < b.metrics.makespan_us;
                   });
  return results;
}

std::string run_name(const StrategyResult& r) {
  if (!r.searched_l2) return r.name;
  return fmt::format("{} --l2-bytes {}", r.name, r.trace.workload.l2_bytes);
}

namespace {

// The fastest of the runs `among` accepts, or a counter scheduler within the tolerance of it;
// ranked.size() when it accepts none.
template <class Accept>
std::size_t recommended_among(const std::vector<StrategyResult>& ranked, Accept among) {
  std::size_t fastest = ranked.size();
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if (among(ranked[i])) {
      fastest = i;
      break;
    }
  if (fastest == ranked.size()) return fastest;
  const double limit = ranked[fastest].metrics.makespan_us * (1.0 + kRecommendTolerance);
  for (std::size_t i = fastest; i < ranked.size() && ranked[i].metrics.makespan_us <= limit; ++i)
    if (among(ranked[i]) && takes_from_counter(ranked[i].trace.workload.scheduler)) return i;
  return fastest;
}

}  // namespace

std::size_t recommended_own_l2_index(const std::vector<StrategyResult>& ranked) {
  return recommended_among(ranked, [](const StrategyResult& r) { return !r.searched_l2; });
}

std::size_t recommended_index(const std::vector<StrategyResult>& ranked) {
  if (ranked.empty()) return 0;
  const std::size_t any = recommended_among(ranked, [](const StrategyResult&) { return true; });
  const std::size_t own = recommended_own_l2_index(ranked);
  if (own == ranked.size()) return any;
  const double own_makespan = ranked[own].metrics.makespan_us;
  if (ranked[any].searched_l2 &&
      ranked[any].metrics.makespan_us < own_makespan * (1.0 - kRecommendTolerance))
    return any;
  return own;
}

bool kernel_runs(const StrategyResult& r) {
  const Workload& w = r.trace.workload;
  return !w.decoding || w.decode_tile_rows() <= w.block_m;
}

const StrategyResult* fastest_kernel_run(const std::vector<StrategyResult>& ranked) {
  for (const StrategyResult& r : ranked)
    if (kernel_runs(r)) return &r;
  return nullptr;
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
