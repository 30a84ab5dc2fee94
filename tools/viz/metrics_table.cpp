#include "viz/metrics_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "viz/descriptions.hpp"

namespace tilesched::viz {

std::string unit_name(const sim::Metrics& m) {
  return m.unit == sim::ExecutionUnit::Slot ? "slot/SM" : "CTA";
}

MetricRows metric_rows(const sim::Metrics& m) {
  const std::string unit = unit_name(m);
  return {
      {"makespan", fmt::format("{} us", format_us(m.makespan_us))},
      {"lower bound", fmt::format("{} us", format_us(m.bound_us))},
      {"efficiency", fmt::format("{:.1f} % (bound / makespan)", 100.0 * m.efficiency)},
      {"imbalance", fmt::format("{:.3f} (max busy / mean busy)", m.imbalance)},
      {fmt::format("busy per {}", unit),
       fmt::format("min {}  mean {}  max {} us", format_us(m.busy_min_us),
                   format_us(m.busy_mean_us), format_us(m.busy_max_us))},
      {fmt::format("tiles per {}", unit),
       fmt::format("min {:g}  mean {:.1f}  max {:g}", m.tiles_min, m.tiles_mean, m.tiles_max)},
      {"tiles", fmt::format("{}", m.tile_count)},
      {"launched CTAs", fmt::format("{} ({} at once)", m.launched_ctas, m.concurrent_ctas)},
  };
}

std::string format_metrics_table(const sim::Metrics& m) {
  const MetricRows rows = metric_rows(m);
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  for (const auto& [name, value] : rows) out += fmt::format("  {:<{}}  {}\n", name, width, value);
  return out;
}

}  // namespace tilesched::viz
