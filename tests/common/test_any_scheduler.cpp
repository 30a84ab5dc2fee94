// runtime::AnyScheduler must be each scheduler it holds, call for call: the kernel runs every
// strategy through it. Also checks, on the CPU, the producer -> consumer hand-off the
// warp-specialized kernel uses (SPEC §4.2): a producer advances with SchedulerSync::Producer and
// publishes the index in sidx[pipeline_idx]; a consumer with its own state, advancing with
// producer = false after the producer, must see the same tiles.
#include <doctest/doctest.h>

#include <vector>

#include "random_problem.hpp"
#include "scheduler_walk.hpp"
#include "tilesched/any_scheduler.hpp"

using namespace tilesched;
using tilesched::testing::hand_off;
using tilesched::testing::random_problem;
using tilesched::testing::RandomProblem;
using tilesched::testing::SplitMix64;
using tilesched::testing::walk_all;

namespace {

constexpr int kProblems = 3000;

}  // namespace

TEST_CASE("AnyScheduler walks exactly like the scheduler it holds") {
  SplitMix64 rng(0x5eed00a1);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const TileSummary summary = p.summary();

    const runtime::TileScheduler tile(p.mapping(), p.num_ctas,
                                      rng.chance(20) ? RaggedMode::Faithful : RaggedMode::Safe);
    const runtime::AnyScheduler any_tile(tile);
    CHECK(any_tile.kind == SchedulerKind::Tile);
    CHECK(any_tile.may_advance());
    CHECK(any_tile.grid_dim(summary).count() == tile.grid_dim(summary).count());
    CHECK(walk_all(any_tile, summary) == walk_all(tile, summary));

    const bool flip = rng.chance(50);
    const runtime::TransientScheduler transient(p.mapping(), flip);
    const runtime::AnyScheduler any_transient(transient);
    CHECK_FALSE(any_transient.may_advance());
    const GridDim g = any_transient.grid_dim(summary);
    CHECK((g.x == transient.grid_dim(summary).x && g.y == transient.grid_dim(summary).y &&
           g.z == transient.grid_dim(summary).z));
    CHECK(walk_all(any_transient, summary) == walk_all(transient, summary));

    u32 counter_a = 0, counter_b = 0;
    const runtime::QueuedTileScheduler queued_a(p.mapping(), p.num_ctas, AtomicCounter{&counter_a});
    const runtime::QueuedTileScheduler queued_b(p.mapping(), p.num_ctas, AtomicCounter{&counter_b});
    const runtime::AnyScheduler any_queued(queued_b);
    CHECK(any_queued.counter_start() == queued_a.counter_start());
    CHECK(any_tile.counter_start() == 0);
    counter_a = queued_a.counter_start();
    counter_b = any_queued.counter_start();
    CHECK(walk_all(any_queued, summary) == walk_all(queued_a, summary));
    CHECK(counter_a == counter_b);
  }
}

TEST_CASE("producer hand-off: the consumer's advance<false> sees the producer's tiles") {
  SplitMix64 rng(0x5eed00a2);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const TileSummary summary = p.summary();

    // Static schedulers: producer and consumer each step their own state and agree.
    const runtime::AnyScheduler tile(runtime::TileScheduler(p.mapping(), p.num_ctas));
    std::vector<std::vector<u32>> per_cta;
    for (u32 c = 0; c < tile.grid_dim(summary).x; ++c)
      per_cta.push_back(hand_off(tile, summary, BlockIndex{c, 0, 0}));
    CHECK(per_cta == walk_all(tile, summary));

    // Queued: only the producer fetches; the consumer reads the slot (a second fetch by the
    // consumer would skip tiles, which the counter would show).
    u32 counter = 0;
    const runtime::AnyScheduler queued(
        runtime::QueuedTileScheduler(p.mapping(), p.num_ctas, AtomicCounter{&counter}));
    counter = queued.counter_start();
    std::vector<u32> all;
    for (u32 c = 0; c < queued.grid_dim(summary).x; ++c) {
      const std::vector<u32> seq = hand_off(queued, summary, BlockIndex{c, 0, 0});
      all.insert(all.end(), seq.begin(), seq.end());
    }
    u32 valid = 0;
    for (u32 i = 0; i < p.max_idx(); ++i)
      valid += summary.unsafe_seq_info(p.params(), i).is_valid() ? 1u : 0u;
    CHECK(all.size() == valid);
    // Each CTA runs off the end exactly once: the counter stops at most C past N.
    CHECK(counter <= p.max_idx() + p.num_ctas);
  }
}
