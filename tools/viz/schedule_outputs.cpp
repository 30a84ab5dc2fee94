#include "viz/schedule_outputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "tilesched/sim/io.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "viz/perfetto.hpp"

namespace tilesched::viz {

void ensure_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  if (fs::exists(dir, ec))
    throw std::runtime_error(
        fmt::format("cannot use '{}' as output directory: it is not a directory", dir));
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create output directory '{}': {}", dir, ec.message()));
}

ScheduleOutputs write_schedule_outputs(const Trace& trace, const sim::Metrics& metrics,
                                       const std::string& out_dir, const ChartOptions& options) {
  ensure_directory(out_dir);
  const std::filesystem::path dir(out_dir);
  ScheduleOutputs paths{(dir / "schedule.html").string(), (dir / "trace.json").string(),
                        (dir / "perfetto.json").string()};
  sim::write_trace(paths.trace_path, trace);
  sim::write_file_atomically(paths.perfetto_path, render_perfetto(trace));
  sim::write_file_atomically(paths.html_path, render_schedule_html(trace, metrics, options));
  return paths;
}

ScheduleOutputs write_schedule_outputs(const Trace& trace, const std::string& out_dir) {
  return write_schedule_outputs(trace, sim::compute_metrics(trace), out_dir);
}

}  // namespace tilesched::viz
