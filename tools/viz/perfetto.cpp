#include "viz/perfetto.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace tilesched::viz {

namespace {

constexpr int kProcessId = 1;  // one process holds every track

// Perfetto converts the microseconds to int64 nanoseconds: beyond about 9.2e12 us they overflow
// (and 1e308 or an infinity would be written as null by a JSON library). Clamped, a hand-edited
// or corrupted trace still opens.
constexpr double kLargestUs = 9e12;

double perfetto_us(double us) {
  if (std::isnan(us)) return 0;
  return std::clamp(us, -kLargestUs, kLargestUs);
}

// A JSON string literal; device names come from a GPU driver or a hand-edited file, so bad UTF-8
// is replaced rather than failing after the whole run.
std::string json_string(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The track ids present, ascending.
std::vector<std::int64_t> track_ids(const Trace& trace, sim::ExecutionUnit unit) {
  std::vector<std::int64_t> ids;
  for (const TraceEvent& e : trace.events) {
    const std::int64_t id = unit == sim::ExecutionUnit::Slot ? e.sm_id : std::int64_t(e.cta);
    if (ids.empty() || ids.back() != id) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

void write_perfetto_json(sim::TextSink& out, const Trace& trace, sim::ExecutionUnit unit,
                         const sim::ProgressCallback& progress) {
  const std::string strategy = strategy_name(trace.workload);
  const bool per_slot = unit == sim::ExecutionUnit::Slot;
  // A simulated transient trace numbers the replay's resident slots; a measured one, real SMs.
  const char* track_name = !per_slot ? "CTA" : trace.source == "gpu" ? "SM" : "slot";
  sim::print_to(
      out,
      "{{\"traceEvents\":[\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},"
      "\"tid\":0,\"args\":{{\"name\":{}}}}}",
      kProcessId,
      json_string(fmt::format("tilesched {} ({} {})", strategy, trace.source, trace.device)));
  for (const std::int64_t id : track_ids(trace, unit)) {
    // Without a sort index the UI orders tracks by name, putting CTA 10 before CTA 2.
    sim::print_to(out,
                  ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":{1},"
                  "\"args\":{{\"name\":\"{2} {1}\"}}}}"
                  ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{0},\"tid\":{1},"
                  "\"args\":{{\"sort_index\":{1}}}}}",
                  kProcessId, id, track_name);
  }
  constexpr std::size_t kProgressEvery = std::size_t(1) << 16;
  const std::size_t n = trace.events.size();
  fmt::memory_buffer line;
  for (std::size_t i = 0; i < n; ++i) {
    const TraceEvent& e = trace.events[i];
    const double start = perfetto_us(e.start_us);
    const double duration = std::clamp(perfetto_us(e.end_us) - start, 0.0, kLargestUs);
    line.clear();
    fmt::format_to(fmt::appender(line),
                   FMT_COMPILE(",\n{{\"ph\":\"X\",\"name\":\"p{} h{} @{}\",\"cat\":\"tile\","
                               "\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"cta\":{},"
                               "\"step\":{},\"linear_idx\":{},\"prompt_idx\":{},\"head_idx\":{},"
                               "\"prompt_offset\":{},\"query_rows\":{},\"kv_blocks\":{}"),
                   e.prompt_idx, e.head_idx, e.prompt_offset, kProcessId,
                   per_slot ? std::int64_t(e.sm_id) : std::int64_t(e.cta), start, duration, e.cta,
                   e.step, e.linear_idx, e.prompt_idx, e.head_idx, e.prompt_offset, e.query_rows,
                   e.kv_blocks);
    if (e.sm_id >= 0) fmt::format_to(fmt::appender(line), FMT_COMPILE(",\"sm_id\":{}"), e.sm_id);
    line.append(std::string_view("}}"));
    out.append(std::string_view(line.data(), line.size()));
    if (progress && (i + 1) % kProgressEvery == 0) progress(i + 1, n);
  }
  if (std::isfinite(trace.combine_us) && trace.combine_us > 0) {
    // The combine after the kernel's last tile, on a track of its own above the CTAs.
    double last_end = 0;
    for (const TraceEvent& e : trace.events) last_end = std::max(last_end, perfetto_us(e.end_us));
    sim::print_to(out,
                  ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{0},\"tid\":-1,"
                  "\"args\":{{\"name\":\"combine\"}}}}"
                  ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{0},\"tid\":-1,"
                  "\"args\":{{\"sort_index\":-1}}}}"
                  ",\n{{\"ph\":\"X\",\"name\":\"combine\",\"cat\":\"combine\",\"pid\":{0},"
                  "\"tid\":-1,\"ts\":{1},\"dur\":{2}}}",
                  kProcessId, last_end, std::min(perfetto_us(trace.combine_us), kLargestUs));
  }
  const nlohmann::json other = {{"tool", "tilesched"},
                                {"strategy", strategy},
                                {"source", trace.source},
                                {"device", trace.device},
                                {"launched_ctas", trace.launched_ctas}};
  sim::print_to(out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{}}}\n",
                other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (progress) progress(n, n);
}

std::string render_perfetto(const Trace& trace) {
  std::string text;
  sim::StringSink sink(text);
  write_perfetto_json(sink, trace, sim::execution_unit(trace));
  return text;
}

}  // namespace tilesched::viz
