// `tilesched compare`: every scheduling strategy at every CTA count worth trying on one workload,
// best first, the recommended one marked.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/run_size.hpp"
#include "cli/strategies.hpp"
#include "cli/typed_flags.hpp"
#include "cli/view_flags.hpp"
#include "cli/workload_flags.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/output_file.hpp"
#include "viz/descriptions.hpp"
#include "viz/ranking.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/svg_html.hpp"

namespace tilesched::cli {
namespace {

struct CompareOptions {
  WorkloadFlags workload;
  std::string html_file;
  viz::ColorBy color_by = viz::ColorBy::Head;
  std::uint64_t max_tiles = kDefaultMaxTiles;
};

std::string join_counts(const std::vector<u32>& counts) {
  return fmt::format("{}", fmt::join(counts, ", "));
}

int run_compare(const CompareOptions& o) {
  const Simulation s = resolve_simulation(o.workload);
  const Workload& base = s.workload;
  const sim::CostModel& cost = s.cost;
  // Every strategy's trace at every candidate C is held until the ranking is known.
  check_run_size(base, o.max_tiles,
                 compared_runs(base, cost).size(), nullptr);

  const std::vector<StrategyResult> results = compare_strategies(base, cost);
  const std::size_t chosen = recommended_index(results);
  const StrategyResult* seed = seed_default(results, cost.multiprocessors);

  fmt::print("{}\n{}, C = {}\n{}\n\n", viz::describe_workload(base),
             cost_model_label(o.workload, base), join_counts(candidate_cta_counts(base, cost)),
             s.ctas_note);
  std::vector<viz::ChartSection> sections;
  for (const StrategyResult& r : results)
    sections.push_back({r.name, &r.trace, r.metrics, r.num_ctas});
  viz::RankingMarks marks;
  marks.recommended = chosen;
  if (seed) marks.seed = static_cast<std::size_t>(seed - results.data());
  fmt::print("{}", viz::format_ranking_table(viz::ranking_table(sections, marks)));

  if (!o.html_file.empty()) {
    // Like `sim --out DIR`, the place to write is created if missing.
    viz::ensure_parent_directory(o.html_file);
    sim::OutputFile page(o.html_file);
    viz::write_comparison_html(page, sections, marks, o.color_by);
    page.commit();
    fmt::print("wrote {}\n", o.html_file);
  }
  return kExitOk;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Simulate every strategy (tile, queued; default and prompt_rotate; transient, flip; lpt, "
      "lpt_queued, planned, ragged_queued) at C = SMs and C = the workload's CTAs, rank them and "
      "mark the recommended one");
  add_workload_flags(*cmd, options->workload, WorkloadFlagSet{/*strategy=*/false, true});
  add_output_file_flag(*cmd, "--html", options->html_file,
                       "Write one page with the ranking and a Gantt chart per strategy (folders "
                       "created if missing)",
                       "compare.html");
  add_color_by_flag(*cmd, options->color_by);
  add_max_tiles_flag(*cmd, options->max_tiles);
  cmd->footer(
      "The workload's own scheduler and schedule are ignored: every strategy is run. --ctas sets "
      "the second CTA count (SMs x CTAs per SM).");
  cmd->callback([options, &action] { action = [options] { return run_compare(*options); }; });
}

}  // namespace tilesched::cli
