// One attention problem's device buffers (Q, K, V, O, LSE, row offsets, queue counter, trace) for
// tests, the tool and the benchmark: upload inputs, poison outputs, run, count what was never
// written, time, download. Thrust containers live behind the pimpl so includers need no CUDA.
// run_recorded() is the sequence every check of the GPU against the model uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "tilesched/gpu/attention.hpp"
#include "tilesched/schedule_plan.hpp"

namespace tilesched::gpu {

class DeviceProblem {
 public:
  DeviceProblem();
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;

  // Allocates every buffer for `w` (validated first) and uploads its schedule plan, which a
  // planned scheduler needs (sim::plan_schedule builds the simulator's); inputs are left unset.
  // A paged workload (page_size > 0) gets a cache of exactly the pages its sequences fill, in
  // a shuffled order (upload scatters K and V into them).
  // The launch is planned here, once (plan_launch), under `clusters`.
  Status create(const Workload& w, bool record_trace, const SchedulePlan& plan = {},
                ClusterPolicy clusters = ClusterPolicy::Auto);
  // The exact bf16 bits of Q, K, V in the layouts of attention.hpp.
  Status upload(const std::vector<std::uint16_t>& q, const std::vector<std::uint16_t>& k,
                const std::vector<std::uint16_t>& v);
  // Uniform values in [-1, 1] rounded to bf16, generated on the device (for large benchmarks).
  Status fill_random(std::uint64_t seed);
  // O := all-ones bits (a bf16 NaN no real output has), LSE := NaN.
  Status poison_outputs();

  AttentionArgs args() const;  // arguments for attention_forward over these buffers
  // With buffers created to record a trace: whether the next launches record it (the benchmark
  // alternates the two over the same buffers and inputs to measure what recording costs).
  void set_tracing(bool on) { tracing_ = on; }
  void set_softmax_scale(float s) { scale_ = s; }
  void set_stream(void* stream) { stream_ = stream; }
  // The kernel's K/V block (AttentionArgs::kernel_block_n): 0, the default, lets the launch pick.
  // Before create(), which plans the launch with it.
  void set_kernel_block_n(u32 bn) { kernel_block_n_ = bn; }
  // The launch every run() makes (plan_launch's, from create()).
  const LaunchPlan& launch_plan() const { return launch_plan_; }
  // Whether launches pass launch_done (the counter's second word), so that from the second on no
  // reset kernel runs (the default); off: every launch resets the counter and the trace's count,
  // as for a caller without launch_done (the benchmark's `--counter-reset every-launch`).
  void set_counter_reuse(bool on) {
    launch_reuse_ = on;
    launch_ready_ = false;  // a launch without launch_done left its words where they ended
  }
  Status run();          // launch_planned(args(), launch_plan())
  Status synchronize();  // waits and reports any error from the kernel

  // Elements of O still holding the poison pattern, and LSE entries still NaN (counted on the
  // device with thrust::count_if).
  Status count_unwritten(std::uint64_t& o_unwritten, std::uint64_t& lse_unwritten);
  Status download(std::vector<std::uint16_t>& o_bits, std::vector<float>& lse);
  Status download_trace(Trace& out) const;
  Status download_raw_trace(std::vector<DeviceTraceEvent>& out) const;

  // Times `iterations` launches after `warmup` with CUDA events, one pair per launch; returns the
  // per-launch milliseconds.
  Status time(int warmup, int iterations, std::vector<float>& ms);

  // With buffers created to record a trace: times `pairs` pairs of launches back to back, one
  // launch of each pair recording the trace and one not, in an order drawn per pair from `seed`
  // (so that no periodic change of the GPU's clock can line up with one of the two), one event
  // pair per launch. Tracing is left off.
  Status time_tracing_pairs(int pairs, std::uint64_t seed, std::vector<float>& plain_ms,
                            std::vector<float>& traced_ms);

  const Workload& workload() const { return workload_; }

 private:
  // `launches` launches back to back, each between two CUDA events, with recording set per launch
  // from `tracing` when given; the per-launch milliseconds.
  Status time_launches(int launches, const std::vector<bool>* tracing, std::vector<float>& ms);
  // A paged cache's page-table row length: the most pages of a sequence (at least 1).
  u32 page_stride() const { return std::max<u32>(workload_.max_pages_per_seq(), 1); }

  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
  Workload workload_;
  PlanArrays plan_{};  // the plan's counts, and its arrays' device copies in buffers_
  TraceRecorder recorder_;
  bool record_trace_ = false;
  bool tracing_ = true;
  // Whether a launch has left the counter at its start and the trace's count at 0
  // (AttentionArgs::launch_ready): from the second run on, no reset kernel runs before the
  // attention kernel.
  bool launch_ready_ = false;
  bool launch_reuse_ = true;
  float scale_ = 0.f;
  u32 kernel_block_n_ = 0;
  ClusterPolicy clusters_ = ClusterPolicy::Auto;
  LaunchPlan launch_plan_;
  void* stream_ = nullptr;
};

// Q, K and V as the exact bf16 bits of the layouts of attention.hpp.
struct DeviceInputs {
  std::vector<std::uint16_t> q, k, v;
};

// What one recorded run gives back.
struct DeviceRun {
  std::vector<std::uint16_t> o_bits;  // O as bf16 bits
  std::vector<float> lse;
  std::uint64_t o_unwritten = 0, lse_unwritten = 0;  // outputs still holding the poison
  Trace trace;                                       // measured (TraceRecorder::download)
  LaunchPlan launch;                                 // the launch that ran
};

// One run of `w` on `inputs`, recorded and checked for coverage: creates the buffers (with `plan`
// for a planned scheduler), uploads the inputs, launches once unrecorded first when `warm_up`
// (module load and first touches stay out of the measured trace), poisons the outputs, launches
// with trace recording, counts the outputs never written and downloads O, LSE and the trace.
// `kernel_block_n` as DeviceProblem::set_kernel_block_n, `clusters` as create's.
Status run_recorded(const Workload& w, const DeviceInputs& inputs, bool warm_up, DeviceRun& out,
                    const SchedulePlan& plan = {}, u32 kernel_block_n = 0,
                    ClusterPolicy clusters = ClusterPolicy::Auto);

}  // namespace tilesched::gpu
