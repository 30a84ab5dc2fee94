#include "tilesched/sim/metrics.hpp"

#include <algorithm>
#include <vector>

namespace tilesched::sim {

namespace {

// Per-unit figures count over slots/SMs only where every event says which one it ran on.
bool counts_per_slot(const Trace& t) {
  if (t.workload.scheduler != SchedulerKind::Transient || t.events.empty()) return false;
  return std::all_of(t.events.begin(), t.events.end(),
                     [](const TraceEvent& e) { return e.sm_id >= 0; });
}

}  // namespace

Metrics compute_metrics(const Trace& t) {
  Metrics m;
  m.tile_count = t.events.size();
  m.launched_ctas = t.launched_ctas;
  m.concurrent_ctas = t.workload.scheduler == SchedulerKind::Transient
                          ? std::min<std::size_t>(t.launched_ctas, t.workload.resident_ctas)
                          : t.launched_ctas;
  if (t.launched_ctas == 0) return m;

  m.unit = counts_per_slot(t) ? ExecutionUnit::Slot : ExecutionUnit::Cta;
  m.unit_count = t.launched_ctas;
  if (m.unit == ExecutionUnit::Slot) {
    m.unit_count = m.concurrent_ctas;
    for (const TraceEvent& e : t.events)
      m.unit_count = std::max(m.unit_count, std::size_t(e.sm_id) + 1);
  }
  const auto unit_of = [&](const TraceEvent& e) -> std::size_t {
    return m.unit == ExecutionUnit::Slot ? std::size_t(e.sm_id) : std::size_t(e.cta);
  };

  // Where each unit's figures are summed: at its own id when the ids are no more than the events
  // (the usual case), otherwise at its rank among the ids that occur. Memory follows the events,
  // never a number a file claims (2^30 launched CTAs, an SM id of 2^31 - 1); units that ran no
  // tile are idle either way.
  const bool compact = m.unit_count > t.events.size();
  std::vector<std::size_t> present;  // the unit ids that occur, sorted (compact only)
  if (compact) {
    present.reserve(t.events.size());
    for (const TraceEvent& e : t.events) present.push_back(unit_of(e));
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
  }
  const auto slot_of = [&](const TraceEvent& e) -> std::size_t {
    if (!compact) return unit_of(e);
    return std::size_t(std::lower_bound(present.begin(), present.end(), unit_of(e)) -
                       present.begin());
  };

  const std::size_t slots = compact ? present.size() : m.unit_count;
  std::vector<double> busy(slots, 0.0);
  std::vector<std::size_t> tiles(slots, 0);
  double longest = 0;
  for (const TraceEvent& e : t.events) {
    const double d = busy_us(e);
    // Events of a malformed trace may name CTAs past launched_ctas; count them nowhere rather
    // than write out of bounds (trace_from_json rejects such traces).
    if (unit_of(e) < m.unit_count) {
      busy[slot_of(e)] += d;
      ++tiles[slot_of(e)];
    }
    m.total_busy_us += d;
    m.makespan_us = std::max(m.makespan_us, e.end_us);
    longest = std::max(longest, d);
  }
  const double n = double(m.unit_count);
  const bool some_idle = slots < m.unit_count;  // units with no slot ran no tile
  m.busy_min_us = slots == 0 ? 0 : *std::min_element(busy.begin(), busy.end());
  m.busy_max_us = slots == 0 ? 0 : *std::max_element(busy.begin(), busy.end());
  m.tiles_min = slots == 0 ? 0 : double(*std::min_element(tiles.begin(), tiles.end()));
  m.tiles_max = slots == 0 ? 0 : double(*std::max_element(tiles.begin(), tiles.end()));
  if (some_idle) {
    m.busy_min_us = std::min(m.busy_min_us, 0.0);
    m.tiles_min = 0;
  }
  m.busy_mean_us = m.total_busy_us / n;
  m.tiles_mean = double(m.tile_count) / n;
  m.imbalance = m.busy_mean_us > 0 ? m.busy_max_us / m.busy_mean_us : 0;
  m.bound_us =
      std::max(m.total_busy_us / double(std::max<std::size_t>(m.concurrent_ctas, 1)), longest);
  m.efficiency = m.makespan_us > 0 ? m.bound_us / m.makespan_us : 0;
  return m;
}

std::map<u32, CtaLoad> cta_loads(const Trace& t) {
  std::map<u32, CtaLoad> loads;
  for (const TraceEvent& e : t.events) {
    CtaLoad& load = loads[e.cta];
    load.busy_us += busy_us(e);
    ++load.tiles;
  }
  return loads;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace tilesched::sim
