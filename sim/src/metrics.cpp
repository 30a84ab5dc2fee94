#include "tilesched/sim/metrics.hpp"

#include <algorithm>
#include <vector>

namespace tilesched::sim {

Metrics compute_metrics(const Trace& t) {
  Metrics m;
  m.tile_count = t.events.size();
  m.launched_ctas = t.launched_ctas;
  m.concurrent_ctas = t.workload.scheduler == SchedulerKind::Transient
                          ? std::min<std::size_t>(t.launched_ctas, t.workload.num_ctas)
                          : t.launched_ctas;
  if (t.launched_ctas == 0) return m;

  std::vector<double> busy(t.launched_ctas, 0.0);
  std::vector<std::size_t> tiles(t.launched_ctas, 0);
  double longest = 0;
  for (const TraceEvent& e : t.events) {
    const double d = e.end_us - e.start_us;
    // Events of a malformed trace may name CTAs past launched_ctas; count them nowhere rather
    // than write out of bounds (trace_from_json rejects such traces).
    if (e.cta < t.launched_ctas) {
      busy[e.cta] += d;
      ++tiles[e.cta];
    }
    m.total_busy_us += d;
    m.makespan_us = std::max(m.makespan_us, e.end_us);
    longest = std::max(longest, d);
  }
  const double n = double(t.launched_ctas);
  m.busy_min_us = *std::min_element(busy.begin(), busy.end());
  m.busy_max_us = *std::max_element(busy.begin(), busy.end());
  m.busy_mean_us = m.total_busy_us / n;
  m.tiles_min = double(*std::min_element(tiles.begin(), tiles.end()));
  m.tiles_max = double(*std::max_element(tiles.begin(), tiles.end()));
  m.tiles_mean = double(m.tile_count) / n;
  m.imbalance = m.busy_mean_us > 0 ? m.busy_max_us / m.busy_mean_us : 0;
  m.bound_us =
      std::max(m.total_busy_us / double(std::max<std::size_t>(m.concurrent_ctas, 1)), longest);
  m.efficiency = m.makespan_us > 0 ? m.bound_us / m.makespan_us : 0;
  return m;
}

}  // namespace tilesched::sim
