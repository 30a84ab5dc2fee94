// The GPU-vs-simulator check shared by the test suite and the golden-data recorder: run one
// workload on the device and hold its trace and outputs against the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/gpu/attention.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::gpu_test {

struct CheckOutcome {
  std::vector<std::string> failures;  // empty when everything matched
  Trace gpu_trace;
  std::vector<std::uint16_t> o_bits;
  std::vector<float> lse;
  double worst_tile_error = 0;  // max over tiles of max(o_rel, lse_rel)
  std::size_t tiles = 0;
};

// Schedule identity (static: each CTA's sequence equals sim::replay's; queued: same tile set, each
// once, fetch order consistent with the counter), every element written (poison count), and every
// tile's O/LSE within `tolerance` of sim::tiled_attention on the same bf16 inputs.
CheckOutcome check_workload(const Workload& w, std::uint64_t seed, double tolerance = 1e-2);

// One line describing a workload (for failure messages and logs).
std::string describe(const Workload& w);

}  // namespace tilesched::gpu_test
