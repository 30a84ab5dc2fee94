#include "tilesched/sim/metrics.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
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

// Where each event's figures are summed. The unit of an event is its CTA, or its time slot in a
// transient trace counted per slot. Units are summed at their own id when the ids are no more
// than the events (the usual case), otherwise at their rank among the ids that occur: memory
// follows the events, never a number a file claims (2^30 launched CTAs, an SM id of 2^31 - 1);
// units that ran no tile are idle either way.
class UnitBuckets {
 public:
  UnitBuckets(const Trace& t, const Metrics& m, std::vector<std::size_t> slot_of)
      : t_(t), per_slot_(m.unit == ExecutionUnit::Slot), slot_of_(std::move(slot_of)) {
    compact_ = m.unit_count > t.events.size();
    if (compact_) {
      present_.reserve(t.events.size());
      for (std::size_t i = 0; i < t.events.size(); ++i) present_.push_back(unit_of(i));
      std::sort(present_.begin(), present_.end());
      present_.erase(std::unique(present_.begin(), present_.end()), present_.end());
    }
    count_ = compact_ ? present_.size() : m.unit_count;
  }
  std::size_t unit_of(std::size_t i) const {
    return per_slot_ ? slot_of_[i] : std::size_t(t_.events[i].cta);
  }
  std::size_t bucket_of(std::size_t i) const {
    if (!compact_) return unit_of(i);
    return std::size_t(std::lower_bound(present_.begin(), present_.end(), unit_of(i)) -
                       present_.begin());
  }
  std::size_t count() const { return count_; }

 private:
  const Trace& t_;
  bool per_slot_;
  std::vector<std::size_t> slot_of_;
  bool compact_ = false;
  std::vector<std::size_t> present_;  // the unit ids that occur, sorted (compact only)
  std::size_t count_ = 0;
};

// Spread of the per-unit busy times and tile counts; units without a bucket ran nothing.
void summarize_units(const std::vector<double>& busy, const std::vector<std::size_t>& tiles,
                     Metrics& m) {
  const std::size_t buckets = busy.size();
  m.busy_min_us = buckets == 0 ? 0 : *std::min_element(busy.begin(), busy.end());
  m.busy_max_us = buckets == 0 ? 0 : *std::max_element(busy.begin(), busy.end());
  m.tiles_min = buckets == 0 ? 0 : double(*std::min_element(tiles.begin(), tiles.end()));
  m.tiles_max = buckets == 0 ? 0 : double(*std::max_element(tiles.begin(), tiles.end()));
  if (buckets < m.unit_count) {
    m.busy_min_us = std::min(m.busy_min_us, 0.0);
    m.tiles_min = 0;
  }
}

}  // namespace

ExecutionUnit execution_unit(const Trace& t) {
  return counts_per_slot(t) ? ExecutionUnit::Slot : ExecutionUnit::Cta;
}

Metrics compute_metrics(const Trace& t) {
  Metrics m;
  m.tile_count = t.events.size();
  m.launched_ctas = t.launched_ctas;
  if (t.launched_ctas == 0) return m;

  m.unit = execution_unit(t);
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

  const UnitBuckets units(t, m, std::move(slot_of));
  std::vector<double> busy(units.count(), 0.0);
  std::vector<std::size_t> tiles(units.count(), 0);
  double longest = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    const double d = busy_us(e);
    // Events of a malformed trace may name CTAs past launched_ctas; count them nowhere rather
    // than write out of bounds (trace_from_json rejects such traces).
    if (units.unit_of(i) < m.unit_count) {
      busy[units.bucket_of(i)] += d;
      ++tiles[units.bucket_of(i)];
    }
    m.total_busy_us += d;
    m.makespan_us = std::max(m.makespan_us, e.end_us);
    longest = std::max(longest, d);
  }
  m.makespan_us += t.combine_us;  // the combine runs after the kernel's last tile
  summarize_units(busy, tiles, m);
  const double n = double(m.unit_count);
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
