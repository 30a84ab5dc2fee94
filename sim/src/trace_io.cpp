#include "tilesched/sim/trace_io.hpp"

#include <stdexcept>

#include "json_read.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::sim {

using nlohmann::json;

namespace {

json event_to_json(const TraceEvent& e) {
  return json{{"cta", e.cta},
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
}

json header_to_json(const Trace& t) {
  return json{{"format", kTraceFormatName},
              {"version", Trace::kFormatVersion},
              {"source", t.source},
              {"device", t.device},
              {"created", t.created},
              {"workload", workload_to_json(t.workload)},
              {"launched_ctas", t.launched_ctas}};
}

TraceEvent event_from_json(const json& j, const std::string& prefix) {
  using namespace detail;
  require_object(j, "field '" + prefix.substr(0, prefix.size() - 1) + "'");
  check_known_fields(j,
                     {"cta", "step", "linear_idx", "prompt_offset", "head_idx", "prompt_idx",
                      "query_rows", "kv_blocks", "start_us", "end_us", "sm_id"},
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
  e.start_us = as_double(require(j, "start_us", prefix), prefix + "start_us");
  e.end_us = as_double(require(j, "end_us", prefix), prefix + "end_us");
  if (j.contains("sm_id")) e.sm_id = as_i32(j["sm_id"], prefix + "sm_id");
  return e;
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
  check_known_fields(
      j,
      {"format", "version", "source", "device", "created", "workload", "launched_ctas", "events"},
      "");
  const std::string format = as_string(require(j, "format", ""), "format");
  if (format != kTraceFormatName)
    fail("format", "expected \"" + std::string(kTraceFormatName) + "\", got \"" + format + "\"");
  const u32 version = as_u32(require(j, "version", ""), "version");
  if (version != static_cast<u32>(Trace::kFormatVersion))
    fail("version", "unsupported trace version " + std::to_string(version) +
                        " (this build reads version " + std::to_string(Trace::kFormatVersion) +
                        ")");
  Trace t;
  t.source = as_string(require(j, "source", ""), "source");
  if (j.contains("device")) t.device = as_string(j["device"], "device");
  if (j.contains("created")) t.created = as_string(j["created"], "created");
  t.workload = workload_from_json_at(require(j, "workload", ""), "workload.");
  t.launched_ctas = as_u32(require(j, "launched_ctas", ""), "launched_ctas");

  const json& events = require(j, "events", "");
  if (!events.is_array()) fail("events", "expected an array of events, got " + describe(events));
  const u32 batch = t.workload.batch_size();
  const u32 heads = t.workload.num_q_heads;
  t.events.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string prefix = "events[" + std::to_string(i) + "].";
    TraceEvent e = event_from_json(events[i], prefix);
    if (e.cta >= t.launched_ctas)
      fail(prefix + "cta", "CTA " + std::to_string(e.cta) + " is not below launched_ctas (" +
                               std::to_string(t.launched_ctas) + ")");
    if (e.prompt_idx >= batch)
      fail(prefix + "prompt_idx", "prompt " + std::to_string(e.prompt_idx) +
                                      " is not below the batch size (" + std::to_string(batch) +
                                      ")");
    if (e.head_idx >= heads)
      fail(prefix + "head_idx", "head " + std::to_string(e.head_idx) +
                                    " is not below the number of query heads (" +
                                    std::to_string(heads) + ")");
    if (e.end_us < e.start_us)
      fail(prefix + "end_us", "ends (" + std::to_string(e.end_us) + ") before it starts (" +
                                  std::to_string(e.start_us) + ")");
    if (!t.events.empty()) {
      const TraceEvent& p = t.events.back();
      if (e.cta < p.cta || (e.cta == p.cta && e.step <= p.step))
        fail(prefix + "step", "events must be ordered by (cta, step): (" + std::to_string(e.cta) +
                                  ", " + std::to_string(e.step) + ") follows (" +
                                  std::to_string(p.cta) + ", " + std::to_string(p.step) + ")");
    }
    t.events.push_back(e);
  }
  return t;
}

void write_trace(const std::string& path, const Trace& t) {
  // One event per line: large traces stay readable and diffable without a JSON pretty-printer.
  std::string out = header_to_json(t).dump();
  out.pop_back();  // the closing brace; events follow
  out += ",\"events\":[";
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    out += event_to_json(t.events[i]).dump();
  }
  out += "\n]}\n";
  write_file_atomically(path, out);
}

Trace read_trace(const std::string& path) {
  return detail::read_json_file(path, trace_from_json);
}

}  // namespace tilesched::sim
