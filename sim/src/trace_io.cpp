#include "tilesched/sim/trace_io.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "json_read.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/output_file.hpp"
#include "tilesched/sim/value_limits.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::sim {

using nlohmann::json;

namespace {

json event_to_json(const TraceEvent& e) {
  json j{{"cta", e.cta},
         {"step", e.step},
         {"linear_idx", e.linear_idx},
         {"prompt_offset", e.prompt_offset},
         {"head_idx", e.head_idx},
         {"prompt_idx", e.prompt_idx},
         {"query_rows", e.query_rows},
         {"kv_blocks", e.kv_blocks},
         {"start_us", e.start_us},
         {"end_us", e.end_us},
         {"sm_id", e.sm_id}};
  // Only pieces of a tile (split_tail) name their first block: whole tiles read as before.
  if (e.kv_block_begin != 0) j["kv_block_begin"] = e.kv_block_begin;
  return j;
}

json header_to_json(const Trace& t) {
  json j{{"format", kTraceFormatName},
         {"version", Trace::kFormatVersion},
         {"source", t.source},
         {"device", t.device},
         {"created", t.created},
         {"workload", workload_to_json(t.workload)},
         {"launched_ctas", t.launched_ctas}};
  // The combine's time only where the trace has one, so traces without splits read as before.
  if (t.combine_us > 0) j["combine_us"] = t.combine_us;
  return j;
}

TraceEvent event_from_json(const json& j, const std::string& prefix) {
  using namespace detail;
  require_object(j, "field '" + prefix.substr(0, prefix.size() - 1) + "'");
  check_known_fields(j,
                     {"cta", "step", "linear_idx", "prompt_offset", "head_idx", "prompt_idx",
                      "query_rows", "kv_blocks", "kv_block_begin", "start_us", "end_us", "sm_id"},
                     prefix);
  TraceEvent e;
  e.cta = as_u32(require(j, "cta", prefix), prefix + "cta");
  e.step = as_u32(require(j, "step", prefix), prefix + "step");
  e.linear_idx = as_u32(require(j, "linear_idx", prefix), prefix + "linear_idx");
  e.prompt_offset = as_u32(require(j, "prompt_offset", prefix), prefix + "prompt_offset");
  e.head_idx = as_u32(require(j, "head_idx", prefix), prefix + "head_idx");
  e.prompt_idx = as_u32(require(j, "prompt_idx", prefix), prefix + "prompt_idx");
  e.query_rows = as_u32(require(j, "query_rows", prefix), prefix + "query_rows");
  e.kv_blocks = as_u32(require(j, "kv_blocks", prefix), prefix + "kv_blocks");
  if (j.contains("kv_block_begin"))
    e.kv_block_begin = as_u32(j["kv_block_begin"], prefix + "kv_block_begin");
  e.start_us = as_double(require(j, "start_us", prefix), prefix + "start_us");
  e.end_us = as_double(require(j, "end_us", prefix), prefix + "end_us");
  if (j.contains("sm_id")) e.sm_id = as_i32(j["sm_id"], prefix + "sm_id");
  return e;
}

// The values of one event against the workload and the ranges of value_limits.hpp: a file that
// passes can be drawn, diffed and fitted without a number that no schedule can produce.
void check_event_values(const TraceEvent& e, const Trace& t, u32 work_tiles,
                        const std::string& prefix) {
  using detail::fail;
  const Workload& w = t.workload;
  if (e.cta >= t.launched_ctas)
    fail(prefix + "cta",
         fmt::format("CTA {} is not below launched_ctas ({})", e.cta, t.launched_ctas));
  if (e.prompt_idx >= w.batch_size())
    fail(prefix + "prompt_idx",
         fmt::format("prompt {} is not below the batch size ({})", e.prompt_idx, w.batch_size()));
  if (e.head_idx >= w.scheduled_heads())  // KV heads for a decode workload
    fail(prefix + "head_idx",
         fmt::format("head {} is not below the number of {} heads ({})", e.head_idx,
                     w.decoding ? "KV" : "query", w.scheduled_heads()));
  if (e.linear_idx >= work_tiles)
    fail(prefix + "linear_idx",
         fmt::format("work index {} is not below the workload's {} work tiles (T*H*B)",
                     e.linear_idx, work_tiles));
  const u32 bm = w.tile_shape();  // a decode tile holds every new token of its sequence
  const std::uint64_t tiles_per_prompt = ceil_div(w.max_seq_len(), bm);
  if (e.prompt_offset % bm != 0 || e.prompt_offset / bm >= tiles_per_prompt)
    fail(prefix + "prompt_offset",
         fmt::format("{} is not the start of a tile: a multiple of BM ({}) below the longest "
                     "sequence's {} rows",
                     e.prompt_offset, bm, tiles_per_prompt * bm));
  if (e.query_rows > bm)
    fail(prefix + "query_rows",
         fmt::format("{} rows are more than BM ({}) a tile holds", e.query_rows, bm));
  const u32 key_blocks = ceil_div(w.key_len(e.prompt_idx), w.block_n);
  if (e.kv_blocks > key_blocks)
    fail(prefix + "kv_blocks",
         fmt::format("{} KV blocks are more than the {} that sequence {}'s keys fill (BN {})",
                     e.kv_blocks, key_blocks, e.prompt_idx, w.block_n));
  if (e.kv_block_begin != 0 && (e.kv_block_begin >= key_blocks ||
                                std::uint64_t(e.kv_block_begin) + e.kv_blocks > key_blocks))
    fail(prefix + "kv_block_begin",
         fmt::format("blocks {}..{} lie past the {} KV blocks that sequence {}'s keys fill "
                     "(BN {})",
                     e.kv_block_begin, std::uint64_t(e.kv_block_begin) + e.kv_blocks, key_blocks,
                     e.prompt_idx, w.block_n));
  for (const auto& [name, us] : {std::pair{"start_us", e.start_us}, {"end_us", e.end_us}}) {
    const std::string problem = trace_time_problem(us);
    if (!problem.empty()) fail(prefix + name, problem);
  }
  if (e.end_us < e.start_us)
    fail(prefix + "end_us",
         fmt::format("ends ({:g}) before it starts ({:g})", e.end_us, e.start_us));
  const std::string sm_problem = sm_id_problem(e.sm_id, t.launched_ctas);
  if (!sm_problem.empty()) fail(prefix + "sm_id", sm_problem);
}

}  // namespace

json trace_to_json(const Trace& t) {
  json j = header_to_json(t);
  json events = json::array();
  for (const TraceEvent& e : t.events) events.push_back(event_to_json(e));
  j["events"] = std::move(events);
  return j;
}

Trace trace_from_json(const json& j) {
  using namespace detail;
  require_object(j, "a trace");
  check_known_fields(j,
                     {"format", "version", "source", "device", "created", "workload",
                      "launched_ctas", "events", "combine_us"},
                     "");
  const std::string format = as_string(require(j, "format", ""), "format");
  if (format != kTraceFormatName)
    fail("format", "expected \"" + std::string(kTraceFormatName) + "\", got \"" + format + "\"");
  const u32 version = as_u32(require(j, "version", ""), "version");
  if (version != static_cast<u32>(Trace::kFormatVersion))
    fail("version", fmt::format("unsupported trace version {} (this build reads version {})",
                                version, Trace::kFormatVersion));
  Trace t;
  t.source = as_string(require(j, "source", ""), "source");
  if (t.source != "sim" && t.source != "gpu")
    fail("source", "expected \"sim\" (predicted) or \"gpu\" (measured), got \"" + t.source + "\"");
  if (j.contains("device")) t.device = as_string(j["device"], "device");
  if (j.contains("created")) t.created = as_string(j["created"], "created");
  t.workload = workload_from_json_at(require(j, "workload", ""), "workload.");
  t.launched_ctas = as_u32(require(j, "launched_ctas", ""), "launched_ctas");
  if (j.contains("combine_us")) {
    t.combine_us = as_double(j["combine_us"], "combine_us");
    if (t.combine_us < 0) fail("combine_us", "must be a time of at least 0 µs");
  }

  // Every launch is at most one CTA per work tile (min(C, N) persistent, N transient), or, for
  // the schedulers that split tiles into pieces, at most C.
  const u32 work_tiles = t.workload.summary(nullptr).max_idx(t.workload.scheduled_heads());
  if (t.launched_ctas > work_tiles &&
      !(splits_tiles(t.workload.scheduler) && t.launched_ctas <= t.workload.num_ctas))
    fail("launched_ctas",
         fmt::format("{} CTAs are more than the workload's {} work tiles (T*H*B): no scheduler "
                     "launches more",
                     t.launched_ctas, work_tiles));

  const json& events = require(j, "events", "");
  if (!events.is_array()) fail("events", "expected an array of events, got " + describe(events));
  t.events.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string prefix = fmt::format("events[{}].", i);
    TraceEvent e = event_from_json(events[i], prefix);
    check_event_values(e, t, work_tiles, prefix);
    if (!t.events.empty()) {
      const TraceEvent& p = t.events.back();
      if (e.cta < p.cta || (e.cta == p.cta && e.step <= p.step))
        fail(prefix + "step", fmt::format("events must be ordered by (cta, step): ({}, {}) follows "
                                          "({}, {})",
                                          e.cta, e.step, p.cta, p.step));
    }
    t.events.push_back(e);
  }
  return t;
}

namespace {

// A time as JSON: the shortest text that reads back to the same double. JSON has no infinity or
// NaN; like nlohmann's dump they become null, which the reader then rejects, naming the field.
struct JsonTime {
  double us;
};

}  // namespace

}  // namespace tilesched::sim

template <>
struct fmt::formatter<tilesched::sim::JsonTime> : fmt::formatter<double> {
  template <class Context>
  auto format(tilesched::sim::JsonTime t, Context& ctx) const {
    if (!std::isfinite(t.us)) return fmt::format_to(ctx.out(), "null");
    return fmt::formatter<double>::format(t.us, ctx);
  }
};

namespace tilesched::sim {

void write_trace_json(TextSink& out, const Trace& t, const ProgressCallback& progress) {
  // The header through nlohmann (it is small, and its strings need JSON escaping), the events
  // with fmt, one per line: large traces stay readable and diffable without a JSON
  // pretty-printer, and no document of a million events is ever built. Keys in the order
  // nlohmann's own dump gives them, so files look the same as before.
  // The header holds the workload, which may list millions of sequence lengths: freed by
  // JsonDocument, which needs no memory to do so (see release_json).
  std::string header = detail::JsonDocument(header_to_json(t))
                           .root()
                           .dump(-1, ' ', false, json::error_handler_t::replace);
  header.pop_back();  // the closing brace; events follow
  out.append(header);
  out.append(",\"events\":[");
  constexpr std::size_t kProgressEvery = std::size_t(1) << 16;
  const std::size_t n = t.events.size();
  fmt::memory_buffer line;
  for (std::size_t i = 0; i < n; ++i) {
    const TraceEvent& e = t.events[i];
    line.clear();
    fmt::format_to(fmt::appender(line),
                   FMT_COMPILE("{}{{\"cta\":{},\"end_us\":{},\"head_idx\":{},"),
                   i == 0 ? "\n" : ",\n", e.cta, JsonTime{e.end_us}, e.head_idx);
    // A piece of a tile (split_tail) names its first block, as event_to_json writes it.
    if (e.kv_block_begin != 0)
      fmt::format_to(fmt::appender(line), FMT_COMPILE("\"kv_block_begin\":{},"), e.kv_block_begin);
    fmt::format_to(fmt::appender(line),
                   FMT_COMPILE("\"kv_blocks\":{},\"linear_idx\":{},\"prompt_idx\":{},"
                               "\"prompt_offset\":{},\"query_rows\":{},\"sm_id\":{},"
                               "\"start_us\":{},\"step\":{}}}"),
                   e.kv_blocks, e.linear_idx, e.prompt_idx, e.prompt_offset, e.query_rows, e.sm_id,
                   JsonTime{e.start_us}, e.step);
    out.append(std::string_view(line.data(), line.size()));
    if (progress && (i + 1) % kProgressEvery == 0) progress(i + 1, n);
  }
  out.append("\n]}\n");
  if (progress) progress(n, n);
}

void write_trace(const std::string& path, const Trace& t, const TraceWriteOptions& options) {
  OutputFile file(path, options.compression);
  write_trace_json(file, t, options.progress);
  file.commit();
}

Trace read_trace(const std::string& path) {
  return detail::read_json_file(path, trace_from_json);
}

}  // namespace tilesched::sim
