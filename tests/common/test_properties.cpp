// Property tests over many seeded random problems (padded and ragged, tile shapes 1..256, CTAs
// 1..1024, N < C included): what every scheduler promises about which tiles are processed.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "random_problem.hpp"
#include "scheduler_walk.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/workload.hpp"

using namespace tilesched;
using tilesched::testing::flatten_sorted;
using tilesched::testing::random_problem;
using tilesched::testing::RandomProblem;
using tilesched::testing::SplitMix64;
using tilesched::testing::walk_all;
using tilesched::testing::walk_interleaved;

namespace {

constexpr int kProblems = 10000;

std::vector<u32> valid_indices(const RandomProblem& p) {
  const TileSummary summary = p.summary();
  std::vector<u32> v;
  for (u32 i = 0; i < p.max_idx(); ++i)
    if (summary.unsafe_seq_info(p.params(), i).is_valid()) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("tile scheduler (safe): every seq-valid tile exactly once, closed-form per-CTA order") {
  SplitMix64 rng(0x5eed0001);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const runtime::TileScheduler sched(p.mapping(), p.num_ctas);
    const TileSummary summary = p.summary();
    const u32 N = p.max_idx();
    REQUIRE(sched.grid_dim(summary).x == std::min(p.num_ctas, N));
    const auto per_cta = walk_all(sched, summary);
    REQUIRE(flatten_sorted(per_cta) == valid_indices(p));
    for (u32 c = 0; c < per_cta.size(); ++c) {
      std::vector<u32> closed_form;  // c, c+C, c+2C, ... below N, keeping seq-valid tiles
      for (std::uint64_t i = c; i < N; i += p.num_ctas)
        if (summary.unsafe_seq_info(p.params(), u32(i)).is_valid()) closed_form.push_back(u32(i));
      REQUIRE(per_cta[c] == closed_form);
    }
  }
}

TEST_CASE("tile scheduler (faithful): first tile checked once, then every index below N") {
  SplitMix64 rng(0x5eed0002);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const runtime::TileScheduler sched(p.mapping(), p.num_ctas, RaggedMode::Faithful);
    const TileSummary summary = p.summary();
    const u32 N = p.max_idx();
    const auto per_cta = walk_all(sched, summary);
    for (u32 c = 0; c < per_cta.size(); ++c) {
      std::vector<u32> expected;  // SPEC §5: upstream skips an invalid first tile by one step only
      std::uint64_t i = c;
      if (!summary.unsafe_seq_info(p.params(), c).is_valid()) i += p.num_ctas;
      for (; i < N; i += p.num_ctas) expected.push_back(u32(i));
      REQUIRE(per_cta[c] == expected);
    }
  }
}

TEST_CASE("queued scheduler: any fetch interleaving processes every seq-valid tile exactly once") {
  SplitMix64 rng(0x5eed0003);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const TileSummary summary = p.summary();
    u32 counter_value = 0;
    const runtime::QueuedTileScheduler sched(p.mapping(), p.num_ctas,
                                             AtomicCounter{&counter_value});
    counter_value = sched.counter_start();
    REQUIRE(sched.grid_dim(summary).x == std::min(p.num_ctas, p.max_idx()));
    const auto per_cta = walk_interleaved(sched, summary, rng);
    REQUIRE(flatten_sorted(per_cta) == valid_indices(p));
    // Fetch order consistent with the counter: after its first tile, a CTA's indices increase.
    for (const auto& s : per_cta) REQUIRE(std::is_sorted(s.begin(), s.end()));
    // The counter ends at most C past N: each CTA makes exactly one fetch that runs off the end.
    CHECK(counter_value <= p.max_idx() + p.num_ctas);
  }
}

TEST_CASE("transient scheduler: grid (T, H, B), one tile per CTA, invalid tiles return at once") {
  SplitMix64 rng(0x5eed0004);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    INFO("problem ", n, ": ", p.describe());
    const bool flip = rng.chance(50);
    const runtime::TransientScheduler sched(p.mapping(), flip);
    const TileSummary summary = p.summary();
    const GridDim grid = sched.grid_dim(summary);
    REQUIRE(grid.x == summary.max_num_prompt_tiles);
    REQUIRE(grid.y == p.num_heads);
    REQUIRE(grid.z == p.batch_size);
    const auto per_cta = walk_all(sched, summary);
    for (const auto& s : per_cta) REQUIRE(s.size() <= 1);
    // The transient scheduler ignores the schedule: compare against the DEFAULT walk.
    RandomProblem q = p;
    q.schedule = Schedule::Default;
    REQUIRE(flatten_sorted(per_cta) == valid_indices(q));
    if (flip && grid.x > 1) {  // block x = 0 gets the last (most expensive causal) tile
      u32 sidx[2];
      TileState st = sched.initial_state(sidx, summary, BlockIndex{0, 0, 0});
      CHECK(sched.get_current_work_info(summary, st).prompt_offset ==
            (summary.max_num_prompt_tiles - 1) * p.tile_shape);
    }
  }
}

TEST_CASE("PROMPT_ROTATE is a bijection on each head's tiles, reversing odd heads") {
  SplitMix64 rng(0x5eed0005);
  for (int n = 0; n < kProblems; ++n) {
    RandomProblem p = random_problem(rng);
    p.schedule = Schedule::PromptRotate;
    INFO("problem ", n, ": ", p.describe());
    const TileSummary summary = p.summary();
    const u32 T = summary.max_num_prompt_tiles;
    for (u32 b = 0; b < p.batch_size; ++b)
      for (u32 h = 0; h < p.num_heads; ++h) {
        std::set<u32> offsets;
        for (u32 t = 0; t < T; ++t) {
          const u32 idx = (b * p.num_heads + h) * T + t;
          const WorkInfo w = summary.get_current_work_info(p.params(), idx);
          REQUIRE(w.head_idx == h);
          REQUIRE(w.prompt_idx == b);
          REQUIRE(w.prompt_offset == ((h & 1u) ? T - 1 - t : t) * p.tile_shape);
          REQUIRE(summary.linear_index(p.params(), w.prompt_offset, h, b) == idx);
          offsets.insert(w.prompt_offset);
        }
        REQUIRE(offsets.size() == T);
        REQUIRE(*offsets.rbegin() == (T - 1) * p.tile_shape);
      }
  }
}

TEST_CASE("N < C: the stride stays C although only N CTAs are launched") {
  const runtime::TileScheduler sched(TileMapping{64, 2, Schedule::Default}, 132);
  const TileSummary summary = TileSummary::make(1, 200, 64);  // T=4, N=8
  CHECK(sched.grid_dim(summary).x == 8);
  const auto per_cta = walk_all(sched, summary);
  REQUIRE(per_cta.size() == 8);
  for (u32 c = 0; c < 8; ++c) CHECK(per_cta[c] == std::vector<u32>{c});
}

TEST_CASE("ragged skipping: a CTA whose tiles all start past their sequence gets none") {
  // Lengths {300, 10}, BM=128 → T=3; sequence 1 owns one valid tile per head out of three.
  const std::vector<u32> offsets = {0, 300, 310};
  const TileSummary summary = TileSummary::make(2, 300, 128, offsets.data());
  const runtime::TileScheduler sched(TileMapping{128, 1, Schedule::Default}, 6);
  const auto per_cta = walk_all(sched, summary);
  REQUIRE(per_cta.size() == 6);
  CHECK(per_cta[0] == std::vector<u32>{0});
  CHECK(per_cta[3] == std::vector<u32>{3});
  CHECK(per_cta[4].empty());  // index 4: sequence 1, offset 128 ≥ 10
  CHECK(per_cta[5].empty());
  // Faithful mode processes index 4 and 5 anyway: upstream would write BM rows for them.
  const runtime::TileScheduler faithful(TileMapping{128, 1, Schedule::Default}, 6,
                                        RaggedMode::Faithful);
  const auto upstream = walk_all(faithful, summary);
  CHECK(upstream[4] == std::vector<u32>{});  // first tile invalid: one step to 10 ≥ N=6, done
  const TileSummary one_cta = summary;
  const runtime::TileScheduler faithful1(TileMapping{128, 1, Schedule::Default}, 1,
                                         RaggedMode::Faithful);
  CHECK(walk_all(faithful1, one_cta)[0] == std::vector<u32>{0, 1, 2, 3, 4, 5});
  const SeqInfo past_end = one_cta.unsafe_seq_info(faithful1.mapping, 4);
  CHECK_FALSE(past_end.is_valid());
  CHECK(faithful_query_rows(past_end, 128) == 128);  // the wrap SPEC §5 describes
  CHECK(tile_rows(one_cta.query_layout(), past_end, 128).query_rows == 0);
}

TEST_CASE("decoding: the queued scheduler takes every index and leaves its fetch loop") {
  // SPEC §6: tile_shape 1, T = 1, H = KV heads. Upstream never left the loop; we must.
  const u32 batch = 5, kv_heads = 3;
  const TileSummary summary = TileSummary::make(batch, 1, 1);
  u32 counter_value = 0;
  const QueuedTileScheduler<1, 3, true, 4> sched(AtomicCounter{&counter_value});
  counter_value = sched.counter_start();
  CHECK(summary.max_idx(kv_heads) == 15);
  std::vector<u32> seen;
  const GridDim grid = sched.grid_dim(summary);
  std::vector<TileState> st;
  std::vector<std::vector<u32>> slots(grid.x, std::vector<u32>(2));
  for (u32 c = 0; c < grid.x; ++c) {
    st.push_back(sched.initial_state(slots[c].data(), summary, BlockIndex{c, 0, 0}));
    if (sched.first_work(summary, st[c])) seen.push_back(st[c].idx);
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (u32 c = 0; c < grid.x; ++c)
      if (st[c].is_valid() && sched.advance(summary, st[c], 0)) {
        seen.push_back(st[c].idx);
        progress = true;
      }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<u32> all(15);
  for (u32 i = 0; i < 15; ++i) all[i] = i;
  CHECK(seen == all);
}

TEST_CASE("mixed batch: the queued scheduler skips the indices past a decode sequence's tile") {
  // SPEC §6: 2 query heads per KV head at BM 128 make tiles of 64 new tokens; sequence 1 has 140,
  // so T = 3 tiles; the decode sequences own only their first tile per KV head, and the fetch
  // loop must skip the other two.
  Workload w;
  w.decoding = true;
  w.scheduler = SchedulerKind::Queued;
  w.q_lens = {1, 140, 3};
  w.kv_lens = {50, 900, 10};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.num_ctas = 4;
  REQUIRE(w.validate().empty());
  REQUIRE(w.mixed());
  const std::vector<u32> offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(offsets.data());
  u32 counter_value = 0;
  const runtime::QueuedTileScheduler sched(w.mapping(), w.num_ctas, AtomicCounter{&counter_value},
                                           w.decode_only());
  counter_value = sched.counter_start();
  const u32 n = summary.max_idx(w.scheduled_heads());
  CHECK(n == 3 * 2 * 3);
  std::vector<u32> valid;
  for (u32 i = 0; i < n; ++i)
    if (summary.unsafe_seq_info(sched.mapping, i).is_valid()) valid.push_back(i);
  CHECK(valid.size() == w.valid_tile_count());
  CHECK(flatten_sorted(walk_all(sched, summary)) == valid);
}
