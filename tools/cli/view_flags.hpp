// How a trace is shown (`sim`, `viz`): output directory, colouring, terminal rows; and the one
// function that prints the metrics and the terminal view and writes the three files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"
#include "viz/colors.hpp"

namespace tilesched::cli {

struct ViewFlags {
  std::string out_dir = "out";
  std::string color_by = "head";
  std::string color = "auto";
  std::string max_rows = "40";
};

void add_view_flags(CLI::App& command, ViewFlags& flags);

viz::ColorBy resolve_color_by(const std::string& text);  // UsageError when unknown

// Prints the metrics table and the terminal view to stdout, writes schedule.html, trace.json and
// perfetto.json into flags.out_dir, and says where they are.
void show_and_write_trace(const Trace& trace, const sim::Metrics& metrics, const ViewFlags& flags);

// Checks every view flag's value up front, so a typo fails before a long simulation (UsageError).
void validate_view_flags(const ViewFlags& flags);

}  // namespace tilesched::cli
