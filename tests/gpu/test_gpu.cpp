// GPU vs simulator, tile by tile (label gpu). Skips itself (exit 77) where there is no device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/strategies.hpp"
#include "gpu_check.hpp"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

using namespace tilesched;
using gpu_test::check_workload;
using gpu_test::describe;

namespace {

// Every strategy, as `tilesched compare` runs them (the tool's one list).
const std::vector<cli::Strategy>& kStrategies = cli::strategies();
const int kStrategyCount = static_cast<int>(kStrategies.size());

Workload apply(const Workload& w, const cli::Strategy& s, u32 ctas) {
  Workload out = cli::with_strategy(w, s);
  out.num_ctas = ctas;
  return out;
}

u32 work_indices(const Workload& w) {
  return ceil_div(w.max_seq_len(), w.block_m) * w.num_q_heads * w.batch_size();
}

// Runs `given` at every tile height (BM) the kernel has for its head dim and expects GPU and
// simulator to agree each time.
void expect_ok(const Workload& given, std::uint64_t seed) {
  for (const u32 bm : gpu::kernel_block_ms(given.head_dim)) {
    Workload w = given;
    w.block_m = bm;
    const auto r = check_workload(w, seed);
    INFO(describe(w), " seed ", seed);
    for (const auto& f : r.failures) FAIL_CHECK(f);
    CHECK(r.failures.empty());
    CHECK(r.tiles > 0);
  }
}

Workload ragged_base() {
  Workload w;
  // Lengths that are not multiples of BM, one of length 1 and an empty sequence.
  w.q_lens = {130, 1, 0, 257, 128, 77};
  w.num_q_heads = 4;
  w.num_kv_heads = 1;
  w.head_dim = 64;
  w.mask = Mask::Causal;
  w.block_m = 128;
  w.block_n = 128;
  return w;
}

// Poisons the outputs, launches once and checks that every element of O and LSE was written.
void run_writes_every_output(gpu::DeviceProblem& dev) {
  REQUIRE(dev.poison_outputs().ok);
  REQUIRE(dev.run().ok);
  std::uint64_t o_unwritten = 1, lse_unwritten = 1;
  REQUIRE(dev.count_unwritten(o_unwritten, lse_unwritten).ok);
  CHECK(o_unwritten == 0);
  CHECK(lse_unwritten == 0);
}

// Captures one launch of `w` (with the simulator's schedule plan) in a CUDA graph and replays it
// three times: each replay must reset the counter and write every output once, and record the
// simulator's number of events (a splitting kind's pieces).
void replay_captured_launch(const Workload& w) {
  gpu::DeviceProblem dev;
  REQUIRE(dev.create(w, true, sim::plan_schedule(w)).ok);
  REQUIRE(dev.fill_random(5).ok);
  cudaStream_t stream{};
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  dev.set_stream(stream);
  cudaGraph_t graph{};
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  const gpu::Status s = dev.run();
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  REQUIRE(s.ok);
  cudaGraphExec_t exec{};
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    REQUIRE(dev.poison_outputs().ok);
    REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    std::uint64_t o_unwritten = 1, lse_unwritten = 1;
    REQUIRE(dev.count_unwritten(o_unwritten, lse_unwritten).ok);
    CHECK(o_unwritten == 0);
    CHECK(lse_unwritten == 0);
    std::vector<gpu::DeviceTraceEvent> raw;
    REQUIRE(dev.download_raw_trace(raw).ok);
    CHECK(raw.size() == sim::replayed_tile_count(w));  // every tile once, counter reset
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace

TEST_CASE("every strategy and CTA count on a ragged causal batch") {
  Workload base = ragged_base();
  const u32 dims[] = {64, 128, 256};
  const u32 groups[] = {1, 4, 8};
  int i = 0;
  for (const cli::Strategy& s : kStrategies) {
    for (u32 ctas : {132u, 1u, 7u, work_indices(base) + 13}) {
      Workload w = apply(base, s, ctas);
      w.head_dim = dims[i % 3];
      w.num_kv_heads = 1 + (i % 2);
      w.num_q_heads = w.num_kv_heads * groups[(i / 3) % 3];
      w.mask = (i % 4 == 3) ? Mask::None : Mask::Causal;
      ++i;
      expect_ok(w, 1000 + i);
    }
  }
}

// A split_tail problem (tiles of one cost) from any batch: its first lengths for every sequence,
// no mask, the kernel's BN.
Workload split_tail_of(Workload w) {
  w.scheduler = SchedulerKind::SplitTail;
  w.schedule = Schedule::Default;
  w.flip_prompt_idx = false;
  w.mask = Mask::None;
  const u32 q = std::max<u32>(w.q_lens[0], 1), kv = std::max<u32>(w.key_len(0), 1);
  w.q_lens.assign(w.q_lens.size(), q);
  w.kv_lens.assign(w.q_lens.size(), kv);
  w.block_n = gpu::kernel_block_n(w.head_dim);
  return w;
}

// A split_kv or stream_k problem from any batch: the kernel's BN (the pieces count its blocks)
// and split_kv's chunk of `chunk_blocks` blocks (short rows have few blocks: small chunks split
// them).
Workload split_schedule_of(Workload w, SchedulerKind kind, u32 chunk_blocks) {
  w.scheduler = kind;
  w.schedule = Schedule::Default;
  w.flip_prompt_idx = false;
  w.block_n = gpu::kernel_block_n(w.head_dim);
  w.split_kv_blocks = chunk_blocks;
  return w;
}

TEST_CASE("split_tail: the tail's tiles split over every CTA, combined by the second kernel") {
  int i = 0;
  for (u32 d : {64u, 128u, 256u})
    for (u32 ctas : {132u, 7u, 5u, 300u})  // 300: more CTAs than fit at once (waves)
      for (const auto& [batch, q, kv] :
           {std::tuple<u32, u32, u32>{2, 300, 300}, {3, 129, 700}, {1, 1000, 1000}}) {
        Workload w;
        w.padded = (i % 2) == 0;
        w.q_lens.assign(batch, q);
        w.kv_lens.assign(batch, kv);
        w.num_kv_heads = 1 + (i % 2);
        w.num_q_heads = w.num_kv_heads * ((i % 3) == 0 ? 4 : 1);
        w.head_dim = d;
        w = split_tail_of(w);
        w.num_ctas = ctas;
        w.schedule = (i % 4 == 1) ? Schedule::PromptRotate : Schedule::Default;
        ++i;
        REQUIRE_MESSAGE(w.validate().empty(), w.validate());
        expect_ok(w, 4000 + i);
      }
}

// split_kv (pieces from the counter) and stream_k (static ranges) cut tiles into pieces of their
// KV blocks; the pieces of a split tile leave their partial state and the combine kernel finishes
// the tile. Ragged and padded batches, causal (pieces below, across and above the diagonal) and
// not, paged caches, chunks of 1 to 3 blocks, and CTA counts from 1 (every tile whole for
// stream_k) to more than the device holds at once.
TEST_CASE("split_kv and stream_k: pieces of tiles combined by the second kernel") {
  int i = 0;
  for (const SchedulerKind kind : {SchedulerKind::SplitKv, SchedulerKind::StreamK})
    for (u32 d : {64u, 128u, 256u})
      for (Mask mask : {Mask::Causal, Mask::None})
        for (u32 ctas : {132u, 7u, 1u, 300u}) {
          Workload w = ragged_base();
          w.kv_lens = {400, 90, 0, 600, 128, 300};  // a cached prefix: several blocks per tile
          if (i % 3 == 1) {
            w.padded = true;
            w.q_lens = {200, 200};
            w.kv_lens = {700, 700};
          }
          w.mask = mask;
          w.head_dim = d;
          w.num_kv_heads = 1 + (i % 2);
          w.num_q_heads = w.num_kv_heads * ((i % 4) < 2 ? 4 : 1);
          w = split_schedule_of(w, kind, 1 + i % 3);
          w.num_ctas = ctas;
          if (i % 5 == 2) w.page_size = d == 256 ? 320 : 256;  // pages out of key order
          ++i;
          REQUIRE_MESSAGE(w.validate().empty(), w.validate());
          expect_ok(w, 6000 + i);
        }
}

TEST_CASE("paged caches of any page size: blocks across pages load box by box") {
  // Pages smaller than a K/V block, and pages that are not a multiple of it, against the
  // simulator's attention; keys past a sequence's pages fall in boxes the TMA zero-fills.
  int i = 0;
  for (u32 d : {64u, 128u, 256u})
    for (u32 page_size : {1u, 3u, 16u, 48u, 200u}) {
      Workload w = ragged_base();
      w.kv_lens = {400, 90, 0, 600, 128, 300};
      w.head_dim = d;
      w.num_kv_heads = 2;
      w.num_q_heads = 8;
      w.mask = i % 2 == 0 ? Mask::Causal : Mask::None;
      w.scheduler = i % 3 == 0 ? SchedulerKind::Tile
                    : i % 3 == 1 ? SchedulerKind::LptQueued
                                 : SchedulerKind::SplitKv;
      if (w.scheduler == SchedulerKind::SplitKv) w = split_schedule_of(w, w.scheduler, 1);
      w.page_size = page_size;
      w.num_ctas = 7;
      ++i;
      REQUIRE_MESSAGE(w.validate().empty(), w.validate());
      expect_ok(w, 9000 + i);
    }
}

// Decoding (SPEC §6): a tile per (sequence, KV head) whose rows are T new tokens of each query
// head of the group (T = 128, 64, 32 and 16 for groups of 1, 2, 4 and 8 at BM 128). Plain decode
// (1 token), speculative verify (up to 16) and a mixed batch (a prefill chunk of more tokens
// beside them, in one tile of 100 rows of one head at T = 128, four at T = 32); odd cache lengths,
// causal among the new tokens and not, whole tiles and split ones, a paged cache.
TEST_CASE("decode tiles: a KV head's group of query heads, 1 to 16 new tokens, mixed batches") {
  int i = 0;
  const SchedulerKind kinds[] = {SchedulerKind::Tile, SchedulerKind::Queued,
                                 SchedulerKind::LptQueued, SchedulerKind::SplitKv,
                                 SchedulerKind::StreamK};
  for (u32 d : {64u, 128u, 256u})
    for (u32 group : {1u, 2u, 4u, 8u})
      for (const SchedulerKind kind : kinds) {
        Workload w;
        w.decoding = true;
        w.head_dim = d;
        w.num_kv_heads = 2;
        w.num_q_heads = 2 * group;
        w.mask = i % 2 == 0 ? Mask::Causal : Mask::None;
        w.q_lens = {1, 16, 5, 1, 8};
        w.kv_lens = {1, 54, 97, 339, 2000};
        if (i % 4 == 3) {  // a mixed batch: a prefill chunk of 100 tokens over 400 keys
          w.q_lens.push_back(100);
          w.kv_lens.push_back(400);
        }
        w.block_n = gpu::kernel_block_n(d);
        w.scheduler = kind;
        if (splits_tiles(kind)) w = split_schedule_of(w, kind, 1 + i % 3);
        w.num_ctas = i % 3 == 0 ? 132 : 7;
        if (i % 5 == 2) w.page_size = d == 256 ? 320 : 16;
        ++i;
        REQUIRE_MESSAGE(w.validate().empty(), w.validate());
        expect_ok(w, 12000 + i);
      }
}

TEST_CASE("padded and ragged, GQA 1/4/8, d 64/128/256, causal and not") {
  int i = 0;
  for (bool padded : {true, false})
    for (u32 group : {1u, 4u, 8u})
      for (u32 d : {64u, 128u, 256u})
        for (Mask mask : {Mask::None, Mask::Causal}) {
          Workload w;
          w.padded = padded;
          w.q_lens = padded ? std::vector<u32>{200, 200} : std::vector<u32>{1, 300, 0, 129};
          if (!padded && mask == Mask::None) w.kv_lens = {5, 170, 0, 400};    // keys != queries
          if (!padded && mask == Mask::Causal) w.kv_lens = {1, 333, 0, 129};  // bottom-right
          w.num_kv_heads = 2;
          w.num_q_heads = 2 * group;
          w.head_dim = d;
          w.mask = mask;
          w.block_n = (i % 2) ? 64 : 128;
          const cli::Strategy& s = kStrategies[i % kStrategyCount];
          w = apply(w, s, (i % 3 == 0) ? 132 : 7);
          ++i;
          expect_ok(w, 2000 + i);
        }
}

// The tile kernel at d = 128 runs in clusters of two CTAs that share their K and V loads (TMA
// multicast) where every sequence has the same even number of tiles and the same keys, the mask
// is none and the CTA count is even (gpu::ClusterPolicy; by default from 8192 keys up). Each
// workload is launched with ClusterPolicy::Always (clusters wherever the rows allow) and checked
// against the simulator, then with Never, and both must give the same O and LSE bit for bit: the
// two kernels differ only in who loads which half of a block. The last two fall back to the kernel
// without clusters (odd CTA count, causal mask) and must still pass.
TEST_CASE("clusters of two CTAs share K/V loads: same results as the kernel without them") {
  struct Case {
    std::vector<u32> q, kv;
    bool padded;
    u32 heads, kv_heads, ctas;
    Schedule schedule;
    Mask mask;
  };
  const Case cases[] = {
      {{512, 512}, {}, true, 4, 4, 8, Schedule::Default, Mask::None},
      {{256, 256, 256}, {700, 700, 700}, false, 8, 2, 6, Schedule::Default, Mask::None},  // GQA
      {{1024}, {}, true, 4, 4, 132, Schedule::Default, Mask::None},  // fewer tiles than CTAs
      {{512, 512}, {}, true, 4, 2, 10, Schedule::PromptRotate, Mask::None},
      {{500, 500}, {500, 500}, false, 2, 2, 4, Schedule::Default, Mask::None},  // partial tiles
      {{512, 512}, {}, true, 4, 4, 7, Schedule::Default, Mask::None},           // odd C
      {{512, 512}, {}, true, 4, 4, 8, Schedule::Default, Mask::Causal},
  };
  int i = 0;
  for (const Case& c : cases) {
    Workload w;
    w.q_lens = c.q;
    w.kv_lens = c.kv;
    w.padded = c.padded;
    w.num_q_heads = c.heads;
    w.num_kv_heads = c.kv_heads;
    w.head_dim = 128;
    w.block_m = 128;
    w.block_n = 128;
    w.mask = c.mask;
    w.scheduler = SchedulerKind::Tile;
    w.schedule = c.schedule;
    w.num_ctas = c.ctas;
    REQUIRE(w.validate().empty());
    const std::uint64_t seed = 5000 + static_cast<std::uint64_t>(i++);
    const auto with = check_workload(w, seed, false, 0, gpu::ClusterPolicy::Always);
    const auto without = check_workload(w, seed, false, 0, gpu::ClusterPolicy::Never);
    INFO(describe(w), " seed ", seed);
    for (const auto& f : with.failures) FAIL_CHECK(f);
    for (const auto& f : without.failures) FAIL_CHECK(f);
    CHECK(with.tiles > 0);
    const bool pairs = c.mask == Mask::None && c.ctas % 2 == 0;
    CHECK(with.run.launch.cluster_ctas == (pairs ? 2u : 1u));
    CHECK(without.run.launch.cluster_ctas == 1u);
    CHECK(with.run.o_bits == without.run.o_bits);
    CHECK(with.run.lse == without.run.lse);
  }
}

TEST_CASE("planned strategies on ragged and padded batches, causal and not") {
  constexpr SchedulerKind kPlanned[] = {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                        SchedulerKind::Planned, SchedulerKind::RaggedQueued};
  int i = 0;
  for (const SchedulerKind kind : kPlanned) {
    for (bool padded : {false, true})
      for (Mask mask : {Mask::Causal, Mask::None})
        for (u32 ctas : {132u, 7u}) {
          Workload w = ragged_base();
          if (padded) {
            w.padded = true;
            w.q_lens = {300, 300, 300};
          }
          w.mask = mask;
          w.num_kv_heads = 2;
          w.num_q_heads = 8;
          w.head_dim = (i % 3 == 0) ? 64 : (i % 3 == 1) ? 128 : 256;
          w.l2_bytes = (i % 2) ? 0 : 64 * 1024;  // one section, or a few heads per section
          w.scheduler = kind;
          w.num_ctas = ctas;
          ++i;
          expect_ok(w, 3000 + i);
        }
  }
}

TEST_CASE("random problems") {
  const char* env = std::getenv("TILESCHED_TEST_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  const char* count_env = std::getenv("TILESCHED_TEST_RANDOM_COUNT");
  const int count = count_env ? std::atoi(count_env) : 200;
  fmt::print("random problems: {}, seed {} (TILESCHED_TEST_SEED to repeat)\n", count, seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  for (int i = 0; i < count; ++i) {
    Workload w;
    w.padded = pick(4) == 0;
    const int batch = 1 + pick(4);
    const bool causal = pick(2) == 0;
    w.mask = causal ? Mask::Causal : Mask::None;
    const u32 plen = 1 + pick(300);
    for (int b = 0; b < batch; ++b) {
      const u32 q = w.padded ? plen : static_cast<u32>(pick(8) == 0 ? 0 : 1 + pick(300));
      w.q_lens.push_back(q);
    }
    if (pick(3) == 0) {  // keys differ from queries (a cached prefix under causal)
      const u32 extra = static_cast<u32>(pick(200));
      for (int b = 0; b < batch; ++b) {
        const u32 q = w.q_lens[b];
        u32 k = causal || w.padded ? q + extra : static_cast<u32>(1 + pick(300));
        if (q == 0 && !w.padded) k = pick(2) ? 0 : k;
        w.kv_lens.push_back(k);
      }
    }
    // One problem in six decodes (SPEC §6): 1 to 16 new tokens per sequence over a cache of at
    // least as many keys, or one in four of those a mixed batch (a sequence of more tokens).
    if (pick(6) == 0) {
      w.decoding = true;
      w.padded = false;
      w.kv_lens.clear();
      for (u32& q : w.q_lens) {
        q = pick(4) == 0 && !w.mixed() ? 17 + pick(200) : 1 + pick(16);
        w.kv_lens.push_back(q + static_cast<u32>(pick(3) == 0 ? pick(3000) : pick(300)));
      }
    }
    const u32 groups[] = {1, 2, 4, 8};
    w.num_kv_heads = 1 + pick(2);
    w.num_q_heads = w.num_kv_heads * groups[pick(4)];
    const u32 dims[] = {64, 128, 256};
    w.head_dim = dims[pick(3)];
    w.block_n = pick(2) ? 64 : 128;
    const cli::Strategy& s = kStrategies[pick(kStrategyCount)];
    const u32 ctas_choices[] = {132u, 1u, 7u, 1u + static_cast<u32>(pick(300))};
    w = apply(w, s, ctas_choices[pick(4)]);
    // One problem in eight split_tail, and about one in eight split_kv or stream_k (chunks of 1
    // to 3 KV blocks: these rows have at most 7).
    if (pick(8) == 0)
      w = split_tail_of(w);
    else if (pick(7) == 0)
      w = split_schedule_of(w, pick(2) ? SchedulerKind::SplitKv : SchedulerKind::StreamK,
                            1 + static_cast<u32>(pick(3)));
    const std::vector<u32> block_ms = gpu::kernel_block_ms(w.head_dim);  // every tile height
    w.block_m = block_ms[pick(static_cast<int>(block_ms.size()))];
    if (splits_tiles(w.scheduler)) w.block_n = gpu::kernel_block_n(w.head_dim);
    // The kernel's K/V block: the launch's choice (recommended_block_n, BN 64 at d = 256 for
    // these short rows) or, one problem in two, any the kernel has (the splitting kinds run their
    // own).
    const std::vector<u32> block_ns = gpu::kernel_block_ns(w.head_dim);
    const u32 kernel_bn = !splits_tiles(w.scheduler) && pick(2) == 0
                              ? block_ns[pick(static_cast<int>(block_ns.size()))]
                              : 0;
    // The planned orders group heads into L2 sections: none, a few heads, or the default L2.
    const std::uint64_t l2_choices[] = {0, 64 * 1024, w.l2_bytes};
    w.l2_bytes = l2_choices[pick(3)];
    // One problem in four reads K and V from a paged cache: in pages of whole K/V blocks of the
    // launch (at d = 256 multiples of 320 suit BN 80 and 64 alike), or, one in two of those, of
    // pages smaller than a block or not a multiple of it, which the kernel loads in pieces.
    if (pick(4) == 0) {
      const u32 pages_bn128[] = {128, 256, 384}, pages_bn64[] = {64, 128, 256},
                pages_d256[] = {320, 640}, pieces[] = {1, 3, 16, 48, 200};
      w.page_size = pick(2) == 0            ? pieces[pick(5)]
                    : w.head_dim != 256     ? pages_bn128[pick(3)]
                    : kernel_bn == 64       ? pages_bn64[pick(3)]
                                            : pages_d256[pick(2)];
    }
    if (!w.validate().empty()) {
      --i;  // e.g. every sequence empty: draw again
      continue;
    }
    // Every other problem is checked on its second launch: a counter scheduler's then takes its
    // tiles from the counter the first launch left at its start (no reset kernel).
    const bool second_launch = i % 2 == 1;
    const auto r = check_workload(w, seed + i, second_launch, kernel_bn);
    INFO("random problem ", i, " of seed ", seed, (second_launch ? " (second launch)" : ""), ": ",
         describe(w, kernel_bn));
    for (const auto& f : r.failures) FAIL_CHECK(f);
    CHECK(r.failures.empty());
  }
}

using ArgsEdit = void (*)(gpu::AttentionArgs&);

// One edit of good arguments each, and a word the refusal must contain.
std::vector<std::pair<ArgsEdit, const char*>> bad_argument_cases() {
  return {
      {[](gpu::AttentionArgs& a) { a.q = nullptr; }, "Q, K and V"},
      {[](gpu::AttentionArgs& a) { a.o = nullptr; }, "O must be"},
      {[](gpu::AttentionArgs& a) { a.lse = nullptr; }, "LSE"},
      {[](gpu::AttentionArgs& a) { a.workload.head_dim = 96; }, "head dim 96"},
      {[](gpu::AttentionArgs& a) { a.workload.block_m = 64; }, "BM"},
      {[](gpu::AttentionArgs& a) {
         a.workload.head_dim = 128;
         a.workload.block_m = 192;
       },
       "BM (block_m) 192 is not supported by the GPU kernel at head dim 128: it runs tiles of 128 "
       "query rows"},
      {[](gpu::AttentionArgs& a) { a.kernel_block_n = 96; },
       "kernel_block_n 96 is not supported by the GPU kernel at head dim"},
      {[](gpu::AttentionArgs& a) {
         a.workload.head_dim = 128;
         a.kernel_block_n = 64;
       },
       "kernel_block_n 64 is not supported by the GPU kernel at head dim 128: its K/V blocks are "
       "128 keys"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::SplitTail;
         a.workload.mask = Mask::None;
         a.workload.q_lens = {200, 200};
         a.workload.head_dim = 256;
         a.workload.block_n = 80;
         a.kernel_block_n = 64;
       },
       "split_tail runs the kernel's K/V blocks of 80 keys at head dim 256"},
      {[](gpu::AttentionArgs& a) { a.q_row_offsets = nullptr; }, "row-offset"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::Queued;
         a.queue_counter = nullptr;
       },
       "counter"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::Queued;
         a.launch_done = nullptr;
         a.launch_ready = true;
       },
       "launch_ready needs launch_done"},
      {[](gpu::AttentionArgs& a) {
         a.launch_ready = true;
         a.trace.last_count = nullptr;
       },
       "launch_ready while recording needs trace.last_count"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::Queued;
         a.launch_done = a.queue_counter;
       },
       "launch_done must be a u32 of its own"},
      {[](gpu::AttentionArgs& a) { a.launch_done = a.trace.count; },
       "launch_done must be a u32 of its own"},
      {[](gpu::AttentionArgs& a) { a.trace.last_count = a.trace.count; },
       "trace.last_count must be a u32 of its own"},
      {[](gpu::AttentionArgs& a) { a.workload.ragged_mode = RaggedMode::Faithful; }, "faithful"},
      {[](gpu::AttentionArgs& a) { a.trace.capacity = 1; }, "trace buffer"},
      {[](gpu::AttentionArgs& a) {
         a.workload.num_q_heads = 3;
         a.workload.num_kv_heads = 2;
       },
       "multiple of KV heads"},
      {[](gpu::AttentionArgs& a) { a.workload.q_lens.clear(); }, "empty"},
      {[](gpu::AttentionArgs& a) {
         a.workload.q_lens = {0, 0};
       },
       "no work"},
      {[](gpu::AttentionArgs& a) { a.softmax_scale = std::nanf(""); }, "scale"},
      {[](gpu::AttentionArgs& a) {
         a.workload.decoding = true;
         a.workload.kv_lens = a.workload.q_lens;
         for (u32& keys : a.workload.kv_lens) keys += 1;  // every sequence has its cache
         a.workload.q_lens.assign(a.workload.kv_lens.size(), 1);
         a.workload.num_q_heads = 16 * a.workload.num_kv_heads;  // 16 x 16 rows: past BM 128
       },
       "decode tile holds"},
      {[](gpu::AttentionArgs& a) { a.workload.scheduler = SchedulerKind::Planned; },
       "schedule plan"},
      {[](gpu::AttentionArgs& a) { a.workload.scheduler = SchedulerKind::SplitTail; },
       "split_tail needs mask none"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::SplitTail;
         a.workload.mask = Mask::None;
         a.workload.q_lens = {200, 200};
         a.workload.block_n = 64;
       },
       "give BN (block_n) 128 at head dim 64, not 64"},
      {[](gpu::AttentionArgs& a) {
         a.workload.scheduler = SchedulerKind::SplitTail;
         a.workload.mask = Mask::None;
         a.workload.q_lens = {200, 200};
         a.split_workspace = nullptr;
       },
       "split_workspace_bytes()"},
      {[](gpu::AttentionArgs& a) {
         static const u32 order[1] = {0};  // never read: the launch is refused
         a.workload.scheduler = SchedulerKind::Lpt;
         a.plan.order = order;
         a.plan.tile_count = 1;
       },
       "plan hands out 1 tiles"},
  };
}

TEST_CASE("bad arguments return a clear Status and do not launch") {
  Workload w = ragged_base();
  gpu::DeviceProblem dev;
  REQUIRE(dev.create(w, true).ok);
  REQUIRE(dev.poison_outputs().ok);
  const gpu::AttentionArgs good = dev.args();
  REQUIRE(gpu::validate(good).ok);

  for (const auto& [edit, needle] : bad_argument_cases()) {
    gpu::AttentionArgs a = good;
    edit(a);
    const gpu::Status s = gpu::attention_forward(a);
    INFO("expected an error mentioning '", needle, "', got: ", s.message);
    CHECK_FALSE(s.ok);
    CHECK(s.message.find(needle) != std::string::npos);
  }

  // Nothing ran: the outputs still hold their poison and no trace event was recorded.
  std::uint64_t o_unwritten = 0, lse_unwritten = 0;
  REQUIRE(dev.count_unwritten(o_unwritten, lse_unwritten).ok);
  CHECK(o_unwritten == w.q_elements());
  CHECK(lse_unwritten == w.lse_elements());
  std::vector<gpu::DeviceTraceEvent> raw;
  REQUIRE(dev.download_raw_trace(raw).ok);
  CHECK(raw.empty());
}

TEST_CASE("a counter scheduler's launch is graph-capturable and replays with a fresh counter") {
  for (const SchedulerKind kind :
       {SchedulerKind::Queued, SchedulerKind::LptQueued, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    Workload w = ragged_base();
    w.scheduler = kind;
    w.num_ctas = 7;
    replay_captured_launch(w);
  }
}

TEST_CASE("a launch with launch_done leaves its words ready: no reset from the second on") {
  // The counter at its start, the trace's count moved to last_count, launch_done at 0; the tile
  // kind has no counter (its word stays as allocated, 0) but records the trace alike.
  // split_kv takes pieces from the counter, stream_k none, and both run the combine after the
  // kernel.
  for (const SchedulerKind kind :
       {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::LptQueued,
        SchedulerKind::RaggedQueued, SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    for (const u32 ctas : {7u, 300u}) {  // 300: more CTAs than tiles, some with none
      CAPTURE(std::string(to_string(kind)));
      CAPTURE(ctas);
      Workload w = ragged_base();
      w.scheduler = kind;
      w.num_ctas = ctas;
      if (splits_tiles(kind)) w = split_schedule_of(w, kind, 1);
      const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
      const SchedulePlan plan = sim::plan_schedule(w, cost);
      gpu::DeviceProblem dev;
      REQUIRE(dev.create(w, true, plan).ok);
      REQUIRE(dev.fill_random(11).ok);
      const u32 start = takes_from_counter(kind)
                            ? with_scheduler(w, SchedulerInputs{AtomicCounter{}, plan.arrays()},
                                             [](const auto& s) { return runtime::AnyScheduler(s); })
                                  .counter_start()
                            : 0u;
      for (int launch = 0; launch < 3; ++launch) {
        CAPTURE(launch);
        const gpu::AttentionArgs a = dev.args();
        CHECK(a.launch_done != nullptr);
        CHECK(a.trace.last_count != nullptr);
        CHECK(a.launch_ready == (launch > 0));  // the first launch sets the words
        run_writes_every_output(dev);
        Trace t;
        REQUIRE(dev.download_trace(t).ok);
        const std::vector<std::string> diffs = sim::schedule_differences(sim::replay(w, cost), t);
        for (const std::string& d : diffs) FAIL_CHECK(d);
        u32 words[2] = {0xdeadbeefu, 0xdeadbeefu};
        REQUIRE(cudaMemcpy(words, a.queue_counter, sizeof(words), cudaMemcpyDeviceToHost) ==
                cudaSuccess);
        CHECK(words[0] == start);
        CHECK(words[1] == 0u);
        u32 trace_words[2] = {0xdeadbeefu, 0xdeadbeefu};
        REQUIRE(cudaMemcpy(trace_words, a.trace.count, sizeof(trace_words),
                           cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK(trace_words[0] == 0u);
        CHECK(trace_words[1] == sim::replayed_tile_count(w));
        CHECK(t.events.size() == sim::replayed_tile_count(w));
      }
    }
  }
}

TEST_CASE("a split_tail launch (two kernels) is graph-capturable and replays") {
  Workload w = ragged_base();
  w.q_lens = {300, 300};
  w.kv_lens = {300, 300};
  w = split_tail_of(w);
  w.num_ctas = 7;
  REQUIRE_MESSAGE(w.validate().empty(), w.validate());
  replay_captured_launch(w);
}

TEST_CASE("a split_kv or stream_k launch (two kernels) is graph-capturable and replays") {
  for (const SchedulerKind kind : {SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    CAPTURE(std::string(to_string(kind)));
    Workload w = ragged_base();
    w.kv_lens = {400, 90, 0, 600, 128, 300};
    w = split_schedule_of(w, kind, 2);
    w.num_ctas = 7;
    REQUIRE_MESSAGE(w.validate().empty(), w.validate());
    replay_captured_launch(w);
  }
}

TEST_CASE("paired timing of traced and plain launches (the benchmark's trace cost)") {
  Workload w = ragged_base();
  gpu::DeviceProblem untraced;
  REQUIRE(untraced.create(w, false).ok);
  std::vector<float> plain, traced;
  const gpu::Status refused = untraced.time_tracing_pairs(3, 1, plain, traced);
  CHECK_FALSE(refused.ok);
  CHECK(refused.message.find("needs buffers created to record a trace") != std::string::npos);

  gpu::DeviceProblem dev;
  REQUIRE(dev.create(w, true).ok);
  REQUIRE(dev.fill_random(5).ok);
  REQUIRE(dev.time_tracing_pairs(6, 42, plain, traced).ok);
  CHECK(plain.size() == 6);
  CHECK(traced.size() == 6);
  for (const float ms : plain) CHECK(ms > 0.f);
  for (const float ms : traced) CHECK(ms > 0.f);
  // The traced launches recorded the workload's tiles; tracing is off afterwards.
  std::vector<gpu::DeviceTraceEvent> raw;
  REQUIRE(dev.download_raw_trace(raw).ok);
  CHECK(raw.size() == gpu::processed_tile_count(w));
  run_writes_every_output(dev);
}

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    fmt::print("skipped: no CUDA device ({})\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
