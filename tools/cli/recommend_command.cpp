// `tilesched recommend`: the strategy and CTA count to use for one workload, and why.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/l2_search.hpp"
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
  const std::string at = fmt::format("{} at C = {}", r.name, r.num_ctas);
  return r.searched_l2 ? fmt::format("{}, {}", at, describe_l2_bytes(r.trace.workload.l2_bytes))
                       : at;
}

// The workload flags that replay this run of the workload (`sim`, `run`).
std::string strategy_flags(const StrategyResult& r) {
  const Workload& w = r.trace.workload;
  std::string flags = fmt::format("--scheduler {}", to_string(w.scheduler));
  if (w.schedule != Schedule::Default)
    flags += fmt::format(" --schedule {}", to_string(w.schedule));
  if (w.flip_prompt_idx) flags += " --flip";
  flags += fmt::format(" --ctas {}", r.num_ctas);
  if (splits_tiles(w.scheduler)) flags += fmt::format(" --bn {}", w.block_n);
  if (r.searched_l2) flags += fmt::format(" --l2-bytes {}", w.l2_bytes);
  return flags;
}

double longest_tile_us(const Trace& t) {
  double longest = 0;
  for (const TraceEvent& e : t.events) longest = std::max(longest, sim::busy_us(e));
  return longest;
}

std::string percent_above(double value, double reference) {
  return fmt::format("{:+.1f} %", 100.0 * (value / reference - 1.0));
}

// Why the L2 search's run was chosen over the best at the workload's own sections (`own`): what
// those sections hold against their budget.
void print_l2_reason(const StrategyResult& chosen, const StrategyResult& own,
                     std::uint64_t own_l2_bytes) {
  Workload sectioned = chosen.trace.workload;
  sectioned.l2_bytes = own_l2_bytes;
  const L2SectionSizes s = l2_section_sizes(sectioned);
  const std::string what =
      s.over_budget > 0
          ? fmt::format(
                "their K and V exceed the {} budget (half of l2_bytes {}) in {} of {} sections at "
                "C "
                "= {} (the largest {}, held to at least {} rounds of C tiles by l2_min_rounds), so "
                "they keep little in L2 and only restrict the longest-first order",
                format_mib(s.budget_bytes), format_mib(own_l2_bytes), s.over_budget, s.sections,
                chosen.num_ctas, format_mib(s.largest_bytes), sectioned.l2_min_rounds)
          : fmt::format(
                "their K and V fit the {} budget in all {} sections at C = {} (the largest {}), so "
                "they may save DRAM traffic that the replay, which has no L2, cannot see: measure "
                "both on the GPU before relying on this",
                format_mib(s.budget_bytes), s.sections, chosen.num_ctas,
                format_mib(s.largest_bytes));
  fmt::print(
      "why: {} with {} (--l2-bytes {}) is predicted {:.1f} % faster than the best with the "
      "workload's own L2 sections ({}, {:.1f} us): {}\n",
      chosen.name, describe_l2_bytes(chosen.trace.workload.l2_bytes),
      chosen.trace.workload.l2_bytes,
      100.0 * (1.0 - chosen.metrics.makespan_us / own.metrics.makespan_us), label(own),
      own.metrics.makespan_us, what);
}

void print_reasons(const std::vector<StrategyResult>& results, std::size_t chosen,
                   std::uint64_t own_l2_bytes) {
  const StrategyResult& best = results.front();
  const StrategyResult& r = results[chosen];
  if (r.searched_l2) print_l2_reason(r, results[recommended_own_l2_index(results)], own_l2_bytes);
  if (chosen == 0) {
    if (!r.searched_l2)
      fmt::print("why: the smallest predicted makespan of the {} runs\n", results.size());
  } else if (!best.searched_l2 || r.searched_l2) {
    fmt::print(
        "{}: {} is predicted fastest ({:.1f} us), but this one is within {:.0f} % of it and "
        "takes its tiles from a counter, so it absorbs the error of the predicted tile times while "
        "it runs; a static plan cannot\n",
        r.searched_l2 ? "and" : "why", label(best), best.metrics.makespan_us,
        100.0 * kRecommendTolerance);
  } else {
    fmt::print(
        "why: {} is predicted {:.2f} % faster, within {:.0f} % (the cost model's error): the "
        "replay has no L2, so the workload's own L2 sections are kept for what they save\n",
        label(best), 100.0 * (1.0 - best.metrics.makespan_us / r.metrics.makespan_us),
        100.0 * kRecommendTolerance);
  }
}

int run_recommend(const RecommendOptions& o) {
  const Workload base = resolve_workload(o.workload);
  const sim::CostModel cost = resolve_cost_model(o.workload, base);
  // Like compare: every strategy's trace at every candidate C is held until the ranking is known.
  check_run_size(base, o.max_tiles, max_strategy_runs(base, cost), nullptr);
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
  fmt::print("  flags               {}\n", strategy_flags(r));
  if (!kernel_runs(r)) {
    // Say so where the recommendation is one the kernel refuses (`tilesched run` would).
    const StrategyResult* k = fastest_kernel_run(results);
    if (k == nullptr)
      fmt::print(
          "  GPU kernel          simulated only: the kernel decodes at most {} query heads per KV "
          "head at BM {}\n",
          r.trace.workload.block_m / kMaxDecodeTokens, r.trace.workload.block_m);
    else
      fmt::print("  GPU kernel          {} is simulated only (the kernel does not run it yet); "
                 "the fastest it runs: {}: {:.1f} us ({}), {}\n",
                 to_string(r.trace.workload.scheduler), label(*k), k->metrics.makespan_us,
                 percent_above(k->metrics.makespan_us, m.makespan_us), strategy_flags(*k));
  }
  print_reasons(results, chosen, base.l2_bytes);
  return kExitOk;
}

}  // namespace

void add_recommend_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RecommendOptions>();
  CLI::App* cmd = app.add_subcommand(
      "recommend",
      "The strategy, CTA count and L2 section size to use for a workload (the one compare marks), "
      "the flags that run it, and why: its predicted makespan, imbalance and distance to the ideal "
      "bound");
  add_workload_flags(*cmd, options->workload, WorkloadFlagSet{/*strategy=*/false, true});
  add_max_tiles_flag(*cmd, options->max_tiles);
  cmd->footer(
      "The ideal bound is what no schedule of these tiles can beat: the total tile time spread "
      "evenly over the CTAs that run at once, or the longest tile if that is longer. lpt, "
      "lpt_queued and planned also run with larger L2 sections and none (--l2-bytes 0); one of "
      "those is chosen only when predicted more than 1 % faster, as the replay has no L2.");
  cmd->callback([options, &action] { action = [options] { return run_recommend(*options); }; });
}

}  // namespace tilesched::cli
