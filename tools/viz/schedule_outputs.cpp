#include "viz/schedule_outputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <future>
#include <stdexcept>
#include <system_error>

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

void ensure_parent_directory(const std::string& file) {
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) ensure_directory(parent.string());
}

ScheduleOutputs write_schedule_outputs(const Trace& trace, const sim::Metrics& metrics,
                                       const std::string& out_dir, const OutputOptions& options) {
  ensure_directory(out_dir);
  const std::filesystem::path dir(out_dir);
  const auto path_of = [&](const char* name, sim::Compression compression) {
    return sim::compressed_path((dir / name).string(), compression);
  };
  const auto progress_of = [&](const std::string& path) -> sim::ProgressCallback {
    if (!options.progress) return {};
    return [&options, path](std::uint64_t done, std::uint64_t total) {
      options.progress(path, done, total);
    };
  };

  ScheduleOutputs paths;
  paths.trace_path = path_of("trace.json", options.compression);
  // The trace on a second thread while this one writes the pictures: the files are independent,
  // and with --gzip compressing them is most of the time. The future waits for the thread
  // whichever way this function is left.
  std::future<void> trace_written = std::async(std::launch::async, [&] {
    sim::write_trace(paths.trace_path, trace,
                     sim::TraceWriteOptions{options.compression, progress_of(paths.trace_path)});
  });
  if (options.pictures != Pictures::None) {
    const std::string perfetto_path = path_of("perfetto.json", options.compression);
    sim::OutputFile perfetto(perfetto_path, options.compression);
    write_perfetto_json(perfetto, trace, metrics.unit, progress_of(perfetto_path));
    perfetto.commit();
    paths.perfetto_path = perfetto_path;

    const std::string html_path = path_of("schedule.html", sim::Compression::None);
    if (options.progress) options.progress(html_path, 0, 1);
    ChartOptions chart = options.chart;
    chart.detail = options.pictures == Pictures::Full ? ChartDetail::Full : ChartDetail::Summary;
    sim::OutputFile html(html_path);
    write_schedule_html(html, trace, metrics, chart);
    html.commit();
    if (options.progress) options.progress(html_path, 1, 1);
    paths.html_path = html_path;
  }
  trace_written.get();  // rethrows what the trace writer threw
  return paths;
}

std::uint64_t estimated_output_bytes(std::uint64_t tiles, const OutputOptions& options) {
  // Bytes per tile measured on 1,048,576 tiles (a padded causal batch: 195 and 247 plain, 30 and
  // 35 gzip-compressed at level 1), rounded up; the summary page of such a trace took 53 KB.
  const bool gzip = options.compression == sim::Compression::Gzip;
  const std::uint64_t trace_bytes = gzip ? 32 : 200;
  const std::uint64_t perfetto_bytes = gzip ? 40 : 260;
  constexpr std::uint64_t kFullHtmlBytes = 280, kSummaryHtmlBytes = 20u << 20;
  std::uint64_t bytes = tiles * trace_bytes;
  if (options.pictures != Pictures::None) bytes += tiles * perfetto_bytes;
  if (options.pictures == Pictures::Full) bytes += tiles * kFullHtmlBytes;
  if (options.pictures == Pictures::Summary)
    bytes += std::min(tiles * kFullHtmlBytes, kSummaryHtmlBytes);
  return bytes;
}

ScheduleOutputs write_schedule_outputs(const Trace& trace, const std::string& out_dir) {
  return write_schedule_outputs(trace, sim::compute_metrics(trace), out_dir, OutputOptions{});
}

}  // namespace tilesched::viz
