// The three files every command that produces a trace writes (sim, viz, and the GPU `run`):
// schedule.html, trace.json and perfetto.json, each written atomically into one directory.
#pragma once

#include <string>
#include <vector>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"
#include "viz/svg_html.hpp"

namespace tilesched::viz {

struct ScheduleOutputs {
  std::string html_path, trace_path, perfetto_path;
};

// Creates `out_dir` (and parents) when missing. Throws std::runtime_error naming the directory or
// file that could not be written.
ScheduleOutputs write_schedule_outputs(const Trace& trace, const sim::Metrics& metrics,
                                       const std::string& out_dir,
                                       const ChartOptions& options = {});

// Same, computing the metrics.
ScheduleOutputs write_schedule_outputs(const Trace& trace, const std::string& out_dir);

// Creates a directory and its parents; throws std::runtime_error with the reason on failure.
void ensure_directory(const std::string& dir);

}  // namespace tilesched::viz
