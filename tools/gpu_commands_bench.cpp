// `tilesched bench`: the performance grid of docs/spec.md §9 (bf16, hidden 2048, batch x seq =
// 16384 tokens, d 64/128/256, causal and not), each point timed with CUDA events; the median per
// point, its TFLOP/s and, at d = 128, what recording a trace costs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/errors.hpp"
#include "cuda_driver.hpp"
#include "gpu_commands.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "viz/scheduler_choice.hpp"

namespace tilesched::tools {
namespace {

constexpr u32 kTokens = 16384;  // batch x seq of every point
constexpr u32 kHidden = 2048;   // heads x head dim

void require(const gpu::Status& s) {
  if (!s) throw std::runtime_error(s.message);
}

// Exactly the (query, key) pairs a mask leaves: FLOPs = 4 * pairs * heads * head_dim.
double attention_flops(const Workload& w) {
  double pairs = 0;
  for (u32 b = 0; b < w.batch_size(); ++b) {
    const double q = w.q_lens[b], k = w.key_len(b);
    // Causal: row i sees min(k, i + k - q + 1) keys (bottom-right aligned, k >= q), a trapezoid.
    pairs += w.mask == Mask::None ? q * k : q * (k - q) + q * (q + 1) / 2;
  }
  return 4.0 * pairs * w.num_q_heads * w.head_dim;
}

std::string today_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

// One point of the grid. Dense tiles cost the same, so a static stride is balanced. Causal tiles
// differ by up to seq/BN blocks, so a dynamic scheduler balances them: `causal_scheduler`, or if
// unset the candidate the simulator predicts fastest (`note` then says the predictions). The
// options give the schedulers, BM, the dense points' CTAs and the L2 sections.
Workload grid_point(u32 d, u32 seq, bool causal, const BenchCommandOptions& options,
                    std::string& note) {
  const std::optional<SchedulerKind>& causal_scheduler = options.causal_scheduler;
  Workload w;
  if (options.l2_bytes) w.l2_bytes = *options.l2_bytes;
  if (options.l2_min_rounds) w.l2_min_rounds = *options.l2_min_rounds;
  w.padded = true;
  w.q_lens.assign(kTokens / seq, seq);
  w.num_q_heads = w.num_kv_heads = kHidden / d;
  w.head_dim = d;
  w.mask = causal ? Mask::Causal : Mask::None;
  // The workload's BN only counts KV blocks (traces, the replay); the kernel tiles keys by its own
  // (gpu::recommended_block_n: at d = 256, 64 on short rows, else 80). The built-in cost table
  // counts blocks of 128 keys (its block_n, the BN of every trace it was fitted on): the replay
  // costs the grid in those.
  w.block_n = 128;
  w.scheduler = causal ? causal_scheduler.value_or(SchedulerKind::Queued) : options.dense_scheduler;
  // The splitting kinds split tiles in the kernel's KV blocks, so they count them in its BN.
  if (splits_tiles(w.scheduler)) w.block_n = gpu::kernel_block_n(d);
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  // The tile height (given, or the simulator's pick for that scheduler) and the device's CTAs.
  const auto prepare = [&](Workload& x) {
    if (options.block_m != 0)
      x.block_m = options.block_m;
    else
      choose_block_m(x, cost, viz::CtaOrigin::Device);
    require(gpu::resident_ctas(x, x.num_ctas));
    x.resident_ctas = x.num_ctas;
  };
  note.clear();
  if (!causal || causal_scheduler) {
    prepare(w);
    if (!causal && options.dense_ctas_by_waves && w.scheduler == SchedulerKind::Tile) {
      const u32 tiles = static_cast<u32>(w.valid_tile_count());  // validate(): fits 32 bits
      w.num_ctas = w.resident_ctas = ceil_div(tiles, ceil_div(tiles, w.num_ctas));
    }
    return w;
  }
  const viz::SchedulerChoice c =
      viz::predict_scheduler(w, viz::kCausalSchedulerCandidates, cost, prepare);
  if (!c.chosen()) throw std::runtime_error("choosing the causal scheduler: " + c.why_not);
  note = viz::describe_scheduler_choice(c);
  return c.workload;
}

// Median milliseconds of one launch on random inputs, without trace recording, after the idle
// pause and the heating launches. A planned scheduler walks the plan the simulator builds with the
// workload's cost profile. `launch`: the launch that was timed.
double median_ms(const Workload& w, const BenchCommandOptions& options, gpu::LaunchPlan& launch) {
  gpu::DeviceProblem dev;
  require(dev.create(w, /*record_trace=*/false, sim::plan_schedule(w)));
  dev.set_counter_reuse(!options.reset_counter_every_launch);
  require(dev.fill_random(w.q_lens.front() * 31 + w.head_dim));
  require(dev.synchronize());
  if (options.cooldown_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(options.cooldown_ms));
  const auto heat_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.heat_ms);
  while (std::chrono::steady_clock::now() < heat_until) {
    for (int i = 0; i < 4; ++i) require(dev.run());
    require(dev.synchronize());
  }
  std::vector<float> ms;
  require(dev.time(options.warmup, options.iterations, ms));
  launch = dev.launch_plan();
  return sim::median(std::vector<double>(ms.begin(), ms.end()));
}

// What recording the trace costs, in percent: the same buffers and inputs launched back to back in
// pairs, one launch of each pair recording and one not, in a random order per pair, the ratio of
// the two kinds' medians. (Rounds of several launches each, alternating, measured 4-6 % at one
// point in one process and 0.1-0.4 % at the same point in the next, with the same binary: most
// likely clock changes lining up with the rounds; docs/gpu-performance.md, "How the two sides are
// timed".)
double trace_overhead_pct(const Workload& w, const BenchCommandOptions& options) {
  gpu::DeviceProblem dev;
  require(dev.create(w, /*record_trace=*/true, sim::plan_schedule(w)));
  dev.set_counter_reuse(!options.reset_counter_every_launch);
  require(dev.fill_random(w.q_lens.front() * 31 + w.head_dim));
  std::vector<float> plain, traced;
  require(dev.time_tracing_pairs(std::max(1, options.warmup), 1, plain, traced));  // warm-up
  require(
      dev.time_tracing_pairs(2 * options.iterations, w.q_lens.front() * 7919u + 1, plain, traced));
  return (sim::median(std::vector<double>(traced.begin(), traced.end())) /
              sim::median(std::vector<double>(plain.begin(), plain.end())) -
          1.0) *
         100.0;
}

// Times one point, prints its row and returns it as JSON.
nlohmann::json bench_point(const Workload& w, const BenchCommandOptions& options) {
  gpu::LaunchPlan launch;
  const double med = median_ms(w, options, launch);
  const double flops = attention_flops(w);
  const double tflops = flops / (med * 1e-3) / 1e12;
  // Trace overhead: the same launch recording every tile (d = 128 only, to keep it short).
  std::optional<double> trace_pct;
  if (w.head_dim == 128) trace_pct = trace_overhead_pct(w, options);
  const bool causal = w.mask == Mask::Causal;
  const u32 kernel_bn = launch.block_n;
  const u32 cluster = launch.cluster_ctas;
  fmt::print("{:>5} {:>6} {:>5} {:>4} {:>7} {:>4} {:>4} {:<14} {:>5} {:>10.3f} {:>9.1f} {:>9}\n",
             w.head_dim, w.q_lens.front(), w.batch_size(), w.num_q_heads, causal ? "yes" : "no",
             w.block_m, kernel_bn, strategy_name(w), w.num_ctas, med, tflops,
             trace_pct ? fmt::format("{:.2f}", *trace_pct) : "-");
  if (cluster > 1)
    fmt::print("      clusters of {} CTAs sharing each K/V load (TMA multicast)\n", cluster);
  std::fflush(stdout);
  nlohmann::json row = {{"d", w.head_dim},
                        {"seq", w.q_lens.front()},
                        {"batch", w.batch_size()},
                        {"heads", w.num_q_heads},
                        {"causal", causal},
                        {"block_m", w.block_m},
                        {"kernel_block_n", kernel_bn},
                        {"l2_bytes", w.l2_bytes},
                        {"l2_min_rounds", w.l2_min_rounds},
                        {"scheduler", strategy_name(w)},
                        {"num_ctas", w.num_ctas},
                        {"cluster_ctas", cluster},
                        {"config", launch.config},
                        {"median_ms", med},
                        {"flops", flops},
                        {"tflops", tflops}};
  if (trace_pct) row["trace_overhead_pct"] = *trace_pct;
  return row;
}

}  // namespace

int bench_gpu_command(const BenchCommandOptions& options) {
  const std::vector<u32> head_dims =
      options.head_dims.empty() ? std::vector<u32>{64, 128, 256} : options.head_dims;
  // A BM the kernel does not run at one of the head dims is refused before the device is touched.
  if (options.block_m != 0)
    for (u32 d : head_dims) {
      const std::vector<u32> bms = gpu::kernel_block_ms(d);
      if (std::find(bms.begin(), bms.end(), options.block_m) == bms.end())
        throw cli::UsageError(
            fmt::format("--bm {}: the kernel runs tiles of {} query rows at head dim {}",
                        options.block_m, fmt::join(bms, " or "), d));
    }
  require_cuda_driver();
  std::string device;
  int sms = 0;
  require(gpu::device_info(device, sms));
  const std::vector<u32> seqs = !options.seq_lens.empty() ? options.seq_lens
                                : options.quick
                                    ? std::vector<u32>{1024, 8192}
                                    : std::vector<u32>{512, 1024, 2048, 4096, 8192, 16384};
  fmt::print(
      "device: {} ({} SMs); bf16, hidden {}, batch x seq = {} tokens; median of {} after {} "
      "warm-up, {} ms idle and {} ms of launches before each point\n",
      device, sms, kHidden, kTokens, options.iterations, options.warmup, options.cooldown_ms,
      options.heat_ms);
  if (options.l2_bytes)
    fmt::print("planned schedulers' L2 sections by l2_bytes = {}{}\n", *options.l2_bytes,
               *options.l2_bytes == 0 ? " (one section)" : "");
  if (options.l2_min_rounds)
    fmt::print("planned schedulers' L2 sections of at least {} rounds\n", *options.l2_min_rounds);
  fmt::print("{:>5} {:>6} {:>5} {:>4} {:>7} {:>4} {:>4} {:<14} {:>5} {:>10} {:>9} {:>9}\n", "d",
             "seq", "batch", "H", "causal", "BM", "BN", "scheduler", "CTAs", "median ms", "TFLOP/s",
             "trace %");
  nlohmann::json rows = nlohmann::json::array();
  for (u32 d : head_dims)
    for (u32 seq : seqs)
      for (bool causal : {false, true}) {
        std::string choice;
        const Workload w = grid_point(d, seq, causal, options, choice);
        nlohmann::json row = bench_point(w, options);
        if (!choice.empty()) {
          fmt::print("      scheduler: {}\n", choice);
          row["scheduler_choice"] = choice;
        }
        rows.push_back(row);
      }
  if (options.out_json.empty()) return 0;
  const nlohmann::json doc = {{"device", device},
                              {"date", today_utc()},
                              {"dtype", "bf16"},
                              {"warmup", options.warmup},
                              {"iterations", options.iterations},
                              {"cooldown_ms", options.cooldown_ms},
                              {"heat_ms", options.heat_ms},
                              {"rows", rows}};
  sim::write_file_atomically(options.out_json, doc.dump(1) + "\n");
  fmt::print("wrote {}\n", options.out_json);
  return 0;
}

}  // namespace tilesched::tools
