#include "cli/view_flags.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/console.hpp"
#include "cli/parse_values.hpp"
#include "viz/describe.hpp"
#include "viz/metrics_table.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/terminal.hpp"

namespace tilesched::cli {

void add_view_flags(CLI::App& command, ViewFlags& f) {
  command
      .add_option("--out", f.out_dir,
                  "Directory for schedule.html, trace.json, perfetto.json (created if missing)")
      ->type_name("DIR")
      ->capture_default_str();
  command.add_option("--color-by", f.color_by, "Colour tiles by: head | batch")
      ->type_name("WHAT")
      ->capture_default_str();
  command
      .add_option("--color", f.color, "ANSI colours in the terminal view: auto | always | never")
      ->type_name("WHEN")
      ->capture_default_str();
  command.add_option("--max-rows", f.max_rows, "CTAs shown in the terminal view")
      ->type_name("N")
      ->capture_default_str();
}

viz::ColorBy resolve_color_by(const std::string& text) {
  return parse_choice("--color-by", text, {"head", "batch"}) == "batch" ? viz::ColorBy::Batch
                                                                        : viz::ColorBy::Head;
}

void validate_view_flags(const ViewFlags& f) {
  resolve_color_by(f.color_by);
  parse_choice("--color", f.color, {"auto", "always", "never"});
  parse_int_at_least("--max-rows", f.max_rows, 0);
}

void show_and_write_trace(const Trace& trace, const sim::Metrics& metrics, const ViewFlags& f) {
  const viz::ColorBy color_by = resolve_color_by(f.color_by);
  viz::TerminalOptions terminal;
  terminal.color_by = color_by;
  terminal.color = f.color == "always" || (f.color == "auto" && stdout_is_terminal());
  terminal.max_rows = static_cast<std::size_t>(parse_int_at_least("--max-rows", f.max_rows, 0));
  // Leave room for "CTA 1234 |" on the left and the tile count and busy time on the right.
  const std::size_t columns = terminal_columns();
  terminal.width = columns > 40 ? columns - 36 : 10;

  fmt::print("{}\n{}\n\n", viz::describe_trace(trace), viz::describe_workload(trace.workload));
  fmt::print("{}\n", viz::format_metrics_table(metrics));
  fmt::print("{}\n", viz::render_terminal(trace, terminal));
  std::fflush(stdout);

  viz::ChartOptions chart;
  chart.color_by = color_by;
  const viz::ScheduleOutputs paths = viz::write_schedule_outputs(trace, metrics, f.out_dir, chart);
  fmt::print("wrote {}\n      {}\n      {} (open in ui.perfetto.dev)\n", paths.html_path,
             paths.trace_path, paths.perfetto_path);
}

}  // namespace tilesched::cli
