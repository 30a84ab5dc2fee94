// The tool's GPU subcommands: `tilesched run` (one workload on the device, checked against the
// simulator, measured trace and pictures written) and `tilesched bench` (the performance grid of
// DESIGN.md, timed with CUDA events).
#include "gpu_commands.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilesched/gpu/attention.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::tools {
namespace {

constexpr double kTileTolerance = 1e-2;  // bf16 inputs and output, fp32 accumulation

int fail(const std::string& what) {
  std::fprintf(stderr, "tilesched: %s\n", what.c_str());
  return 1;
}

std::map<u32, std::pair<double, u32>> busy_by_cta(const Trace& t) {
  std::map<u32, std::pair<double, u32>> m;
  for (const auto& e : t.events) {
    m[e.cta].first += e.end_us - e.start_us;
    m[e.cta].second += 1;
  }
  return m;
}

// Exactly the (query, key) pairs a mask leaves: FLOPs = 4 * pairs * heads * head_dim.
double attention_flops(const Workload& w) {
  double pairs = 0;
  for (u32 b = 0; b < w.batch_size(); ++b) {
    const double q = w.q_lens[b], k = w.key_len(b);
    if (w.mask == Mask::None) {
      pairs += q * k;
    } else {
      // Row i sees min(k, i + k - q + 1) keys (bottom-right aligned, k >= q): a trapezoid.
      pairs += q * (k - q) + q * (q + 1) / 2;
    }
  }
  return 4.0 * pairs * w.num_q_heads * w.head_dim;
}

double median(std::vector<float> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string today_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

bool gpu_half_built() {
  return true;
}

int run_gpu_command(const RunCommandOptions& options) {
  const Workload& w = options.workload;
  if (std::string m = w.validate(); !m.empty()) return fail("invalid workload: " + m);
  std::string device;
  int sms = 0;
  if (gpu::Status s = gpu::device_info(device, sms); !s) return fail(s.message);
  std::printf("device: %s (%d SMs)\nworkload: %s, %u sequences, Hq %u, Hkv %u, d %u, %s\n",
              device.c_str(), sms, strategy_name(w).c_str(), w.batch_size(), w.num_q_heads,
              w.num_kv_heads, w.head_dim, to_string(w.mask));

  const sim::AttentionInputs in = sim::make_inputs(w, options.seed);
  gpu::DeviceProblem dev;
  Trace measured;
  std::vector<std::uint16_t> o_bits;
  std::vector<float> lse;
  std::uint64_t o_unwritten = 0, lse_unwritten = 0;
  gpu::Status st = dev.create(w, /*record_trace=*/true);
  if (st)
    st = dev.upload(sim::to_bf16_bits(in.q), sim::to_bf16_bits(in.k), sim::to_bf16_bits(in.v));
  if (st) st = dev.run();  // warm-up: module load and first-touch stay out of the measured trace
  if (st) st = dev.poison_outputs();
  if (st) st = dev.run();
  if (st) st = dev.count_unwritten(o_unwritten, lse_unwritten);
  if (st) st = dev.download(o_bits, lse);
  if (st) st = dev.download_trace(measured);
  if (!st) return fail(st.message);

  const Trace predicted = sim::replay(w);
  bool ok = true;
  if (options.check) {
    const std::vector<std::string> diffs = sim::schedule_differences(predicted, measured);
    if (w.scheduler == SchedulerKind::Queued)
      std::printf("schedule: queued, tile set %s (%zu tiles)\n",
                  diffs.empty() ? "identical to the simulator's" : "DIFFERS",
                  measured.events.size());
    else
      std::printf("schedule: every CTA's tile sequence %s\n",
                  diffs.empty() ? "identical to the simulator's" : "DIFFERS");
    for (std::size_t i = 0; i < diffs.size() && i < 10; ++i)
      std::printf("  %s\n", diffs[i].c_str());
    ok = ok && diffs.empty();
    if (o_unwritten || lse_unwritten) {
      std::printf("coverage: %llu elements of O and %llu of LSE never written\n",
                  static_cast<unsigned long long>(o_unwritten),
                  static_cast<unsigned long long>(lse_unwritten));
      ok = false;
    }
    const sim::AttentionResult ref = sim::tiled_attention(w, in, measured);
    std::vector<float> o(o_bits.size());
    for (std::size_t i = 0; i < o.size(); ++i) o[i] = sim::bf16_bits_to_float(o_bits[i]);
    double worst = 0;
    std::size_t bad = 0;
    for (const auto& e : measured.events) {
      const sim::TileError err = sim::tile_error(w, e, o, lse, ref.o, ref.lse);
      const double x = std::max(err.o_rel, err.lse_rel);
      if (err.has_nan || !(x <= kTileTolerance)) {
        if (++bad <= 5)
          std::printf(
              "  tile (prompt %u, head %u, offset %u) on CTA %u: O error %.3g, LSE error "
              "%.3g%s\n",
              e.prompt_idx, e.head_idx, e.prompt_offset, e.cta, err.o_rel, err.lse_rel,
              err.has_nan ? ", NaN" : "");
      }
      if (!std::isnan(x)) worst = std::max(worst, x);
    }
    std::printf("output: %zu tiles vs the simulator, worst relative error %.3g, %zu over %.0e\n",
                measured.events.size(), worst, bad, kTileTolerance);
    ok = ok && bad == 0;
  }

  try {
    const viz::ScheduleOutputs out = viz::write_schedule_outputs(measured, options.out_dir);
    sim::write_trace(options.out_dir + "/predicted_trace.json", predicted);
    std::printf("wrote %s, %s, %s and %s/predicted_trace.json\n", out.html_path.c_str(),
                out.trace_path.c_str(), out.perfetto_path.c_str(), options.out_dir.c_str());
  } catch (const std::exception& e) {
    return fail(e.what());
  }

  const sim::Metrics mm = sim::compute_metrics(measured), pm = sim::compute_metrics(predicted);
  std::printf("\n%-22s %12s %12s\n", "", "measured", "predicted");
  std::printf("%-22s %12.1f %12.1f\n", "makespan (us)", mm.makespan_us, pm.makespan_us);
  std::printf("%-22s %12.1f %12.1f\n", "busy per CTA mean", mm.busy_mean_us, pm.busy_mean_us);
  std::printf("%-22s %12.1f %12.1f\n", "busy per CTA max", mm.busy_max_us, pm.busy_max_us);
  std::printf("%-22s %12.3f %12.3f\n", "imbalance (max/mean)", mm.imbalance, pm.imbalance);
  const auto mb = busy_by_cta(measured), pb = busy_by_cta(predicted);
  std::printf("\n%6s %6s %14s %14s\n", "CTA", "tiles", "measured us", "predicted us");
  std::size_t shown = 0;
  for (const auto& [cta, m] : mb) {
    if (++shown > 24) {
      std::printf("   ... %zu more CTAs in trace.json\n", mb.size() - 24);
      break;
    }
    const auto it = pb.find(cta);
    std::printf("%6u %6u %14.1f %14.1f\n", cta, m.second, m.first,
                it == pb.end() ? 0.0 : it->second.first);
  }
  std::printf("\n%s\n", ok ? "run: OK" : "run: FAILED");
  return ok ? 0 : 1;
}

int bench_gpu_command(const BenchCommandOptions& options) {
  std::string device;
  int sms = 0;
  if (gpu::Status s = gpu::device_info(device, sms); !s) return fail(s.message);
  const std::vector<u32> dims = {64, 128, 256};
  const std::vector<u32> seqs = options.quick
                                    ? std::vector<u32>{1024, 8192}
                                    : std::vector<u32>{512, 1024, 2048, 4096, 8192, 16384};
  nlohmann::json rows = nlohmann::json::array();
  std::printf(
      "device: %s (%d SMs); bf16, hidden 2048, batch x seq = 16384 tokens; median of %d "
      "after %d warm-up\n",
      device.c_str(), sms, options.iterations, options.warmup);
  std::printf("%5s %6s %5s %4s %7s %-14s %5s %10s %9s %9s\n", "d", "seq", "batch", "H", "causal",
              "scheduler", "CTAs", "median ms", "TFLOP/s", "trace %");
  for (u32 d : dims) {
    for (u32 seq : seqs) {
      for (bool causal : {false, true}) {
        Workload w;
        w.padded = true;
        w.q_lens.assign(16384 / seq, seq);
        w.num_q_heads = 2048 / d;
        w.num_kv_heads = w.num_q_heads;
        w.head_dim = d;
        w.mask = causal ? Mask::Causal : Mask::None;
        w.block_m = gpu::kKernelBlockM;
        w.block_n = gpu::kKernelBlockN;
        // Dense tiles cost the same: a static stride is balanced. Causal tiles differ by up to
        // seq/BN blocks: let the queue balance them.
        w.scheduler = causal ? SchedulerKind::Queued : SchedulerKind::Tile;
        if (gpu::Status s = gpu::resident_ctas(w, w.num_ctas); !s) return fail(s.message);
        gpu::DeviceProblem dev;
        gpu::Status st = dev.create(w, /*record_trace=*/false);
        if (st) st = dev.fill_random(seq * 31 + d);
        std::vector<float> ms;
        if (st) st = dev.time(options.warmup, options.iterations, ms);
        if (!st) return fail(st.message);
        const double med = median(ms);
        const double tflops = attention_flops(w) / (med * 1e-3) / 1e12;
        // Trace overhead: the same launch recording every tile (d = 128 only, to keep it short).
        double trace_pct = NAN;
        if (d == 128) {
          gpu::DeviceProblem traced;
          st = traced.create(w, /*record_trace=*/true);
          if (st) st = traced.fill_random(seq * 31 + d);
          std::vector<float> tms;
          if (st) st = traced.time(options.warmup, options.iterations, tms);
          if (!st) return fail(st.message);
          trace_pct = (median(tms) / med - 1.0) * 100.0;
        }
        // The trace overhead is only measured at d = 128: other rows show "-", not "nan".
        char trace_col[32] = "-";
        if (!std::isnan(trace_pct)) std::snprintf(trace_col, sizeof trace_col, "%.2f", trace_pct);
        std::printf("%5u %6u %5u %4u %7s %-14s %5u %10.3f %9.1f %9s\n", d, seq, w.batch_size(),
                    w.num_q_heads, causal ? "yes" : "no", strategy_name(w).c_str(), w.num_ctas, med,
                    tflops, trace_col);
        std::fflush(stdout);
        nlohmann::json row = {{"d", d},
                              {"seq", seq},
                              {"batch", w.batch_size()},
                              {"heads", w.num_q_heads},
                              {"causal", causal},
                              {"scheduler", strategy_name(w)},
                              {"num_ctas", w.num_ctas},
                              {"median_ms", med},
                              {"flops", attention_flops(w)},
                              {"tflops", tflops}};
        if (!std::isnan(trace_pct)) row["trace_overhead_pct"] = trace_pct;
        rows.push_back(row);
      }
    }
  }
  if (!options.out_json.empty()) {
    const nlohmann::json doc = {{"device", device},
                                {"date", today_utc()},
                                {"dtype", "bf16"},
                                {"warmup", options.warmup},
                                {"iterations", options.iterations},
                                {"rows", rows}};
    try {
      sim::write_file_atomically(options.out_json, doc.dump(1) + "\n");
    } catch (const std::exception& e) {
      return fail(e.what());
    }
    std::printf("wrote %s\n", options.out_json.c_str());
  }
  return 0;
}

}  // namespace tilesched::tools
