// `tilesched sim`: replay one workload with the simulator, show it, write the pictures.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "cli/attention_check.hpp"
#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/errors.hpp"
#include "cli/run_size.hpp"
#include "cli/typed_flags.hpp"
#include "cli/view_flags.hpp"
#include "cli/workload_flags.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::cli {
namespace {

struct SimOptions {
  WorkloadFlags workload;
  ViewFlags view;
  std::uint64_t max_tiles = kDefaultMaxTiles;
  bool attention = false;
  std::uint64_t seed = 1;
};

int run_sim(const SimOptions& o) {
  const Simulation s = resolve_simulation(o.workload);
  const Workload& w = s.workload;
  const viz::OutputOptions outputs = output_options(o.view);
  check_run_size(w, o.max_tiles, 1, &outputs);
  Trace trace;
  {
    Progress progress("sim", 2);
    progress.step("replaying the schedule");
    trace = sim::replay(w, s.cost);
    progress.step("writing the outputs");
    show_and_write_trace(trace, sim::compute_metrics(trace), o.view, progress, s.ctas_note);
  }
  if (!o.attention) return kExitOk;

  const AttentionReport report = check_attention(trace, o.seed);
  fmt::print("\n{}", format_attention_report(report));
  if (w.ragged_mode == RaggedMode::Faithful && !report.coverage_ok())
    fmt::print(
        "  (faithful mode replays upstream's ragged behaviour: these overwrites are what it "
        "would do, so they do not fail the command)\n");
  const bool error_ok = report.o_error <= kAttentionTolerance &&
                        report.lse_error <= kAttentionTolerance;  // false for NaN too
  // Faithful mode exists to show upstream's overwrite, so its failures are the expected output.
  if (w.ragged_mode == RaggedMode::Safe && (!report.coverage_ok() || !error_ok)) {
    fmt::print(stderr, "tilesched sim: attention check failed: {}\n",
               !report.coverage_ok()
                   ? fmt::format("{} outputs never written, {} written more than once", report.gaps,
                                 report.double_writes)
                   : fmt::format("relative error O {:.3e} / LSE {:.3e} above {:.0e}",
                                 report.o_error, report.lse_error, kAttentionTolerance));
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_sim_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SimOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sim",
      "Simulate one workload: metrics, terminal view, schedule.html, trace.json, "
      "perfetto.json");
  add_workload_flags(*cmd, options->workload);
  add_view_flags(*cmd, options->view);
  add_max_tiles_flag(*cmd, options->max_tiles);
  cmd->add_flag("--attention", options->attention,
                "Also compute attention tile by tile and check coverage and error against a naive "
                "reference (exit 1 if it fails in safe mode)");
  add_number_flag(*cmd, "--seed", options->seed, "Seed of the random attention inputs")
      ->capture_default_str();
  cmd->footer(
      "Exit status: 0 success, 1 a file could not be read or written (or the attention check "
      "failed), 2 bad flags.");
  cmd->callback([options, &action] { action = [options] { return run_sim(*options); }; });
}

}  // namespace tilesched::cli
