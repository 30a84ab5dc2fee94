// `tilesched recommend`: the strategy and CTA count to use for one workload, and why.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/run_size.hpp"
#include "cli/strategies.hpp"
#include "cli/workload_flags.hpp"
#include "viz/descriptions.hpp"

namespace tilesched::cli {
namespace {

struct RecommendOptions {
  WorkloadFlags workload;
  std::uint64_t max_tiles = kDefaultMaxTiles;
};

std::string label(const StrategyResult& r) {
  return fmt::format("{} at C = {}", r.name, r.num_ctas);
}

double longest_tile_us(const Trace& t) {
  double longest = 0;
  for (const TraceEvent& e : t.events) longest = std::max(longest, sim::busy_us(e));
  return longest;
}

std::string percent_above(double value, double reference) {
  return fmt::format("{:+.1f} %", 100.0 * (value / reference - 1.0));
}

void print_reasons(const std::vector<StrategyResult>& results, std::size_t chosen) {
  const StrategyResult& best = results.front();
  if (chosen == 0) {
    fmt::print("why: the smallest predicted makespan of the {} runs\n", results.size());
    return;
  }
  fmt::print(
      "why: {} is predicted fastest ({:.1f} us), but this one is within {:.0f} % of it and takes "
      "its tiles from a counter, so it absorbs the error of the predicted tile times while it "
      "runs; a static plan cannot\n",
      label(best), best.metrics.makespan_us, 100.0 * kRecommendTolerance);
}

int run_recommend(const RecommendOptions& o) {
  const Workload base = resolve_workload(o.workload);
  const sim::CostModel cost = resolve_cost_model(o.workload, base);
  // Like compare: every strategy's trace at every candidate C is held until the ranking is known.
  check_run_size(base, o.max_tiles,
                 compared_runs(base, cost).size(), nullptr);
  const std::vector<StrategyResult> results = compare_strategies(base, cost);
  const std::size_t chosen = recommended_index(results);
  const StrategyResult& r = results.at(chosen);
  const sim::Metrics& m = r.metrics;

  fmt::print("{}\n{}\n\n", viz::describe_workload(base), cost_model_label(o.workload, base));
  fmt::print("recommended: {}\n", label(r));
  fmt::print("  predicted makespan  {:.1f} us\n", m.makespan_us);
  fmt::print("  imbalance           {:.3f} (busiest {} / mean)\n", m.imbalance,
             m.unit == sim::ExecutionUnit::Slot ? "resident slot" : "CTA");
  const double spread = m.total_busy_us / double(std::max<std::size_t>(m.concurrent_ctas, 1));
  fmt::print(
      "  ideal bound         {:.1f} us = max(total tile time {:.1f} us / {} slots = {:.1f} us, "
      "longest tile {:.1f} us)\n",
      m.bound_us, m.total_busy_us, m.concurrent_ctas, spread, longest_tile_us(r.trace));
  fmt::print("  distance to bound   {}\n", percent_above(m.makespan_us, m.bound_us));
  if (const StrategyResult* seed = seed_default(results, cost.multiprocessors))
    fmt::print("  seed's DEFAULT      {}: {:.1f} us, {:.2f}x as long\n", label(*seed),
               seed->metrics.makespan_us, seed->metrics.makespan_us / m.makespan_us);
  const std::size_t next = chosen == 0 ? 1 : 0;
  if (next < results.size())
    fmt::print("  {:<18}  {}: {:.1f} us ({})\n", chosen == 0 ? "runner-up" : "fastest",
               label(results[next]), results[next].metrics.makespan_us,
               percent_above(results[next].metrics.makespan_us, m.makespan_us));
  print_reasons(results, chosen);
  return kExitOk;
}

}  // namespace

void add_recommend_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RecommendOptions>();
  CLI::App* cmd = app.add_subcommand(
      "recommend",
      "The strategy and CTA count to use for a workload (the one compare marks), and why: its "
      "predicted makespan, imbalance and distance to the ideal bound");
  add_workload_flags(*cmd, options->workload, WorkloadFlagSet{/*strategy=*/false, true});
  add_max_tiles_flag(*cmd, options->max_tiles);
  cmd->footer(
      "The ideal bound is what no schedule of these tiles can beat: the total tile time spread "
      "evenly over the CTAs that run at once, or the longest tile if that is longer.");
  cmd->callback([options, &action] { action = [options] { return run_recommend(*options); }; });
}

}  // namespace tilesched::cli
