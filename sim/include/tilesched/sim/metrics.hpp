// Summary figures of a trace: how long it took, how busy CTAs were, how even the work was.
#pragma once

#include <cstddef>

#include "tilesched/trace.hpp"

namespace tilesched::sim {

struct Metrics {
  double makespan_us = 0;    // latest end (the kernel's duration; every trace starts at 0)
  double total_busy_us = 0;  // sum over events of (end - start)
  // Lower bound on any schedule of these tiles: max(total_busy / concurrent CTAs, longest tile).
  double bound_us = 0;
  double efficiency = 0;  // bound / makespan, in (0, 1]; 1 means no schedule could do better
  double busy_min_us = 0, busy_mean_us = 0, busy_max_us = 0;  // per launched CTA
  double tiles_min = 0, tiles_mean = 0, tiles_max = 0;        // per launched CTA
  double imbalance = 0;  // busy_max / busy_mean (1 = perfectly even)
  std::size_t tile_count = 0;
  std::size_t launched_ctas = 0;
  // CTAs that run at once: launched_ctas for persistent schedulers; for transient
  // min(launched_ctas, workload.num_ctas), the resident limit the replay models. bound_us uses it.
  std::size_t concurrent_ctas = 0;
};

Metrics compute_metrics(const Trace& t);

}  // namespace tilesched::sim
