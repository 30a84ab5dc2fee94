// `tilesched diff`: compare two traces.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/trace_diff.hpp"
#include "tilesched/sim/trace_io.hpp"

namespace tilesched::cli {
namespace {

struct DiffOptions {
  std::string a_file, b_file;
};

int run_diff(const DiffOptions& o) {
  const Trace a = sim::read_trace(o.a_file);
  const Trace b = sim::read_trace(o.b_file);
  const TraceDiff d = diff_traces(a, b);
  fmt::print("{}", format_trace_diff(d, a, b));
  if (!d.same_problem()) return kExitDifferentProblems;
  return d.schedules_identical() ? kExitOk : kExitDiffers;
}

}  // namespace

void add_diff_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two traces: workload, schedule order, tile sets, per-CTA timing");
  cmd->add_option("a", options->a_file, "First trace JSON file (A)")
      ->type_name("A.json")
      ->required();
  cmd->add_option("b", options->b_file, "Second trace JSON file (B)")
      ->type_name("B.json")
      ->required();
  cmd->footer(
      "Exit status: 0 the schedules are identical (every CTA processes the same tiles in the same "
      "order; times may differ), 3 they differ, 4 the traces are of different attention problems "
      "(sequence lengths, heads, head_dim, mask or tile sizes differ; strategies may differ "
      "under 0 and 3), 1 a trace could not be read, 2 bad flags.");
  cmd->callback([options, &action] { action = [options] { return run_diff(*options); }; });
}

}  // namespace tilesched::cli
