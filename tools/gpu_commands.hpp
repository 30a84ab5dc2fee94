// The tool's GPU subcommands (`tilesched run`, `tilesched bench`) and the device that
// `tilesched suite-run` measures on. Implemented in gpu_commands_run.cpp, gpu_commands_bench.cpp
// and gpu_commands_suite.cpp when the GPU half is built, and by gpu_commands_unavailable.cpp
// otherwise (which says so and exits non-zero).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"
#include "viz/descriptions.hpp"

namespace tilesched::tools {

struct RunCommandOptions {
  Workload workload;
  // Who chose workload.num_ctas; CtaOrigin::Device: the device's SMs x CTAs per SM, filled in.
  viz::CtaOrigin ctas_origin = viz::CtaOrigin::Device;
  std::uint64_t seed = 1;
  std::string out_dir = "out";  // measured trace + pictures are written here
  bool check = true;            // compare against the simulator tile by tile
  // --bm or a workload file gave BM: keep it (a BM the kernel does not run is refused); otherwise
  // the workload takes the kernel's tile height the simulator predicts fastest (choose_block_m).
  bool block_m_given = false;
  // Whether the tile kind's kernel may run in clusters of two CTAs (gpu::ClusterPolicy by name):
  // auto, never or always.
  std::string clusters = "auto";
};

struct BenchCommandOptions {
  std::string out_json;  // where to write the results table as JSON ("" = none)
  bool quick = false;    // a reduced grid
  // Only these head dims / sequence lengths of the grid (empty = all of them).
  std::vector<u32> head_dims;
  std::vector<u32> seq_lens;
  int warmup = 3;
  int iterations = 20;
  // Idle milliseconds before each point's timing. A GPU under a power cap lowers its clocks after
  // some hundred milliseconds of back-to-back launches: a pause before every point lets each one
  // (and cuDNN's, timed the same way by tools/bench/gpu_bench.py) start from the same state.
  int cooldown_ms = 0;
  // Milliseconds of back-to-back launches after the pause and before the warm-up: the sustained
  // state (clocks as low as the power cap takes them), against the pause's fresh one.
  int heat_ms = 0;
  // The scheduler of the causal points; unset (auto): per point, the one of
  // viz::kCausalSchedulerCandidates the simulator predicts fastest (viz::predict_scheduler, each
  // candidate at its own tile height). Dense points use the static stride: their tiles cost the
  // same.
  std::optional<SchedulerKind> causal_scheduler;
  // The scheduler of the dense points: tile, or split_tail (their tiles cost the same; split_tail
  // also splits the last partial wave's KV blocks over every CTA).
  SchedulerKind dense_scheduler = SchedulerKind::Tile;
  // Dense points with tile: the fewest CTAs that take as many waves as the device's CTA count
  // (C' = ceil(N / ceil(N / C)), e.g. 128 instead of 132 for 2048 tiles: the same 16 waves).
  // Measured +0.3..+1.1 % on an NVIDIA H200, 2026-12-01 (docs/gpu-performance.md, "Dense points on fewer CTAs"): a tile runs
  // faster with fewer SMs busy, and the waves take as many tile times. false: the device's C.
  bool dense_ctas_by_waves = true;
  // Tile height (BM) of every point; 0: per point, the one the simulator predicts fastest
  // (choose_block_m).
  u32 block_m = 0;
  // The L2 size the planned schedulers (lpt, lpt_queued) build their L2 sections by
  // (Workload::l2_bytes, docs/schedulers.md); unset: the workload's default.
  std::optional<std::uint64_t> l2_bytes;
  // The fewest rounds of C tiles in one of those sections (Workload::l2_min_rounds); unset: 2.
  std::optional<u32> l2_min_rounds;
  // Whether a one-thread kernel sets a counter scheduler's counter before every launch (as for a
  // caller that passes no launch_done), instead of only before the first: DeviceProblem's launches
  // otherwise leave the counter at its start for the next (AttentionArgs::launch_ready).
  bool reset_counter_every_launch = false;
};

// Both return the process exit code; a device or file failure is thrown as std::runtime_error.
int run_gpu_command(const RunCommandOptions& options);
int bench_gpu_command(const BenchCommandOptions& options);

// What one workload gave when measured `repeats` times in a row.
struct MeasuredRun {
  std::vector<Trace> repeats;           // one measured trace per launch, in launch order
  std::uint64_t unwritten_outputs = 0;  // outputs of O and LSE the first launch never wrote
};

// Where `tilesched suite-run` measures: the GPU, or the simulator standing in for one (a dry run).
class SuiteDevice {
 public:
  virtual ~SuiteDevice() = default;
  virtual std::string name() const = 0;    // device name, or the cost profile
  virtual std::string source() const = 0;  // "gpu" or "sim", as in traces
  virtual u32 multiprocessors() const = 0;
  // CTAs of the kernel the device runs at once for `w` (SMs x CTAs per SM at its head_dim).
  virtual u32 resident_ctas(const Workload& w) const = 0;
  // Runs `w` (resident_ctas set to the device's) `repeats` times with trace recording, after one
  // unrecorded warm-up launch; throws std::runtime_error on a device failure.
  virtual MeasuredRun measure(const Workload& w, int repeats) = 0;
};

// The current GPU (throws std::runtime_error without the GPU half or a device).
std::unique_ptr<SuiteDevice> open_gpu_suite_device();

// Whether this build has the GPU half.
bool gpu_half_built();

// With the GPU half: sets w.block_m to the kernel's tile height at w's head dim that the
// simulator predicts fastest with `cost` (viz::predict_block_m; C from the device when
// `ctas_origin` says so), or, where `cost` cannot tell, by gpu::recommended_block_m. Returns a
// line saying what was picked and why ("" when the head dim has one tile height).
std::string choose_block_m(Workload& w, const sim::CostModel& cost, viz::CtaOrigin ctas_origin);

}  // namespace tilesched::tools
