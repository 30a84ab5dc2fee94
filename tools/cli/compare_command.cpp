// `tilesched compare`: every scheduling strategy on one workload, best first.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/strategies.hpp"
#include "cli/view_flags.hpp"
#include "cli/workload_flags.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/metrics.hpp"
#include "viz/describe.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/svg_html.hpp"

namespace tilesched::cli {
namespace {

struct CompareOptions {
  WorkloadFlags workload;
  std::string html_file;
  viz::ColorBy color_by = viz::ColorBy::Head;
};

int run_compare(const CompareOptions& o) {
  const Simulation s = resolve_simulation(o.workload);
  const Workload& base = s.workload;
  const sim::CostModel& cost = s.cost;

  const std::vector<StrategyResult> results = compare_strategies(base, cost);

  fmt::print("{}\ncost model: {}, C = {}\n{}\n\n", viz::describe_workload(base), cost.device,
             base.num_ctas, s.ctas_note);
  fmt::print("  {:<24} {:>12} {:>12} {:>10} {:>10}\n", "strategy", "makespan us", "efficiency %",
             "imbalance", "max tiles");
  for (const StrategyResult& r : results)
    fmt::print("  {:<24} {:>12.1f} {:>12.1f} {:>10.3f} {:>10g}\n", r.name, r.metrics.makespan_us,
               100.0 * r.metrics.efficiency, r.metrics.imbalance, r.metrics.tiles_max);
  fmt::print(
      "\nefficiency = lower bound / makespan; imbalance = max busy / mean busy and max tiles are "
      "per "
      "CTA, per resident slot for transient (its CTAs run one tile each).\n");

  if (!o.html_file.empty()) {
    std::vector<viz::ChartSection> sections;
    for (const StrategyResult& r : results) sections.push_back({r.name, &r.trace, r.metrics});
    sim::write_file_atomically(o.html_file, viz::render_comparison_html(sections, o.color_by));
    fmt::print("wrote {}\n", o.html_file);
  }
  return kExitOk;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Simulate every strategy (tile, queued, transient; default and prompt_rotate; "
      "flip) on one workload and rank them");
  add_workload_flags(*cmd, options->workload, WorkloadFlagSet{/*strategy=*/false, true});
  cmd->add_option("--html", options->html_file, "Write one page with a Gantt chart per strategy")
      ->type_name("FILE");
  add_color_by_flag(*cmd, options->color_by);
  cmd->footer("The workload's own scheduler and schedule are ignored: every strategy is run.");
  cmd->callback([options, &action] { action = [options] { return run_compare(*options); }; });
}

}  // namespace tilesched::cli
