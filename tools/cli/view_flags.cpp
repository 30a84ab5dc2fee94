#include "cli/view_flags.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/console.hpp"
#include "cli/typed_flags.hpp"
#include "viz/describe.hpp"
#include "viz/metrics_table.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/terminal.hpp"

namespace tilesched::cli {

CLI::Option* add_color_by_flag(CLI::App& command, viz::ColorBy& color_by) {
  return add_choice_flag(command, "--color-by", color_by, "Colour tiles by")->type_name("WHAT");
}

void add_view_flags(CLI::App& command, ViewFlags& f) {
  command
      .add_option("--out", f.out_dir,
                  "Directory for schedule.html, trace.json, perfetto.json (created if missing)")
      ->type_name("DIR")
      ->capture_default_str();
  add_color_by_flag(command, f.color_by);
  add_choice_flag(command, "--color", f.color, "ANSI colours in the terminal view")
      ->type_name("WHEN");
  add_number_flag(command, "--max-rows", f.max_rows, "CTAs shown in the terminal view")
      ->capture_default_str();
}

void show_and_write_trace(const Trace& trace, const sim::Metrics& metrics, const ViewFlags& f,
                          const std::string& note) {
  viz::TerminalOptions terminal;
  terminal.color_by = f.color_by;
  terminal.color =
      f.color == ColorWhen::Always || (f.color == ColorWhen::Auto && stdout_is_terminal());
  terminal.max_rows = f.max_rows;
  // Leave room for "CTA 1234 |" on the left and the tile count and busy time on the right.
  const std::size_t columns = terminal_columns();
  terminal.width = columns > 40 ? columns - 36 : 10;

  fmt::print("{}\n{}\n", viz::describe_trace(trace), viz::describe_workload(trace.workload));
  fmt::print("{}\n", note.empty() ? "" : note + "\n");
  fmt::print("{}\n", viz::format_metrics_table(metrics));
  fmt::print("{}\n", viz::render_terminal(trace, terminal));
  std::fflush(stdout);

  viz::ChartOptions chart;
  chart.color_by = f.color_by;
  const viz::ScheduleOutputs paths = viz::write_schedule_outputs(trace, metrics, f.out_dir, chart);
  fmt::print("wrote {}\n      {}\n      {} (open in ui.perfetto.dev)\n", paths.html_path,
             paths.trace_path, paths.perfetto_path);
}

}  // namespace tilesched::cli
