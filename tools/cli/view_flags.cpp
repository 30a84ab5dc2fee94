#include "cli/view_flags.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <utility>

#include "cli/console.hpp"
#include "cli/typed_flags.hpp"
#include "viz/descriptions.hpp"
#include "viz/metrics_table.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/terminal.hpp"

namespace tilesched::cli {

CLI::Option* add_color_by_flag(CLI::App& command, viz::ColorBy& color_by) {
  return add_choice_flag(command, "--color-by", color_by, "Colour tiles by")->type_name("WHAT");
}

void add_view_flags(CLI::App& command, ViewFlags& f) {
  add_output_dir_flag(command, "--out", f.out_dir,
                      "Directory for schedule.html, trace.json, perfetto.json (created if missing)",
                      "out")
      ->capture_default_str();
  add_color_by_flag(command, f.color_by);
  add_choice_flag(command, "--color", f.color, "ANSI colours in the terminal view")
      ->type_name("WHEN");
  add_number_flag(command, "--max-rows", f.max_rows, "CTAs shown in the terminal view")
      ->capture_default_str();
  add_choice_flag(command, "--pictures", f.pictures,
                  "Pictures besides trace.json (none: no schedule.html, perfetto.json or terminal "
                  "view; summary: narrow tiles shaded in schedule.html; full: every tile a box)")
      ->type_name("WHICH");
  command.add_flag("--gzip", f.gzip,
                   "Write trace.json.gz and perfetto.json.gz (gzip; viz, diff, fit and "
                   "ui.perfetto.dev read them)");
}

viz::OutputOptions output_options(const ViewFlags& f) {
  viz::OutputOptions options;
  options.chart.color_by = f.color_by;
  options.pictures = f.pictures;
  options.compression = f.gzip ? sim::Compression::Gzip : sim::Compression::None;
  return options;
}

void show_and_write_trace(const Trace& trace, const sim::Metrics& metrics, const ViewFlags& f,
                          Progress& progress, const std::string& note) {
  progress.clear();
  fmt::print("{}\n{}\n", viz::describe_trace(trace), viz::describe_workload(trace.workload));
  fmt::print("{}\n", note.empty() ? "" : note + "\n");
  fmt::print("{}\n", viz::format_metrics_table(metrics));
  if (f.pictures != viz::Pictures::None) {
    viz::TerminalOptions terminal;
    terminal.color_by = f.color_by;
    terminal.color =
        f.color == ColorWhen::Always || (f.color == ColorWhen::Auto && stdout_is_terminal());
    terminal.max_rows = f.max_rows;
    // Leave room for "CTA 1234 |" on the left and the tile count and busy time on the right.
    const std::size_t columns = terminal_columns();
    terminal.width = columns > 40 ? columns - 36 : 10;
    fmt::print("{}\n", viz::render_terminal(trace, terminal));
  }
  std::fflush(stdout);

  viz::OutputOptions options = output_options(f);
  // One line for the files written side by side: their events done over their events in all.
  std::mutex files_mutex;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> files;  // path -> (done, total)
  options.progress = [&](const std::string& path, std::uint64_t done, std::uint64_t total) {
    const std::lock_guard<std::mutex> lock(files_mutex);
    files[path] = {done, total};
    std::uint64_t all_done = 0, all_total = 0;
    for (const auto& [name, counts] : files) {
      all_done += counts.first;
      all_total += counts.second;
    }
    progress.update("writing the outputs", all_done, all_total);
  };
  const viz::ScheduleOutputs paths =
      viz::write_schedule_outputs(trace, metrics, f.out_dir, options);
  progress.clear();
  fmt::print("wrote {}\n", paths.trace_path);
  if (!paths.perfetto_path.empty())
    fmt::print("      {} (open in ui.perfetto.dev)\n", paths.perfetto_path);
  if (!paths.html_path.empty()) fmt::print("      {}\n", paths.html_path);
}

}  // namespace tilesched::cli
