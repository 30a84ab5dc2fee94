// The GPU-vs-simulator check shared by the test suite and the golden-data recorder: run one
// workload on the device and hold its trace and outputs against the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::gpu_test {

struct CheckOutcome {
  std::vector<std::string> failures;  // empty when everything matched
  gpu::DeviceRun run;                 // the measured trace and outputs
  double worst_tile_error = 0;        // max over tiles of max(o_rel, lse_rel)
  std::size_t tiles = 0;
};

// gpu::run_recorded on sim::make_inputs(w, seed), then: every element written (poison count),
// sim::schedule_differences against sim::replay, and sim::check_outputs. With `warm_up` the
// checked launch is the second on its buffers: a counter scheduler's then runs on the counter the
// first left at its start, with no reset kernel (AttentionArgs::launch_ready). `kernel_block_n`:
// the kernel's K/V block (AttentionArgs::kernel_block_n; 0, the launch's choice); `clusters` as
// AttentionArgs::clusters.
CheckOutcome check_workload(const Workload& w, std::uint64_t seed, bool warm_up = false,
                            u32 kernel_block_n = 0,
                            gpu::ClusterPolicy clusters = gpu::ClusterPolicy::Auto);
// The same check on given inputs (bf16-rounded values in the layouts of sim::AttentionInputs).
CheckOutcome check_workload(const Workload& w, const sim::AttentionInputs& inputs,
                            bool warm_up = false, u32 kernel_block_n = 0,
                            gpu::ClusterPolicy clusters = gpu::ClusterPolicy::Auto);

// One line describing a workload and the kernel's K/V block (for failure messages and logs).
std::string describe(const Workload& w, u32 kernel_block_n = 0);

}  // namespace tilesched::gpu_test
