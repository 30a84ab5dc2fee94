// Does a measured trace follow the schedule the simulator predicts? One check for the GPU test
// suite, the golden-data replay and `tilesched run`.
#pragma once

#include <string>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::sim {

// One sentence per difference; empty when `measured` follows `model` (normally sim::replay of
// the same workload):
// - the same number of launched CTAs;
// - static schedulers (tile, transient): each CTA's sequence of tiles (index, offset, head,
//   prompt, rows, KV blocks, step) equals the model's;
// - queued: the fetch order depends on timing, so the same set of tiles, each exactly once, in an
//   order consistent with the counter (a CTA's first C indices are its static one, every later
//   index comes from the counter and so exceeds the one before).
std::vector<std::string> schedule_differences(const Trace& model, const Trace& measured);

}  // namespace tilesched::sim
