#include "viz/perfetto.hpp"

#include <fmt/format.h>

#include <set>

namespace tilesched::viz {

namespace {
constexpr int kProcessId = 1;  // one process holds every CTA track
}

nlohmann::json perfetto_json(const Trace& trace) {
  using nlohmann::json;
  json events = json::array();
  const std::string strategy = strategy_name(trace.workload);
  events.push_back(
      {{"ph", "M"},
       {"name", "process_name"},
       {"pid", kProcessId},
       {"tid", 0},
       {"args",
        {{"name", fmt::format("tilesched {} ({} {})", strategy, trace.source, trace.device)}}}});
  std::set<u32> ctas;
  for (const TraceEvent& e : trace.events) ctas.insert(e.cta);
  for (const u32 cta : ctas) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", kProcessId},
                      {"tid", cta},
                      {"args", {{"name", fmt::format("CTA {}", cta)}}}});
    // Without a sort index the UI orders tracks by name, putting CTA 10 before CTA 2.
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", kProcessId},
                      {"tid", cta},
                      {"args", {{"sort_index", cta}}}});
  }
  for (const TraceEvent& e : trace.events) {
    json args = {
        {"step", e.step},          {"linear_idx", e.linear_idx},       {"prompt_idx", e.prompt_idx},
        {"head_idx", e.head_idx},  {"prompt_offset", e.prompt_offset}, {"query_rows", e.query_rows},
        {"kv_blocks", e.kv_blocks}};
    if (e.sm_id >= 0) args["sm_id"] = e.sm_id;
    events.push_back(
        {{"ph", "X"},
         {"name", fmt::format("p{} h{} @{}", e.prompt_idx, e.head_idx, e.prompt_offset)},
         {"cat", "tile"},
         {"pid", kProcessId},
         {"tid", e.cta},
         {"ts", e.start_us},
         {"dur", e.end_us - e.start_us},
         {"args", std::move(args)}});
  }
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"tool", "tilesched"},
                {"strategy", strategy},
                {"source", trace.source},
                {"device", trace.device},
                {"launched_ctas", trace.launched_ctas}}}};
}

// Device names come from the GPU driver or a hand-edited file: replace bad UTF-8 rather than
// failing after the whole run.
std::string render_perfetto(const Trace& trace) {
  return perfetto_json(trace).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tilesched::viz
