// Host-only checks of the GPU half's API (label cpu: no device needed, so CI runs them where
// test_gpu skips): the kernel's tile shapes, the rules that pick them, validate()'s refusals of a
// K/V block the kernel does not run, the launch plan (which kernel each scheduler kind runs), and
// what split_kv and stream_k need (their BN, workspace and plan).
// validate() and plan_launch never touch the buffers they are given, so aligned placeholder
// addresses stand in for device memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/schedule_plan.hpp"

using namespace tilesched;

namespace {

// A padded batch of two sequences of `seq` rows under `mask`, and what a rule of the kernel's tile
// shapes (recommended_block_m, recommended_block_n) must give for it.
struct PaddedCase {
  u32 seq;
  Mask mask;
  u32 expected;
};
void check_padded_cases(Workload w, std::initializer_list<PaddedCase> cases,
                        u32 (*rule)(const Workload&)) {
  w.padded = true;
  for (const PaddedCase& c : cases) {
    w.q_lens.assign(2, c.seq);
    w.mask = c.mask;
    CAPTURE(c.seq);
    CAPTURE(to_string(c.mask));
    CHECK(rule(w) == c.expected);
  }
}

}  // namespace

TEST_CASE("the recommended BM: 192 at d = 64 once a query row sees 1536 keys on average") {
  Workload w;
  w.head_dim = 64;
  check_padded_cases(w,
                     {{1024, Mask::None, 128},
                      {2048, Mask::None, 192},
                      {2048, Mask::Causal, 128},   // 1024.5 keys per row
                      {4096, Mask::Causal, 192}},  // 2048.5
                     gpu::recommended_block_m);
  // Short queries against long caches: a row sees 9393 keys on average.
  w.padded = false;
  w.q_lens = {400, 300};
  w.kv_lens = {10000, 9000};
  w.mask = Mask::Causal;
  CHECK(gpu::recommended_block_m(w) == 192);
  w.kv_lens = {400, 300};  // the same queries alone: 179 keys per row on average
  CHECK(gpu::recommended_block_m(w) == 128);
  w.head_dim = 128;
  CHECK(gpu::recommended_block_m(w) == 128);
  w.head_dim = 96;
  CHECK(gpu::recommended_block_m(w) == 0);
}

TEST_CASE("the recommended BN: 64 at d = 256 while a query row sees fewer than 1024 keys") {
  Workload w;
  w.head_dim = 256;
  check_padded_cases(w,
                     {{512, Mask::None, 64},
                      {512, Mask::Causal, 64},   // 256.5 keys per row
                      {1024, Mask::Causal, 64},  // 512.5
                      {1024, Mask::None, 80},    // 1024
                      {2048, Mask::Causal, 80},  // 1024.5
                      {16384, Mask::None, 80}},
                     gpu::recommended_block_n);
  CHECK(gpu::kernel_block_ns(256) == std::vector<u32>{80, 64});
  // The splitting kinds' pieces count the kernel's blocks: always kernel_block_n's.
  w.q_lens.assign(2, 512);
  for (const SchedulerKind kind :
       {SchedulerKind::SplitTail, SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    w.scheduler = kind;
    CHECK(gpu::recommended_block_n(w) == gpu::kernel_block_n(256));
  }
  w.scheduler = SchedulerKind::Tile;
  // Short queries against a long cache: a row sees about 9000 keys.
  w.padded = false;
  w.q_lens = {400, 300};
  w.kv_lens = {10000, 9000};
  w.mask = Mask::Causal;
  CHECK(gpu::recommended_block_n(w) == 80);
  for (u32 d : {64u, 128u}) {
    w.head_dim = d;
    CHECK(gpu::recommended_block_n(w) == 128);
    CHECK(gpu::kernel_block_ns(d) == std::vector<u32>{128});
  }
  w.head_dim = 96;
  CHECK(gpu::recommended_block_n(w) == 0);
  CHECK(gpu::kernel_block_ns(96).empty());
}

TEST_CASE("the kernel's shapes per head dim") {
  CHECK(gpu::kernel_block_ms(64) == std::vector<u32>{128, 192});
  CHECK(gpu::kernel_block_ms(128) == std::vector<u32>{128});
  CHECK(gpu::kernel_block_ms(256) == std::vector<u32>{128});
  CHECK(gpu::kernel_block_ms(96).empty());
  CHECK(gpu::kernel_block_n(256) == 80);
  CHECK(gpu::kernel_block_n(128) == 128);
  for (const u32 d : {64u, 128u, 256u}) CHECK(gpu::kernel_block_n(d) == split_block_n(d));
}

TEST_CASE("validate: the kernel's K/V block, given or the launch's own") {
  // A ragged causal batch at d = 256 on placeholder device addresses.
  std::vector<u32> placeholder(64);
  void* addr = placeholder.data();
  gpu::AttentionArgs a;
  a.workload.q_lens = {300, 77};
  a.workload.num_q_heads = 4;
  a.workload.num_kv_heads = 2;
  a.workload.head_dim = 256;
  a.workload.mask = Mask::Causal;
  a.workload.block_m = 128;
  a.workload.scheduler = SchedulerKind::Tile;
  a.q = a.k = a.v = a.o = addr;
  a.lse = static_cast<float*>(addr);
  a.q_row_offsets = a.kv_row_offsets = placeholder.data();
  REQUIRE(gpu::validate(a).ok);  // 0: recommended_block_n's
  for (const u32 bn : {64u, 80u}) {
    a.kernel_block_n = bn;
    CAPTURE(bn);
    CHECK(gpu::validate(a).ok);
  }
  a.kernel_block_n = 96;
  gpu::Status s = gpu::validate(a);
  CHECK_FALSE(s.ok);
  CHECK(s.message ==
        "kernel_block_n 96 is not supported by the GPU kernel at head dim 256: its K/V blocks are "
        "80 or 64 keys");
  a.workload.head_dim = 128;
  a.kernel_block_n = 64;
  s = gpu::validate(a);
  CHECK_FALSE(s.ok);
  CHECK(s.message ==
        "kernel_block_n 64 is not supported by the GPU kernel at head dim 128: its K/V blocks are "
        "128 keys");
  // split_tail runs kernel_block_n's blocks only (its pieces count them).
  a.workload.head_dim = 256;
  a.workload.q_lens = {300, 300};
  a.workload.mask = Mask::None;
  a.workload.block_n = 80;
  a.workload.scheduler = SchedulerKind::SplitTail;
  a.split_workspace = addr;
  s = gpu::validate(a);
  INFO(s.message);
  CHECK_FALSE(s.ok);
  CHECK(s.message.find("split_tail runs the kernel's K/V blocks of 80 keys at head dim 256") !=
        std::string::npos);
  a.kernel_block_n = 0;
  CHECK(gpu::recommended_block_n(a.workload) == 80);
}

namespace {

// Arguments over placeholder device addresses (plan_launch reads none of them) for a ragged batch
// at head dim `d` whose sequences have `seq` rows each, under `kind`.
struct PlaceholderArgs {
  std::vector<u32> memory = std::vector<u32>(64);
  gpu::AttentionArgs args;
  PlaceholderArgs(u32 d, u32 seq, SchedulerKind kind, Mask mask) {
    void* addr = memory.data();
    Workload& w = args.workload;
    w.q_lens = {seq, seq};
    w.num_q_heads = 4;
    w.num_kv_heads = 2;
    w.head_dim = d;
    w.mask = mask;
    w.block_m = 128;
    w.scheduler = kind;
    w.num_ctas = 8;
    args.q = args.k = args.v = args.o = addr;
    args.lse = static_cast<float*>(addr);
    args.q_row_offsets = args.kv_row_offsets = memory.data();
    args.queue_counter = memory.data() + 1;
    if (needs_schedule_plan(kind)) {
      args.plan = PlanArrays{static_cast<u32>(w.valid_tile_count()), memory.data(),
                             memory.data(), memory.data(), memory.data()};
    }
  }
};

gpu::LaunchPlan planned(const PlaceholderArgs& p) {
  gpu::LaunchPlan plan;
  const gpu::Status s = gpu::plan_launch(p.args, plan);
  INFO(s.message);
  REQUIRE(s.ok);
  return plan;
}

}  // namespace

TEST_CASE("plan_launch: the kernel each scheduler kind runs, and the plan's grid") {
  using gpu::KernelVariant;
  struct Case {
    u32 d, seq;
    SchedulerKind kind;
    Mask mask;
    KernelVariant variant;
    const char* config;
    bool kind_kernel;
  };
  const Case cases[] = {
      {128, 300, SchedulerKind::Tile, Mask::None, KernelVariant::Dense, "D128", true},
      {128, 300, SchedulerKind::Queued, Mask::Causal, KernelVariant::Queued, "D128Queued", true},
      {128, 2048, SchedulerKind::Queued, Mask::Causal, KernelVariant::Queued, "D128Queued", true},
      // lpt_queued takes the queued kernel's configuration on short rows only.
      {128, 300, SchedulerKind::LptQueued, Mask::Causal, KernelVariant::Queued, "D128Queued", true},
      {128, 2048, SchedulerKind::LptQueued, Mask::Causal, KernelVariant::Causal, "D128", true},
      {128, 300, SchedulerKind::Transient, Mask::Causal, KernelVariant::Dense, "D128", false},
      {128, 300, SchedulerKind::Planned, Mask::Causal, KernelVariant::Dense, "D128", false},
      {64, 300, SchedulerKind::LptQueued, Mask::Causal, KernelVariant::Queued, "D64Causal", true},
      {64, 300, SchedulerKind::Tile, Mask::Causal, KernelVariant::Dense, "D64", true},
      {256, 2048, SchedulerKind::Queued, Mask::Causal, KernelVariant::Queued, "D256Causal", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.d);
    CAPTURE(c.seq);
    CAPTURE(to_string(c.kind));
    const PlaceholderArgs p(c.d, c.seq, c.kind, c.mask);
    const gpu::LaunchPlan plan = planned(p);
    CHECK(plan.variant == c.variant);
    CHECK(std::string(plan.config) == c.config);
    CHECK(plan.kind_kernel == c.kind_kernel);
    CHECK(plan.cluster_ctas == 1u);
    CHECK(plan.threads == 384u);
    CHECK(plan.shared_bytes > 0u);
    CHECK(plan.scheduler.kind == c.kind);
    // C = 8 persistent CTAs; the transient kind's grid is (tiles, heads, sequences).
    CHECK(plan.grid.count() == (c.kind == SchedulerKind::Transient ? 3u * 4 * 2 : 8u));
    CHECK(plan.counter_start == (takes_from_counter(c.kind) ? 8u : 0u));
  }
}

TEST_CASE("plan_launch: what a plan says of itself, and a plan refused for other arguments") {
  const PlaceholderArgs p(128, 300, SchedulerKind::Queued, Mask::Causal);
  const gpu::LaunchPlan plan = planned(p);
  CHECK(plan.describe() ==
        "kernel: d 128, BM 128, BN 128, configuration D128Queued (queued), queued's own kernel; 384 "
        "threads, " +
            std::to_string(plan.shared_bytes) +
            " bytes of shared memory per CTA\ngrid: 8 x 1 x 1 CTAs, counter from 8");
  // Dense rows of one length from 8192 keys could run in clusters; Never keeps them off without
  // asking the device.
  PlaceholderArgs dense(128, 8192, SchedulerKind::Tile, Mask::None);
  dense.args.clusters = gpu::ClusterPolicy::Never;
  CHECK(planned(dense).cluster_ctas == 1u);
  // A plan is for the arguments' workload and scheduler words.
  PlaceholderArgs other = p;
  other.args.queue_counter = other.memory.data() + 2;
  gpu::Status s = gpu::launch_planned(other.args, plan);
  CHECK_FALSE(s.ok);
  CHECK(s.message ==
        "the launch plan was made for other arguments (another workload, counter or row offsets): "
        "make it again with plan_launch");
  s = gpu::launch_planned(p.args, gpu::LaunchPlan{});
  CHECK_FALSE(s.ok);
  CHECK(s.message == "the launch plan is empty (plan_launch makes one)");
  // The launch of a plan whose owner keeps the workload skips that comparison, not the checks of
  // the buffers.
  s = gpu::launch_planned_same_workload(p.args, gpu::LaunchPlan{});
  CHECK(s.message == "the launch plan is empty (plan_launch makes one)");
  PlaceholderArgs no_q = p;
  no_q.args.q = nullptr;
  s = gpu::launch_planned_same_workload(no_q.args, plan);
  CHECK_FALSE(s.ok);
  CHECK(s.message == "Q, K and V must be device pointers (one of them is null)");
}

TEST_CASE("validate: a paged KV cache's page size, table and clusters") {
  PlaceholderArgs p(128, 300, SchedulerKind::Tile, Mask::Causal);
  gpu::AttentionArgs& a = p.args;
  const std::int32_t* table = reinterpret_cast<const std::int32_t*>(p.memory.data() + 2);
  a.workload.page_size = 256;  // 300 keys: two pages per sequence
  gpu::Status s = gpu::validate(a);
  CHECK(s.message == "a paged KV cache needs a device page table (pages.page_table is null)");
  a.pages = gpu::KvPages{table, 2, 4};
  s = gpu::validate(a);
  INFO(s.message);
  CHECK(s.ok);
  a.pages.max_pages_per_seq = 1;
  CHECK(gpu::validate(a).message ==
        "the page table's rows hold 1 pages (pages.max_pages_per_seq) but a sequence of 300 keys "
        "needs 2 pages of 256");
  a.pages.max_pages_per_seq = 2;
  a.pages.num_pages = 0;
  CHECK(gpu::validate(a).message == "a paged KV cache needs at least one page");
  a.pages.num_pages = 4;
  // Pages of any size: a block across pages is loaded in pieces (sm90/problem.cuh, page_rows).
  for (u32 page_size : {1u, 16u, 48u, 200u}) {
    a.workload.page_size = page_size;
    a.pages.max_pages_per_seq = a.workload.max_pages_per_seq();
    CHECK(gpu::validate(a).ok);
  }
  a.workload.page_size = 128;
  a.pages.max_pages_per_seq = 3;
  a.clusters = gpu::ClusterPolicy::Always;
  CHECK(gpu::validate(a).message.find("a paged KV cache runs without them") != std::string::npos);
  a.clusters = gpu::ClusterPolicy::Auto;
  CHECK(gpu::validate(a).ok);
  a.workload.page_size = 0;
  CHECK(gpu::validate(a).message.find("page_table is given but the workload's page_size is 0") !=
        std::string::npos);
  // At d = 256 the page decides BN where only one of 80 and 64 divides it.
  Workload w;
  w.head_dim = 256;
  w.q_lens = {4096};
  w.mask = Mask::None;
  CHECK(gpu::recommended_block_n(w) == 80);
  w.page_size = 128;
  CHECK(gpu::recommended_block_n(w) == 64);
  w.page_size = 320;
  CHECK(gpu::recommended_block_n(w) == 80);
  w.q_lens = {300};
  CHECK(gpu::recommended_block_n(w) == 64);
  w.page_size = 400;
  CHECK(gpu::recommended_block_n(w) == 80);
}

TEST_CASE("split_kv and stream_k: the kernel's K/V blocks, their workspace and plan, the launch") {
  // A ragged causal batch at d = 256 of a few KV blocks per tile, on placeholder addresses: the
  // plan's arrays are host copies here, which validate and plan_launch never read.
  std::vector<u32> memory(64);
  for (const SchedulerKind kind : {SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    CAPTURE(to_string(kind));
    gpu::AttentionArgs a;
    Workload& w = a.workload;
    w.q_lens = {300, 77};
    w.kv_lens = {900, 500};
    w.num_q_heads = 4;
    w.num_kv_heads = 2;
    w.head_dim = 256;
    w.mask = Mask::Causal;
    w.block_m = 128;
    w.block_n = gpu::kernel_block_n(256);
    w.scheduler = kind;
    w.split_kv_blocks = 2;
    w.num_ctas = 8;
    REQUIRE(w.validate().empty());
    const SchedulePlan plan =
        build_schedule_plan(w, [](const TileCost& c) { return 1.0 + c.kv_blocks; });
    a.q = a.k = a.v = a.o = memory.data();
    a.lse = reinterpret_cast<float*>(memory.data());
    a.q_row_offsets = a.kv_row_offsets = memory.data();
    a.queue_counter = memory.data() + 1;
    a.plan = plan.arrays();
    a.split_workspace = memory.data() + 4;
    CHECK(gpu::check_kernel_support(w).ok);
    CHECK(gpu::recommended_block_n(w) == gpu::kernel_block_n(256));
    // The workspace and the trace from the workload alone: split_kv's exactly, stream_k's for any
    // plan of it.
    const runtime::AnyScheduler host =
        with_scheduler(w, SchedulerInputs{AtomicCounter{}, plan.arrays()},
                       [](const auto& s) { return runtime::AnyScheduler(s); });
    const detail::SplitScheduler& split =
        kind == SchedulerKind::SplitKv ? static_cast<const detail::SplitScheduler&>(host.split_kv)
                                       : host.stream_k;
    REQUIRE(split.split_tile_count() > 0);
    const gpu::SplitWorkspaceLayout layout = gpu::split_workspace_layout(w);
    CHECK(layout.slot_floats == 2u * 128 * (256 / 2 + 4));
    if (kind == SchedulerKind::SplitKv) {
      CHECK(layout.slots == split.piece_slots());
      CHECK(gpu::processed_tile_count(w) == split.work_items());
    } else {
      CHECK(layout.slots >= split.piece_slots());
      CHECK(gpu::processed_tile_count(w) >= split.work_items());
    }

    gpu::LaunchPlan launch;
    gpu::Status s = gpu::plan_launch(a, launch);
    INFO(s.message);
    REQUIRE(s.ok);
    CHECK(launch.kind_kernel);
    CHECK(launch.variant == gpu::KernelVariant::Dense);
    CHECK(std::string(launch.config) == "D256");
    CHECK(launch.block_n == 80u);
    CHECK(launch.scheduler.kind == kind);
    if (kind == SchedulerKind::SplitKv) {
      CHECK(launch.grid.x == std::min<u32>(8, a.plan.split.piece_count));
      CHECK(launch.counter_start == 8u);
    } else {
      CHECK(launch.grid.x == a.plan.split.ranges);
      CHECK(launch.counter_start == 0u);
    }

    const auto refused = [&](void (*edit)(gpu::AttentionArgs&), const std::string& needle) {
      gpu::AttentionArgs bad = a;
      edit(bad);
      const gpu::Status r = gpu::validate(bad);
      INFO("expected an error mentioning '", needle, "', got: ", r.message);
      CHECK_FALSE(r.ok);
      CHECK(r.message.find(needle) != std::string::npos);
    };
    const std::string name = to_string(kind);
    refused([](gpu::AttentionArgs& b) { b.kernel_block_n = 64; },
            name + " runs the kernel's K/V blocks of 80 keys at head dim 256");
    refused([](gpu::AttentionArgs& b) { b.split_workspace = nullptr; },
            name + " needs a 16-byte aligned device workspace of split_workspace_bytes() = " +
                std::to_string(gpu::split_workspace_bytes(w)) + " bytes (split_workspace is null)");
    refused([](gpu::AttentionArgs& b) { b.plan = {}; }, "schedule plan");
    if (kind == SchedulerKind::SplitKv) {
      refused([](gpu::AttentionArgs& b) { b.queue_counter = nullptr; }, "counter");
      refused([](gpu::AttentionArgs& b) { b.plan.split.piece_count += 1; },
              "the split_kv scheduler's plan hands out");
    } else {
      refused([](gpu::AttentionArgs& b) { b.plan.split.ranges -= 1; },
              "the stream_k scheduler's plan cuts");
    }
    // The workload's BN counts the pieces' blocks: it must be the kernel's.
    refused([](gpu::AttentionArgs& b) { b.workload.block_n = 128; },
            name +
                " splits tiles in the kernel's KV blocks: give BN (block_n) 80 at head dim "
                "256, not 128");
  }
}
