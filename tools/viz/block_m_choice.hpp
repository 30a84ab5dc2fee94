// The tile height (BM) `tilesched run` and `bench` give a workload whose BM nobody chose: of the
// kernel's tile heights at its head dim, the one the simulator predicts fastest.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::viz {

struct BlockMChoice {
  u32 block_m = 0;  // the pick; 0 when the simulator cannot choose (why_not says why)
  // Every candidate BM with its predicted makespan in µs, in the order given (empty when there
  // was one candidate, or none could be replayed).
  std::vector<std::pair<u32, double>> predicted_us;
  std::string why_not;
};

// A later candidate must be predicted faster than the pick so far by more than this share to
// replace it: closer predictions are a tie, within the replay's error (1-3 % on the H200's
// measurements, docs/sim-cost-model.md), and a tie keeps the earlier (shorter) tile, which wastes
// fewer rows where a sequence ends inside a tile.
inline constexpr double kBlockMTieMargin = 0.005;

// Replays `w` at each of `block_ms` (ascending) with `cost` and picks the least predicted
// makespan (ties within kBlockMTieMargin: the earlier). Each candidate's resident CTAs come from
// `resident` (its kernel's occupancy on the device); with `ctas_from_device` its num_ctas is that
// count too, else the workload's own. One candidate is picked without a replay. block_m 0 with
// why_not when `block_ms` is empty or `cost` has no coefficients measured at one of them
// (CostModel::measured_at): a table that costs every height alike would favour the tallest tile.
BlockMChoice predict_block_m(const Workload& w, const std::vector<u32>& block_ms,
                             const sim::CostModel& cost,
                             const std::function<u32(const Workload&)>& resident,
                             bool ctas_from_device);

// "BM 192 (predicted 1655 us; BM 128: 1859 us)", or "" for a choice without predictions.
std::string describe_block_m_choice(const BlockMChoice& c);

}  // namespace tilesched::viz
