// `tilesched run`: one workload on the device, checked against the simulator (schedule, coverage,
// every tile's O and LSE), the measured trace and its pictures written, and the measured figures
// printed next to the predicted ones.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_driver.hpp"
#include "gpu_commands.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "viz/block_m_choice.hpp"
#include "viz/metrics_table.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::tools {
namespace {

constexpr std::size_t kCtasShown = 24;  // rows of the per-CTA table; the rest are in trace.json

// A device failure ends the command: main prints it as one line and exits 1.
void require(const gpu::Status& s) {
  if (!s) throw std::runtime_error(s.message);
}

void print_first(const std::vector<std::string>& lines, std::size_t n) {
  for (std::size_t i = 0; i < lines.size() && i < n; ++i) fmt::print("  {}\n", lines[i]);
}

// The measured run against the model: schedule, coverage, outputs. True when all three hold.
bool print_checks(const Trace& predicted, const sim::AttentionInputs& in,
                  const gpu::DeviceRun& run) {
  const std::vector<std::string> diffs = sim::schedule_differences(predicted, run.trace);
  const char* verdict = diffs.empty() ? "identical to the simulator's" : "DIFFERS";
  if (takes_from_counter(run.trace.workload.scheduler))
    fmt::print("schedule: {}, tile set {} ({} tiles)\n", to_string(run.trace.workload.scheduler),
               verdict, run.trace.events.size());
  else
    fmt::print("schedule: every CTA's tile sequence {}\n", verdict);
  print_first(diffs, 10);
  const bool covered = run.o_unwritten == 0 && run.lse_unwritten == 0;
  if (!covered)
    fmt::print("coverage: {} elements of O and {} of LSE never written\n", run.o_unwritten,
               run.lse_unwritten);
  const sim::OutputCheck out =
      sim::check_outputs(run.trace, in, sim::from_bf16_bits(run.o_bits), run.lse);
  print_first(out.failures, 5);
  fmt::print("output: {} tiles vs the simulator, worst relative error {:.3g}, {} over {:.0e}\n",
             out.tiles, out.worst_error, out.failures.size(), sim::kTileTolerance);
  return diffs.empty() && covered && out.failures.empty();
}

// The figures of both traces side by side, then each CTA's tiles and busy time.
void print_measured_and_predicted(const Trace& measured, const Trace& predicted) {
  const viz::MetricRows m = viz::metric_rows(sim::compute_metrics(measured));
  const viz::MetricRows p = viz::metric_rows(sim::compute_metrics(predicted));
  fmt::print("\n{:<16} {:<36} {}\n", "", "measured", "predicted");
  for (std::size_t i = 0; i < m.size() && i < p.size(); ++i)
    fmt::print("{:<16} {:<36} {}\n", m[i].first, m[i].second, p[i].second);
  const auto measured_loads = sim::cta_loads(measured), predicted_loads = sim::cta_loads(predicted);
  fmt::print("\n{:>6} {:>6} {:>14} {:>14}\n", "CTA", "tiles", "measured us", "predicted us");
  std::size_t shown = 0;
  for (const auto& [cta, load] : measured_loads) {
    if (++shown > kCtasShown) {
      fmt::print("   ... {} more CTAs in trace.json\n", measured_loads.size() - kCtasShown);
      break;
    }
    const auto it = predicted_loads.find(cta);
    fmt::print("{:>6} {:>6} {:>14.1f} {:>14.1f}\n", cta, load.tiles, load.busy_us,
               it == predicted_loads.end() ? 0.0 : it->second.busy_us);
  }
}

// The CTAs the device runs at once for `w` (its kernel's occupancy).
u32 device_resident_ctas(const Workload& w) {
  u32 n = 0;
  require(gpu::resident_ctas(w, n));
  return n;
}

}  // namespace

std::string choose_block_m(Workload& w, const sim::CostModel& cost, viz::CtaOrigin ctas_origin) {
  const viz::BlockMChoice c =
      viz::predict_block_m(w, gpu::kernel_block_ms(w.head_dim), cost, device_resident_ctas,
                           ctas_origin == viz::CtaOrigin::Device);
  if (c.block_m != 0) {
    w.block_m = c.block_m;
    return c.predicted_us.empty()
               ? std::string()
               : fmt::format("tile height: {}, the simulator's pick (--bm to choose)",
                             viz::describe_block_m_choice(c));
  }
  const u32 bm = gpu::recommended_block_m(w);
  if (bm == 0) return "";
  w.block_m = bm;
  return fmt::format("tile height: BM {}, by the kernel's rule of keys per query row ({})", bm,
                     c.why_not);
}

bool gpu_half_built() {
  return true;
}

int run_gpu_command(const RunCommandOptions& options) {
  Workload w = options.workload;
  // Refused before the device is touched: a decode tile the kernel's tiles cannot hold.
  require(gpu::check_kernel_support(w));
  require_cuda_driver();
  std::string device;
  int sms = 0;
  require(gpu::device_info(device, sms));
  // The simulator's cost model predicts which tile height runs the workload fastest, and plans
  // the planned schedulers' lists, on the GPU as in the replay.
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  const std::string block_m_note =
      options.block_m_given ? std::string() : choose_block_m(w, cost, options.ctas_origin);
  // The device decides how many CTAs run at once; the trace records it, and C defaults to it.
  u32 device_ctas = 0;
  require(gpu::resident_ctas(w, device_ctas));
  w.resident_ctas = device_ctas;
  if (options.ctas_origin == viz::CtaOrigin::Device) w.num_ctas = device_ctas;
  if (std::string m = w.validate(); !m.empty()) throw std::runtime_error("invalid workload: " + m);
  const u32 per_sm = sms > 0 ? device_ctas / u32(sms) : 1;
  const std::string rule = viz::device_cta_rule(u32(sms), per_sm, w.head_dim, device);
  const bool transient = w.scheduler == SchedulerKind::Transient;  // runs what the device holds
  fmt::print("device: {} ({} SMs)\nworkload: {}, {} sequences, Hq {}, Hkv {}, d {}, {}, BM {}\n{}\n",
             device, sms, strategy_name(w), w.batch_size(), w.num_q_heads, w.num_kv_heads,
             w.head_dim, to_string(w.mask), w.block_m,
             transient ? viz::describe_cta_choice(true, viz::CtaOrigin::Device, device_ctas, rule)
                       : viz::describe_cta_choice(false, options.ctas_origin, w.num_ctas, rule));
  if (!block_m_note.empty()) fmt::print("{}\n", block_m_note);

  const sim::AttentionInputs in = sim::make_inputs(w, options.seed);
  const gpu::DeviceInputs bits{sim::to_bf16_bits(in.q), sim::to_bf16_bits(in.k),
                               sim::to_bf16_bits(in.v)};
  gpu::DeviceRun run;
  // The warm-up launch keeps module load and first touches out of the measured trace.
  const gpu::ClusterPolicy clusters = options.clusters == "never"    ? gpu::ClusterPolicy::Never
                                       : options.clusters == "always" ? gpu::ClusterPolicy::Always
                                                                      : gpu::ClusterPolicy::Auto;
  require(gpu::run_recorded(w, bits, /*warm_up=*/true, run, sim::plan_schedule(w, cost), 0,
                            clusters));
  // The launch as plan_launch decided it (clusters: --clusters).
  fmt::print("{}\n", run.launch.describe());

  const Trace predicted = sim::replay(w, cost);
  const bool ok = !options.check || print_checks(predicted, in, run);
  const viz::ScheduleOutputs out = viz::write_schedule_outputs(run.trace, options.out_dir);
  sim::write_trace(options.out_dir + "/predicted_trace.json", predicted);
  fmt::print("wrote {}, {}, {} and {}/predicted_trace.json\n", out.html_path, out.trace_path,
             out.perfetto_path, options.out_dir);
  print_measured_and_predicted(run.trace, predicted);
  fmt::print("\n{}\n", ok ? "run: OK" : "run: FAILED");
  return ok ? 0 : 1;
}

}  // namespace tilesched::tools
