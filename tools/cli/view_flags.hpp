// How a trace is shown (`sim`, `viz`): output directory, colouring, terminal rows; and the one
// function that prints the metrics and the terminal view and writes the three files.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "cli/console.hpp"
#include "tilesched/names.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"
#include "viz/colors.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::cli {

// When the terminal view uses ANSI colours.
enum class ColorWhen { Auto, Always, Never };

inline constexpr EnumName<ColorWhen> kColorWhenNames[] = {
    {ColorWhen::Auto, "auto"},
    {ColorWhen::Always, "always"},
    {ColorWhen::Never, "never"},
};
constexpr const auto& enum_names(ColorWhen) {
  return kColorWhenNames;
}

struct ViewFlags {
  std::string out_dir = "out";
  viz::ColorBy color_by = viz::ColorBy::Head;
  ColorWhen color = ColorWhen::Auto;
  std::size_t max_rows = 40;
  viz::Pictures pictures = viz::Pictures::Summary;
  bool gzip = false;
};

void add_view_flags(CLI::App& command, ViewFlags& flags);

// --color-by, which `compare` also takes.
CLI::Option* add_color_by_flag(CLI::App& command, viz::ColorBy& color_by);

// What the flags ask write_schedule_outputs for (without progress).
viz::OutputOptions output_options(const ViewFlags& flags);

// Prints the metrics table and the terminal view to stdout, writes schedule.html, trace.json and
// perfetto.json into flags.out_dir (as --pictures and --gzip say), and says where they are.
// Progress goes to `progress` (one step per file). `note` (e.g. where C came from) is printed under
// the workload's description when not empty.
void show_and_write_trace(const Trace& trace, const sim::Metrics& metrics, const ViewFlags& flags,
                          Progress& progress, const std::string& note = "");

}  // namespace tilesched::cli
