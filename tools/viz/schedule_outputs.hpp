// The files every command that produces a trace writes (sim, viz, and the GPU `run`):
// schedule.html, trace.json and perfetto.json, each streamed and written atomically into one
// directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tilesched/names.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/output_file.hpp"
#include "tilesched/trace.hpp"
#include "viz/svg_html.hpp"

namespace tilesched::viz {

// Which pictures go with the trace.
enum class Pictures {
  None,     // trace.json only: for traces too large to look at, or when only the file matters
  Summary,  // schedule.html summarised (ChartDetail::Summary) and perfetto.json
  Full,     // schedule.html with every tile a box (ChartDetail::Full) and perfetto.json
};

inline constexpr EnumName<Pictures> kPicturesNames[] = {
    {Pictures::None, "none"},
    {Pictures::Summary, "summary"},
    {Pictures::Full, "full"},
};
constexpr const auto& enum_names(Pictures) {
  return kPicturesNames;
}

struct OutputOptions {
  ChartOptions chart;  // its `detail` follows `pictures`
  Pictures pictures = Pictures::Summary;
  // Gzip: trace.json.gz and perfetto.json.gz (the readers and Perfetto's UI open them).
  sim::Compression compression = sim::Compression::None;
  // Told which file is being written and how far along it is, in events. Called from two
  // threads: trace.json is written beside the pictures.
  std::function<void(const std::string& path, std::uint64_t done, std::uint64_t total)> progress;
};

// Paths of the files written; html_path and perfetto_path are empty when not written.
struct ScheduleOutputs {
  std::string html_path, trace_path, perfetto_path;
};

// About how many bytes write_schedule_outputs writes for a trace of `tiles` events, from the
// sizes per tile measured on 1M-tile traces (docs/sim-performance.md); schedule.html in summary
// mode is bounded whatever the trace. An estimate for refusing runs up front, not a promise.
std::uint64_t estimated_output_bytes(std::uint64_t tiles, const OutputOptions& options);

// Creates `out_dir` (and parents) when missing. Throws std::runtime_error naming the directory or
// file that could not be written.
ScheduleOutputs write_schedule_outputs(const Trace& trace, const sim::Metrics& metrics,
                                       const std::string& out_dir, const OutputOptions& options);

// Same, computing the metrics, with the default options.
ScheduleOutputs write_schedule_outputs(const Trace& trace, const std::string& out_dir);

// Creates a directory and its parents; throws std::runtime_error with the reason on failure.
void ensure_directory(const std::string& dir);

// Creates the directory `file` goes into, when it has one and it is missing.
void ensure_parent_directory(const std::string& file);

}  // namespace tilesched::viz
