// Simulator benchmarks (docs/sim-performance.md):
//   Replay/*     ~1M-tile replays: 64 sequences x 32768 tokens x 64 heads, BM = 128 gives
//                T * H * B = 256 * 64 * 64 = 1,048,576 work tiles.
//   Attention/*  tiled Eigen attention, GFLOP/s, and its ratio to Eigen's own fp32 GEMM rate
//                measured in the same run (counter gemm_ratio, single thread against single
//                thread).
//   EigenGemm/*  that GEMM rate on its own, for the table.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <chrono>
#include <ctime>

#include "tilesched/sim/sim.hpp"

using namespace tilesched;

namespace {

Workload million_tiles(SchedulerKind kind) {
  Workload w;
  w.q_lens.assign(64, 32768);
  w.num_q_heads = 64;
  w.num_kv_heads = 8;
  w.head_dim = 128;
  w.mask = Mask::Causal;
  w.scheduler = kind;
  w.num_ctas = 132;
  return w;
}

// Same tile count, ragged: every sequence's length differs, about a third of the indices start
// past their sequence and are skipped.
Workload million_tiles_ragged(SchedulerKind kind) {
  Workload w = million_tiles(kind);
  for (u32 b = 0; b < 64; ++b) w.q_lens[b] = b == 0 ? 32768 : 4000 + (b * 7919u) % 28000;
  return w;
}

void replay_bench(benchmark::State& state, const Workload& w) {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  std::size_t tiles = 0;
  for (auto _ : state) {
    const Trace t = sim::replay(w, cost);
    tiles = t.events.size();
    benchmark::DoNotOptimize(t.events.data());
  }
  state.counters["tiles"] = double(tiles);
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(tiles));
}

void BM_ReplayStatic(benchmark::State& s) {
  replay_bench(s, million_tiles(SchedulerKind::Tile));
}
void BM_ReplayQueued(benchmark::State& s) {
  replay_bench(s, million_tiles(SchedulerKind::Queued));
}
void BM_ReplayTransient(benchmark::State& s) {
  replay_bench(s, million_tiles(SchedulerKind::Transient));
}
void BM_ReplayStaticRagged(benchmark::State& s) {
  replay_bench(s, million_tiles_ragged(SchedulerKind::Tile));
}
void BM_ReplayQueuedRagged(benchmark::State& s) {
  replay_bench(s, million_tiles_ragged(SchedulerKind::Queued));
}
BENCHMARK(BM_ReplayStatic)->Name("Replay/static_1M")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayQueued)->Name("Replay/queued_1M")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayTransient)->Name("Replay/transient_1M")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayStaticRagged)->Name("Replay/static_ragged")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayQueuedRagged)->Name("Replay/queued_ragged")->Unit(benchmark::kMillisecond);

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// CPU seconds of this thread or of the whole process. The CI-class VM is shared, so wall-clock
// rates swing with other jobs; CPU time measures the code. Attention and GEMM use the same clock.
double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Eigen's fp32 GEMM rate (GFLOP/s per CPU second, one thread) for n x n x n, over ~0.3 s.
double gemm_gflops(int n) {
  const MatrixRM a = MatrixRM::Random(n, n), b = MatrixRM::Random(n, n);
  MatrixRM c(n, n);
  c.noalias() = a * b;  // warm up
  const double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  int reps = 0;
  double seconds = 0;
  do {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    ++reps;
    seconds = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
  } while (seconds < 0.3);
  return 2.0 * n * n * n * reps / seconds / 1e9;
}

// The reference rate attention is compared with: the better of a large GEMM and the 128-wide
// block GEMM attention is made of (measured once per run).
double reference_gemm_gflops() {
  static const double rate = std::max(gemm_gflops(1024), gemm_gflops(128));
  return rate;
}

void BM_EigenGemm(benchmark::State& state) {
  const int n = int(state.range(0));
  const MatrixRM a = MatrixRM::Random(n, n), b = MatrixRM::Random(n, n);
  MatrixRM c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  // A rate counter divides by the benchmark's CPU time (this thread).
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EigenGemm)->Name("EigenGemm/fp32")->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond);

// FLOPs of a forward pass as docs/spec.md §9 counts them: 4 * d * H * (query, key) pairs the mask
// leaves visible.
double useful_flops(const Workload& w) {
  double pairs = 0;
  for (u32 b = 0; b < w.batch_size(); ++b) {
    const double q = w.q_lens[b], k = w.key_len(b);
    pairs += w.mask == Mask::Causal ? q * k - q * (q - 1) / 2 : q * k;
  }
  return 4.0 * w.head_dim * w.num_q_heads * pairs;
}

// FLOPs the tiles actually execute: whole BN-wide blocks, masked parts included.
double executed_flops(const Workload& w, const Trace& t) {
  double f = 0;
  for (const TraceEvent& e : t.events)
    f += 4.0 * w.head_dim * double(e.query_rows) * double(e.kv_blocks) * w.block_n;
  return f;
}

Workload attention_workload(Mask mask) {
  Workload w;
  w.q_lens = {1024, 500, 768};  // ragged, not all multiples of 128
  w.num_q_heads = 8;
  w.num_kv_heads = 2;
  w.head_dim = 128;
  w.mask = mask;
  return w;
}

// Counters (per CPU second of all threads, so comparable with the one-thread GEMM rate):
//   GFLOP/s       useful FLOPs (docs/spec.md §9) per CPU second
//   exec_GFLOP/s  FLOPs the BN-wide blocks execute per CPU second
//   gemm_GFLOP/s  Eigen's single-thread GEMM rate measured in this run
//   gemm_ratio    exec_GFLOP/s / gemm_GFLOP/s: how close the attention loop runs to GEMM speed
//   wall_GFLOP/s  useful FLOPs per wall-clock second (what the threads buy, load permitting)
void attention_bench(benchmark::State& state, Mask mask) {
  const unsigned threads = unsigned(state.range(0));
  const Workload w = attention_workload(mask);
  const sim::AttentionInputs in = sim::make_inputs(w, 1);
  const Trace t = sim::replay(w);
  const double gemm = reference_gemm_gflops();
  double cpu = 0;
  double wall = 0;
  for (auto _ : state) {
    const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const auto w0 = std::chrono::steady_clock::now();
    const sim::AttentionResult r = sim::tiled_attention(w, in, t, 0.f, threads);
    benchmark::DoNotOptimize(r.o.data());
    cpu += cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  }
  const double iters = double(state.iterations());
  const double useful = useful_flops(w) * iters / 1e9,
               executed = executed_flops(w, t) * iters / 1e9;
  state.counters["GFLOP/s"] = useful / cpu;
  state.counters["exec_GFLOP/s"] = executed / cpu;
  state.counters["gemm_GFLOP/s"] = gemm;
  state.counters["gemm_ratio"] = executed / cpu / gemm;
  state.counters["wall_GFLOP/s"] = useful / wall;
}

void BM_AttentionCausal(benchmark::State& s) {
  attention_bench(s, Mask::Causal);
}
void BM_AttentionDense(benchmark::State& s) {
  attention_bench(s, Mask::None);
}
BENCHMARK(BM_AttentionCausal)
    ->Name("Attention/causal_d128")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_AttentionDense)
    ->Name("Attention/dense_d128")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
