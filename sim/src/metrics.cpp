#include "tilesched/sim/metrics.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

namespace tilesched::sim {

namespace {

// Per-unit figures count over slots/SMs only where every event says which one it ran on.
bool counts_per_slot(const Trace& t) {
  if (t.workload.scheduler != SchedulerKind::Transient || t.events.empty()) return false;
  return std::all_of(t.events.begin(), t.events.end(),
                     [](const TraceEvent& e) { return e.sm_id >= 0; });
}

// The resident slot of every event, by SM: an SM that ran two CTAs at once has two slots. Within
// an SM, events in start order take the lowest slot free at their start (ties by CTA id), so the
// slots are those of any trace, simulated or measured. Returns the slot count.
std::size_t assign_slots(const Trace& t, std::vector<std::size_t>& slot_of) {
  std::vector<std::size_t> order(t.events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const TraceEvent &x = t.events[a], &y = t.events[b];
    return std::tie(x.sm_id, x.start_us, x.cta) < std::tie(y.sm_id, y.start_us, y.cta);
  });
  slot_of.assign(t.events.size(), 0);
  std::size_t slots = 0;
  std::vector<double> free_at;  // the current SM's slots: when each frees up
  std::int32_t sm = -1;
  std::size_t first_slot = 0;
  for (const std::size_t i : order) {
    const TraceEvent& e = t.events[i];
    if (e.sm_id != sm) {
      sm = e.sm_id;
      first_slot = slots;
      free_at.clear();
    }
    std::size_t k = 0;
    while (k < free_at.size() && free_at[k] > e.start_us) ++k;
    if (k == free_at.size()) {
      free_at.push_back(0);
      ++slots;
    }
    free_at[k] = e.end_us;
    slot_of[i] = first_slot + k;
  }
  return slots;
}

}  // namespace

Metrics compute_metrics(const Trace& t) {
  Metrics m;
  m.tile_count = t.events.size();
  m.launched_ctas = t.launched_ctas;
  if (t.launched_ctas == 0) return m;

  m.unit = counts_per_slot(t) ? ExecutionUnit::Slot : ExecutionUnit::Cta;
  m.unit_count = t.launched_ctas;
  std::vector<std::size_t> slot_of;
  const std::size_t slots_seen = m.unit == ExecutionUnit::Slot ? assign_slots(t, slot_of) : 0;
  // CTAs that run at once: the resident slots the trace records (a grid beyond them runs in
  // waves); without a record, every persistent CTA and the transient slots seen.
  const std::size_t resident = t.workload.resident_ctas > 0    ? t.workload.resident_ctas
                               : m.unit == ExecutionUnit::Slot ? slots_seen
                                                               : t.launched_ctas;
  m.concurrent_ctas = std::min<std::size_t>(t.launched_ctas, resident);
  if (m.unit == ExecutionUnit::Slot) m.unit_count = std::max(m.concurrent_ctas, slots_seen);
  const auto unit_of = [&](std::size_t i) -> std::size_t {
    return m.unit == ExecutionUnit::Slot ? slot_of[i] : std::size_t(t.events[i].cta);
  };

  // Where each unit's figures are summed: at its own id when the ids are no more than the events
  // (the usual case), otherwise at its rank among the ids that occur. Memory follows the events,
  // never a number a file claims (2^30 launched CTAs, an SM id of 2^31 - 1); units that ran no
  // tile are idle either way.
  const bool compact = m.unit_count > t.events.size();
  std::vector<std::size_t> present;  // the unit ids that occur, sorted (compact only)
  if (compact) {
    present.reserve(t.events.size());
    for (std::size_t i = 0; i < t.events.size(); ++i) present.push_back(unit_of(i));
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
  }
  const auto bucket_of = [&](std::size_t i) -> std::size_t {
    if (!compact) return unit_of(i);
    return std::size_t(std::lower_bound(present.begin(), present.end(), unit_of(i)) -
                       present.begin());
  };

  const std::size_t slots = compact ? present.size() : m.unit_count;
  std::vector<double> busy(slots, 0.0);
  std::vector<std::size_t> tiles(slots, 0);
  double longest = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    const double d = busy_us(e);
    // Events of a malformed trace may name CTAs past launched_ctas; count them nowhere rather
    // than write out of bounds (trace_from_json rejects such traces).
    if (unit_of(i) < m.unit_count) {
      busy[bucket_of(i)] += d;
      ++tiles[bucket_of(i)];
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
