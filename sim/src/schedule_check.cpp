#include "tilesched/sim/schedule_check.hpp"

#include <map>
#include <set>
#include <sstream>

namespace tilesched::sim {
namespace {

std::string tile_name(const TraceEvent& e) {
  std::ostringstream s;
  s << "tile (prompt " << e.prompt_idx << ", head " << e.head_idx << ", offset " << e.prompt_offset
    << ", idx " << e.linear_idx << ", rows " << e.query_rows << ", kv blocks " << e.kv_blocks
    << ") on CTA " << e.cta << " step " << e.step;
  return s.str();
}

std::map<u32, std::vector<TraceEvent>> by_cta(const Trace& t) {
  std::map<u32, std::vector<TraceEvent>> m;
  for (const auto& e : t.events) m[e.cta].push_back(e);
  return m;
}

bool same_tile(const TraceEvent& a, const TraceEvent& b) {
  return a.step == b.step && a.linear_idx == b.linear_idx && a.prompt_offset == b.prompt_offset &&
         a.head_idx == b.head_idx && a.prompt_idx == b.prompt_idx && a.query_rows == b.query_rows &&
         a.kv_blocks == b.kv_blocks;
}

void static_differences(const Trace& model, const Trace& measured, std::vector<std::string>& out) {
  const auto got = by_cta(measured), want = by_cta(model);
  for (const auto& [cta, want_events] : want) {
    const auto it = got.find(cta);
    const std::size_t n = it == got.end() ? 0 : it->second.size();
    if (n != want_events.size()) {
      out.push_back("CTA " + std::to_string(cta) + " processed " + std::to_string(n) +
                    " tiles, the simulator says " + std::to_string(want_events.size()));
      continue;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!same_tile(it->second[i], want_events[i]))
        out.push_back("CTA " + std::to_string(cta) + " step " + std::to_string(i) + ": ran " +
                      tile_name(it->second[i]) + ", the simulator says " +
                      tile_name(want_events[i]));
  }
  for (const auto& [cta, events] : got)
    if (!want.count(cta))
      out.push_back("CTA " + std::to_string(cta) + " processed " + std::to_string(events.size()) +
                    " tiles; the simulator gives it none");
}

void queued_differences(const Trace& model, const Trace& measured, std::vector<std::string>& out) {
  std::multiset<u32> got;
  for (const auto& e : measured.events) got.insert(e.linear_idx);
  std::set<u32> want;
  for (const auto& e : model.events) want.insert(e.linear_idx);
  for (auto it = got.begin(); it != got.end(); it = got.upper_bound(*it)) {
    const u32 idx = *it;
    if (got.count(idx) > 1)
      out.push_back("tile " + std::to_string(idx) + " was processed " +
                    std::to_string(got.count(idx)) + " times");
    if (!want.count(idx))
      out.push_back("tile " + std::to_string(idx) +
                    " was processed, but the simulator never schedules it (past its sequence?)");
  }
  for (u32 idx : want)
    if (!got.count(idx)) out.push_back("tile " + std::to_string(idx) + " was never processed");
  const u32 c = measured.workload.num_ctas;
  for (const auto& [cta, events] : by_cta(measured)) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      const u32 idx = events[i].linear_idx;
      if (i > 0 && idx <= events[i - 1].linear_idx)
        out.push_back("CTA " + std::to_string(cta) + " fetched " + std::to_string(idx) + " after " +
                      std::to_string(events[i - 1].linear_idx) + ": counter order violated");
      if (idx < c && idx != cta)
        out.push_back("CTA " + std::to_string(cta) + " processed static tile " +
                      std::to_string(idx) + ", which belongs to CTA " + std::to_string(idx));
      if (i > 0 && idx < c)
        out.push_back("CTA " + std::to_string(cta) + " got index " + std::to_string(idx) +
                      " below C from the counter");
    }
  }
}

}  // namespace

std::vector<std::string> schedule_differences(const Trace& model, const Trace& measured) {
  std::vector<std::string> out;
  if (measured.launched_ctas != model.launched_ctas)
    out.push_back("launched " + std::to_string(measured.launched_ctas) + " CTAs, simulator " +
                  std::to_string(model.launched_ctas));
  if (measured.workload.scheduler == SchedulerKind::Queued)
    queued_differences(model, measured, out);
  else
    static_differences(model, measured, out);
  return out;
}

}  // namespace tilesched::sim
