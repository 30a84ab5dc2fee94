// `tilesched viz`: draw any trace file (from the simulator or the GPU).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/errors.hpp"
#include "cli/trace_diff.hpp"
#include "cli/view_flags.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/trace_io.hpp"

namespace tilesched::cli {
namespace {

struct VizOptions {
  std::string trace_file;
  ViewFlags view;
};

int run_viz(const VizOptions& o) {
  Progress progress("viz", 2);
  progress.step(fmt::format("reading {}", o.trace_file));
  const Trace trace = sim::read_trace(o.trace_file);
  // The reader accepts any trace its workload can hold; what no run of it would do is drawn all
  // the same, with a warning, as diff warns.
  const std::vector<std::string> warnings = trace_warnings(trace);
  if (!warnings.empty()) progress.clear();
  for (const std::string& warning : warnings)
    fmt::print(stderr, "tilesched viz: warning: '{}': {}\n", o.trace_file, warning);
  progress.step("writing the outputs");
  show_and_write_trace(trace, sim::compute_metrics(trace), o.view, progress);
  return kExitOk;
}

}  // namespace

void add_viz_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<VizOptions>();
  CLI::App* cmd = app.add_subcommand(
      "viz", "Draw a trace file: metrics, terminal view, schedule.html, trace.json, perfetto.json");
  cmd->add_option("trace", options->trace_file,
                  "Trace JSON file, plain or gzip-compressed (from `sim`, `run` or a test)")
      ->type_name("TRACE.json")
      ->required();
  add_view_flags(*cmd, options->view);
  cmd->footer(
      "Exit status: 0 success, 1 the trace could not be read or the outputs written, 2 bad "
      "flags.");
  cmd->callback([options, &action] { action = [options] { return run_viz(*options); }; });
}

}  // namespace tilesched::cli
