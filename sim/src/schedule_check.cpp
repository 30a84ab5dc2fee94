#include "tilesched/sim/schedule_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tilesched/sim/describe.hpp"

namespace tilesched::sim {
namespace {

std::string tile_name(const TraceEvent& e) {
  return fmt::format("{} [idx {}, {} rows, {}] on CTA {} step {}", describe_tile(e), e.linear_idx,
                     e.query_rows, describe_kv_blocks(e), e.cta, e.step);
}

std::map<u32, std::vector<TraceEvent>> by_cta(const Trace& t) {
  std::map<u32, std::vector<TraceEvent>> m;
  for (const auto& e : t.events) m[e.cta].push_back(e);
  return m;
}

// The same work at the same index: coordinates, rows and KV blocks.
bool same_work(const TraceEvent& a, const TraceEvent& b) {
  return a.linear_idx == b.linear_idx && a.prompt_offset == b.prompt_offset &&
         a.head_idx == b.head_idx && a.prompt_idx == b.prompt_idx && a.query_rows == b.query_rows &&
         a.kv_blocks == b.kv_blocks && a.kv_block_begin == b.kv_block_begin;
}

bool same_tile(const TraceEvent& a, const TraceEvent& b) {
  return a.step == b.step && same_work(a, b);
}

void static_differences(const Trace& model, const Trace& measured, std::vector<std::string>& out) {
  const auto got = by_cta(measured), want = by_cta(model);
  for (const auto& [cta, want_events] : want) {
    const auto it = got.find(cta);
    const std::size_t n = it == got.end() ? 0 : it->second.size();
    if (n != want_events.size()) {
      out.push_back(fmt::format("CTA {} processed {} tiles, the simulator says {}", cta, n,
                                want_events.size()));
      continue;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!same_tile(it->second[i], want_events[i]))
        out.push_back(fmt::format("CTA {} step {}: ran {}, the simulator says {}", cta, i,
                                  tile_name(it->second[i]), tile_name(want_events[i])));
  }
  for (const auto& [cta, events] : got)
    if (!want.count(cta))
      out.push_back(fmt::format("CTA {} processed {} tiles; the simulator gives it none", cta,
                                events.size()));
}

// The work an event names: its tile's index and its first KV block (0 for a whole tile), so that
// the pieces of a tile (split_kv) are told apart.
using WorkKey = std::pair<u32, u32>;
WorkKey work_key(const TraceEvent& e) {
  return {e.linear_idx, e.kv_block_begin};
}
std::string work_name(const WorkKey& k) {
  return k.second == 0 ? fmt::format("tile {}", k.first)
                       : fmt::format("tile {} from KV block {}", k.first, k.second);
}

// Each piece of work processed once, exactly the model's set, and each the model's tile.
void queued_tile_set(const Trace& model, const Trace& measured, std::vector<std::string>& out) {
  std::multiset<WorkKey> got;
  for (const auto& e : measured.events) got.insert(work_key(e));
  std::map<WorkKey, const TraceEvent*> want;
  for (const auto& e : model.events) want[work_key(e)] = &e;
  for (const auto& e : measured.events) {
    const auto it = want.find(work_key(e));
    if (it != want.end() && !same_work(e, *it->second))
      out.push_back(fmt::format("index {} ran {}, the simulator says {}", e.linear_idx,
                                tile_name(e), tile_name(*it->second)));
  }
  for (auto it = got.begin(); it != got.end(); it = got.upper_bound(*it)) {
    const WorkKey& key = *it;
    if (got.count(key) > 1)
      out.push_back(fmt::format("{} was processed {} times", work_name(key), got.count(key)));
    if (!want.count(key))
      out.push_back(
          fmt::format("{} was processed, but the simulator never schedules it (past its sequence?)",
                      work_name(key)));
  }
  for (const auto& [key, e] : want)
    if (!got.count(key)) out.push_back(fmt::format("{} was never processed", work_name(key)));
}

// Each CTA's counter indices in an order the counter can give: its static index first, then
// increasing indices of C and above. The counter hands out tile indices, or split_kv's piece
// numbers: a piece's place among the model's pieces in stream order (tile, then first KV block),
// which no trace records (a piece the model lacks has none; queued_tile_set names it).
void queued_fetch_order(const Trace& model, const Trace& measured, std::vector<std::string>& out) {
  const u32 c = measured.workload.num_ctas;
  const bool pieces = measured.workload.scheduler == SchedulerKind::SplitKv;
  const char* what = pieces ? "piece" : "tile";
  std::map<WorkKey, u32> piece_number;
  if (pieces) {
    std::set<WorkKey> keys;
    for (const auto& e : model.events) keys.insert(work_key(e));
    for (const WorkKey& k : keys) piece_number.emplace(k, static_cast<u32>(piece_number.size()));
  }
  std::map<u32, std::vector<u32>> fetched;  // each CTA's counter indices, in its order
  for (const auto& e : measured.events) {
    if (!pieces) {
      fetched[e.cta].push_back(e.linear_idx);
      continue;
    }
    const auto it = piece_number.find(work_key(e));
    if (it != piece_number.end()) fetched[e.cta].push_back(it->second);
  }
  for (const auto& [cta, indices] : fetched) {
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const u32 idx = indices[i];
      if (i > 0 && idx <= indices[i - 1])
        out.push_back(fmt::format("CTA {} fetched {} {} after {}: counter order violated", cta,
                                  what, idx, indices[i - 1]));
      if (idx < c && idx != cta)
        out.push_back(fmt::format("CTA {} processed static {} {}, which belongs to CTA {}", cta,
                                  what, idx, idx));
      if (i > 0 && idx < c)
        out.push_back(fmt::format("CTA {} got {} {} below C from the counter", cta, what, idx));
    }
  }
}

}  // namespace

std::vector<std::string> schedule_differences(const Trace& model, const Trace& measured) {
  std::vector<std::string> out;
  if (measured.launched_ctas != model.launched_ctas)
    out.push_back(
        fmt::format("launched {} CTAs, simulator {}", measured.launched_ctas, model.launched_ctas));
  if (takes_from_counter(measured.workload.scheduler)) {
    queued_tile_set(model, measured, out);
    queued_fetch_order(model, measured, out);
  } else {
    static_differences(model, measured, out);
  }
  return out;
}

OutputCheck check_outputs(const Trace& measured, const AttentionInputs& inputs,
                          const std::vector<float>& o, const std::vector<float>& lse) {
  const Workload& w = measured.workload;
  const AttentionResult model = tiled_attention(w, inputs, measured);
  OutputCheck check;
  check.tiles = measured.events.size();
  for (const TraceEvent& e : measured.events) {
    const TileError err = tile_error(w, e, o, lse, model.o, model.lse);
    const double worst = std::max(err.o_rel, err.lse_rel);
    if (!std::isnan(worst)) check.worst_error = std::max(check.worst_error, worst);
    if (!err.has_nan && err.o_rel <= kTileTolerance && err.lse_rel <= kTileTolerance) continue;
    const std::string sm = e.sm_id >= 0 ? fmt::format(" (SM {})", e.sm_id) : std::string();
    check.failures.push_back(fmt::format(
        "{} on CTA {}{}: O error {:.3g}, LSE error {:.3g} over {} rows{}", describe_tile(e), e.cta,
        sm, err.o_rel, err.lse_rel, err.rows, err.has_nan ? ", NaN or unwritten rows" : ""));
  }
  return check;
}

}  // namespace tilesched::sim
