// Summary figures of a trace: how long it took, how busy CTAs were, how even the work was.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::sim {

// What the per-unit figures (busy, tiles, imbalance) are counted over: the hardware that runs
// tiles side by side. A persistent CTA is such a unit. A transient CTA is not: the grid launches
// one per tile (thousands, most idle for nearly all of the kernel), so per-CTA figures would say
// "min busy 0, imbalance 7" about a perfectly even schedule; its tiles are counted per resident
// slot: the events' sm_id names the SM, and an SM that ran k tiles at once has k slots (each tile
// takes the lowest slot of its SM free at its start).
enum class ExecutionUnit { Cta, Slot };

struct Metrics {
  double makespan_us = 0;    // latest end (the kernel's duration; every trace starts at 0)
  double total_busy_us = 0;  // sum over events of (end - start)
  // Lower bound on any schedule of these tiles: max(total_busy / concurrent CTAs, longest tile).
  double bound_us = 0;
  double efficiency = 0;  // bound / makespan, in (0, 1]; 1 means no schedule could do better
  // Per execution unit (see `unit`): every launched CTA, or every slot/SM of a transient trace.
  ExecutionUnit unit = ExecutionUnit::Cta;
  std::size_t unit_count = 0;
  double busy_min_us = 0, busy_mean_us = 0, busy_max_us = 0;
  double tiles_min = 0, tiles_mean = 0, tiles_max = 0;
  double imbalance = 0;  // busy_max / busy_mean (1 = perfectly even)
  std::size_t tile_count = 0;
  std::size_t launched_ctas = 0;
  // CTAs that run at once: min(launched_ctas, workload.resident_ctas), the resident slots the
  // trace records (a larger grid runs in waves). A trace that records none (resident_ctas 0):
  // every launched persistent CTA, or the transient slots its events show. bound_us uses it.
  std::size_t concurrent_ctas = 0;
};

// Transient traces are counted per slot when every event has an sm_id >= 0; the units are
// max(concurrent_ctas, slots the events show) so that idle slots count as idle. A transient
// trace without SM ids (written before they were recorded) falls back to per-CTA figures.
Metrics compute_metrics(const Trace& t);

// The unit compute_metrics counts per (and pictures draw a row per), without its per-unit sums.
ExecutionUnit execution_unit(const Trace& t);

// How long a tile kept its CTA busy.
inline double busy_us(const TraceEvent& e) {
  return e.end_us - e.start_us;
}

// What one CTA did: its busy time (sum over its tiles) and how many tiles it processed.
struct CtaLoad {
  double busy_us = 0;
  std::size_t tiles = 0;
};

// Every CTA that processed at least one tile, by CTA id.
std::map<u32, CtaLoad> cta_loads(const Trace& t);

// The middle value (the mean of the two middle ones for an even count); 0 for no values.
double median(std::vector<double> values);

}  // namespace tilesched::sim
